"""A model call's request as the prompt cache sees it, read from the session's history.

The prompt cache measures a request by its working view: how long it is, how much of its head
the provider saw last time, which entries can carry a breakpoint for this provider; and it
places the request's breakpoints, with an anchor right before each density edit still waiting
(so that a batch, once it applies, rewrites only from there).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence

from ..content import ThinkingBlock
from ..history.history import History
from ..settings import Settings
from .pricing import Pricing
from .prompt_cache import Call, Placed, PromptCache
from .schedule import Candidate


def request(view: History, sent: int, pricing: Pricing, values: Settings, at: int) -> Call:
    """The request of a model call at ``at``, the working view as it is now. ``sent``: how
    many entries at its head the provider saw last (the previous reply, or a refresh call's
    longer request since), of which those before the first change since are unchanged."""
    length = len(view.raw_json)
    changed_from = view.changed_from
    unchanged = min(sent if changed_from is None else min(sent, changed_from), length)

    def carries(p: int) -> bool:
        index = view.shown_before(p)
        if index is None:
            return False
        entry = view.raw[index]
        if entry.speaker == "ai" and not pricing.assistant_breakpoints:
            return False
        return bool(entry.blocks) and not isinstance(entry.blocks[-1], ThinkingBlock)

    return Call(
        view=view,
        length=length,
        unchanged=unchanged,
        at=at,
        pricing=pricing,
        slots=values.cache_max_breakpoints,
        carries=carries,
        lifetimes=values.cache_ttl,
    )


def anchored(
    prompt: PromptCache, call: Call, view: History, waiting: Sequence[Candidate]
) -> tuple[Placed, int]:
    """Where the request's breakpoints go and how long each keeps its entry, anchors before
    the ``waiting`` edits included; and the tokens of those that wait for a cold cache (no
    anchor pays for them)."""
    # Where each waiting edit's first entry is: where its candidate says when that still
    # holds its first key (the history changed nothing before it since), else looked up.
    keys, unchanged, n = view.keys, call.unchanged, len(view.keys)
    starts: list[int] = []
    free_waiting = 0
    for c in waiting:
        if c.edit.free_only:  # it waits for a cold cache: no anchor pays for it
            free_waiting += c.saving
            continue
        k, p = c.edit.first_key, c.start
        if p >= n or keys[p] != k:
            p = bisect_left(keys, k)
            if p >= n or keys[p] != k:
                continue
        if p < unchanged:
            starts.append(p)
    breakpoints = prompt.place(call, starts)
    return prompt.lifetimes(call, breakpoints, free_waiting), free_waiting
