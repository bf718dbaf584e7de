"""Thinking blocks bound to what came before them: what an edit of the history may do around them.

What the provider says (Anthropic, 2026; read for this module):

- "Prefix checks on thinking blocks"
  (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks):
  every request that sends thinking blocks back to a model with *preserved thinking* (the page
  lists claude-fable-5-2, claude-mythos-5-2, claude-fable-5-1, claude-mythos-5-1,
  claude-opus-5-5, claude-sonnet-5-5 and claude-haiku-5-5: the price table's
  ``bound_thinking`` rows) gets a prefix check. A block's prefix is ``system``, ``tools`` and
  every message before it; the check fails when any of it changed after the model wrote the
  block, or when a thinking block between others was left out or moved. A change invalidates
  the thinking already after it, and only that: thinking before it, and thinking the model
  writes afterwards, stay valid. Code that trims, folds or summarizes earlier turns is told to
  let the API write the summary, or to remove the thinking from the turns it keeps.
- "Preserved thinking" (same folder, its index page) and "What's new in Claude Fable 5.2"
  (``models/fable-5-2/whats-new-fable-5-2``): the prefix check is enforced by default on
  accounts created from 2026-08-31 00:00 UTC on; on older accounts only for a request that sets
  ``thinking.block_binding.prefix_mismatch_behavior``; and on Fable 5.2 and Mythos 5.2 (and
  Mythos 5.1 on the platforms that page lists) on every account. Enforced, a failed check is a
  400 ("Invalid `signature` in `thinking` block. The block is bound to a different
  conversation": "Fix a thinking block bound to a different conversation",
  ``fix-bound-to-a-different-conversation``), unless the request sets ``"drop_block"`` (beta
  header ``thinking-binding-controls-2026-08-01``): the API then drops that block and every
  later one, silently. So the same edit can pass on one account and fail on another. Sending
  the request again cannot help. hdcontext never needs the drop (it costs the model its
  reasoning), and never sets it: the agent's request is its own.
- On every thinking model, while the model's latest message has tool calls the request answers
  (its tool use goes on), that message's thinking blocks must come back exactly as they came.

So, as hdcontext applies it (``Session``, at each compaction). Whether the session's model
binds its thinking is its price-table row's ``bound_thinking`` (``prices.binds_thinking``): a
Claude name the table lacks, or a session that never named its model, takes Anthropic's
fallback row, which binds (being wrong that way costs savings; the other way, refused requests).
A thinking block is any ``ThinkingBlock`` of an ``ai`` entry, signed, redacted or neither.

1. **The latest turn is never touched while its tool use goes on.** The model's latest message
   (``latest_turn``: the last run of ``ai`` entries of the working view) continues as long as it
   called a tool: the model has not answered without one yet, so the next request answers it.
   Until then no edit that touches it applies (any model): it waits, as a ``free_only`` edit
   waits in ``cache/prompt_cache.py``. And for a model with bound thinking, when that message
   holds thinking, no edit that starts before it applies either, and no compression runs: its
   thinking would be invalid, and it may be neither changed nor left out. They wait until the
   turn has ended (the model answered without a tool call; a person speaks next).
2. **Edits invalidate the thinking after them, so it goes.** For a model with bound thinking,
   when edits apply from a first changed working-view index ``e`` on, every ``ai`` entry at
   ``e`` or after it loses its thinking blocks (the entry stays, its other blocks as they were;
   one left with none is what the curated view leaves out, as an empty answer). The entry at
   ``e`` itself loses it too: its own message changed. A compression is the same from the first
   entry it did not keep where it was: the turns kept after a summary lose their thinking.
   Thinking before ``e`` stays, and the blocks that stay are never changed.
3. Nothing else: for a model without bound thinking no thinking block is ever changed or taken
   out (rule 1's wait for the latest turn holds for every model, and changes nothing).

The history the provider sees thus never holds a thinking block after something that differs
from what it was written after: each edit takes out the thinking behind it when it applies, and
what the model writes after it is written on the edited history.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from ..content import IContent, ThinkingBlock, ToolCallBlock, entry_from_json, is_empty_ai
from .stored import Blob

_AI = b'{"speaker":"ai"'
_SPEAKER = b'{"speaker":"'
_THINKING = b'"thinking"'


@dataclass(frozen=True)
class Turn:
    """The model's latest message in the working view: its ``ai`` entries ``start`` to
    ``stop - 1`` (a client may write one message as several entries)."""

    start: int
    stop: int
    calls: bool
    """It called a tool: until the model answers without one, each request continues it."""
    thinks: bool
    """It holds thinking blocks."""

    def touched_by(self, positions: Collection[int]) -> bool:
        return any(self.start <= p < self.stop for p in positions)


def has_thinking(entry: IContent) -> bool:
    return any(isinstance(b, ThinkingBlock) for b in entry.blocks)


def without_thinking(entry: IContent) -> IContent:
    """``entry`` with its thinking blocks taken out, every other block as it was."""
    return entry.with_blocks(b for b in entry.blocks if not isinstance(b, ThinkingBlock))


def _is_ai(blob: Blob) -> bool:
    """Whether a stored entry is the model's, mostly without parsing it (entries are stored as
    ``content.entry_json`` writes them: ``speaker`` first)."""
    if blob.startswith(_AI):
        return True
    if blob.startswith(_SPEAKER):
        return False
    return entry_from_json(blob).speaker == "ai"


def latest_turn(blobs: Sequence[Blob]) -> Turn | None:
    """The model's latest message in a working view (its entries as stored), or ``None``: the
    last ``ai`` entry a request shows (an empty answer is left out of it) and the ``ai`` entries
    right before it (the exporters write them as one message, or the provider reads them so)."""
    stop = len(blobs)
    while stop > 0 and not (
        _is_ai(blobs[stop - 1]) and not is_empty_ai(entry_from_json(blobs[stop - 1]))
    ):
        stop -= 1
    if stop == 0:
        return None
    start = stop - 1
    while start > 0 and _is_ai(blobs[start - 1]):
        start -= 1
    entries = [entry_from_json(b) for b in blobs[start:stop]]
    calls = any(isinstance(b, ToolCallBlock) for e in entries for b in e.blocks)
    return Turn(start, stop, calls, any(has_thinking(e) for e in entries))


def waits(positions: Collection[int], turn: Turn | None, bound: bool) -> bool:
    """Whether an edit that touches these working-view indices must wait (rule 1)."""
    if turn is None or not turn.calls or not positions:
        return False
    if turn.touched_by(positions):
        return True
    return bound and turn.thinks and min(positions) < turn.start


def compression_waits(turn: Turn | None, bound: bool) -> bool:
    """Whether a compression must wait (rule 1): it would change what comes before the latest
    message, whose thinking may be neither kept nor taken out while its tool use goes on."""
    return bound and turn is not None and turn.calls and turn.thinks


def keeps(turn: Turn | None, before: Sequence[IContent], after: Sequence[IContent]) -> bool:
    """Whether a new history (``after``, made from ``before``) holds the latest message's
    entries as they were (the very objects) while its tool use goes on."""
    if turn is None or not turn.calls:
        return True
    kept = {id(e) for e in after}
    return all(id(e) in kept for e in before[turn.start : turn.stop])


def first_change(before: Sequence[IContent], after: Sequence[IContent]) -> int | None:
    """The first index where ``after`` no longer holds ``before``'s entry (the very object)
    there, or ``None`` when it holds them all and nothing more."""
    for i, (old, new) in enumerate(zip(before, after, strict=False)):
        if old is not new:
            return i
    return None if len(before) == len(after) else min(len(before), len(after))


def unbound(
    blobs: Sequence[Blob],
    start: int,
    removals: Collection[int] = (),
    replacements: Mapping[int, IContent] | None = None,
) -> dict[int, IContent]:
    """``replacements`` (index -> new entry) with, in addition, the thinking taken out of every
    ``ai`` entry from ``start`` on that ``removals`` does not remove (rule 2); an entry already
    replaced loses it from its replacement."""
    out = dict(replacements or {})
    for i in range(max(0, start), len(blobs)):
        if i in removals:
            continue
        entry = out.get(i)
        if entry is None:
            if _THINKING not in blobs[i]:
                continue
            entry = entry_from_json(blobs[i])
        if entry.speaker == "ai" and has_thinking(entry):
            out[i] = without_thinking(entry)
    return out
