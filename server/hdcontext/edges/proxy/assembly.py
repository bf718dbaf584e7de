"""The conversation a request sends upstream, written from kept bytes.

The daemon returns the history as its stored entries (one JSON blob each). Each blob becomes
the provider's messages once (``api.export_entry``), and each message is kept as what a
request needs of it: its encoding, its ``Shape`` and its validity ``Turn``. A request's
conversation is then put together from those pieces: messages of one role in a row merged
(``api.merge``: what the importer split, what pruning left side by side), the daemon's
breakpoints marked (``api.assemble`` picks the messages, ``api.mark`` marks one, decoded and
encoded again on its own), and the bytes joined. The pieces of the entries the daemon
returns again are those of the previous request, so a turn encodes what is new.

Provider validity (``core.validity``, the one invariant) is checked on every request, on the
turns of what is sent, and it too follows what is new: the turns that are the very turns of
the previous request, up to its last assistant turn before the first that differs, were valid
then and made a known set of calls; the rest is checked as their continuation
(``turn_problems`` with ``calls_before``), which finds what a check of the whole would.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...core.content import entry_from_json
from ...core.validity import Problem, Turn, turn_calls, turn_problems
from .api import Api, Shape

KEPT_EXTRA = 64
"""Entries (and merged messages) not sent by the last request that the pieces may keep,
beyond as many again as it sent, before they are dropped."""


@dataclass(frozen=True, slots=True, eq=False)
class Message:
    """One message of the conversation sent upstream (equal only to itself: the assembly
    tells a kept message from a new one by identity)."""

    data: bytes
    shape: Shape
    turn: Turn | None
    calls: tuple[str, ...] = ()
    parts: tuple[Message, ...] = ()
    """The messages merged into this one (none: it is one exported message)."""


def encoded(message: object) -> bytes:
    """A message's JSON, in a bytes object of its own size. orjson's result keeps the
    buffer it grew (16 KiB for a message of 1.5 KiB, half a megabyte for one of 40 KiB):
    fine for what is sent and dropped, not for what is kept from one request to the next."""
    return bytes(memoryview(orjson.dumps(message)))


def message_of(api: Api, message: Mapping[str, Any]) -> Message:
    turn = api.turn(message)
    return Message(encoded(message), api.shape(message), turn, turn_calls(turn) if turn else ())


@dataclass
class Pieces:
    """What one conversation's previous request was made of, for the next: the entries it
    sent, their messages, how they were merged, the turns that were checked."""

    mode: str = ""
    blobs: list[bytes] = field(default_factory=list)
    """The entries the request sent (the daemon's stored JSON), in order."""
    per_entry: list[tuple[Message, ...]] = field(default_factory=list)
    """Each of those entries as its messages."""
    by_blob: dict[bytes, tuple[Message, ...]] = field(default_factory=dict)
    """Entries as their messages, by stored JSON: those sent, and maybe a few sent before."""
    merged: dict[tuple[Message, ...], Message] = field(default_factory=dict)
    """Messages of one role in a row, as the one message they were sent as (those sent,
    and maybe a few sent before)."""
    sent: list[Message] = field(default_factory=list)
    """The messages sent, merged, without the breakpoints' marks."""
    data: list[bytes] = field(default_factory=list)
    """Their encodings."""
    shapes: list[Shape] = field(default_factory=list)
    """The shape of each message sent."""
    run_entry: array[int] = field(default_factory=lambda: array("q"))
    """For each message sent, the entry its first part comes from..."""
    run_offset: array[int] = field(default_factory=lambda: array("q"))
    """... and which of that entry's messages it is."""
    run_turns: array[int] = field(default_factory=lambda: array("q"))
    """For each message sent, how many turns come before it."""
    last_of: array[int] = field(default_factory=lambda: array("q"))
    """For each entry, the message sent its last part is in (or the one before it)."""
    latest: tuple[int, int] = (-1, -1)
    """The latest assistant message: (entry, index among the entry's messages)."""
    turns: list[Turn] = field(default_factory=list)
    """The turns the request sent (which were valid)."""
    calls: list[str] = field(default_factory=list)
    """The call ids of those turns, in order."""
    calls_at: array[int] = field(default_factory=lambda: array("q", [0]))
    """``calls_at[i]``: how many of ``calls`` the turns before turn ``i`` made."""
    size: int = 0
    """Bytes of the messages kept, about (set by the compactor)."""


@dataclass(frozen=True)
class Assembled:
    messages: list[bytes]
    """The conversation's messages, encoded, in order."""
    problems: list[Problem]
    pieces: Pieces
    """What the next request of the conversation starts from."""
    exported: int
    """Entries exported for this request (not taken from the previous one)."""
    marked: tuple[str, ...] = ()
    """The lifetimes of the breakpoints placed, in message order."""


def joins(before: Shape, after: Shape, latest: bool) -> bool:
    """Whether message ``after`` is merged into the message ``before`` it (as the provider
    reads two messages of one role in a row). A user message that holds tool results is
    not merged after one that holds anything else (the results must open the message that
    answers the calls); the latest assistant message, when it carries thinking, is not
    merged into the one before (its thinking must lead it, signed as it came)."""
    if not (before.merges and after.merges) or before.role != after.role:
        return False
    if after.role == "assistant":
        return not (latest and after.thinking)
    return not after.results or before.only_results


def _latest(shapes: Sequence[Sequence[Shape]]) -> tuple[int, int]:
    """(entry, index in it) of the last assistant message, or (-1, -1)."""
    for e in range(len(shapes) - 1, -1, -1):
        entry = shapes[e]
        for j in range(len(entry) - 1, -1, -1):
            if entry[j].role == "assistant":
                return e, j
    return -1, -1


def group(
    shapes: Sequence[Sequence[Shape]],
) -> tuple[list[tuple[int, int]], list[Shape], list[int]]:
    """The messages of each entry in order (``shapes``, per entry) as the messages sent:
    runs of them ``(start, stop)`` in the flat order, each run's shape, and, per entry, the
    run its last message is in (or the run before it, for an entry with no message)."""
    latest = _latest(shapes)
    runs: list[tuple[int, int]] = []
    joined: list[Shape] = []
    last_of: list[int] = []
    at = 0
    for e, entry in enumerate(shapes):
        for j, shape in enumerate(entry):
            if joined and joins(joined[-1], shape, (e, j) == latest):
                runs[-1] = (runs[-1][0], at + 1)
                joined[-1] = joined[-1].joined(shape)
            else:
                runs.append((at, at + 1))
                joined.append(shape)
            at += 1
        last_of.append(len(runs) - 1)
    return runs, joined, last_of


def conversation(
    api: Api,
    body: Mapping[str, Any],
    exported: Sequence[list[dict[str, Any]]],
    breakpoints: Sequence[int],
    ttls: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """The conversation as messages (not bytes), read whole: what ``assemble`` writes."""
    flat = [m for entry in exported for m in entry]
    runs, shapes, last_of = group([[api.shape(m) for m in entry] for entry in exported])
    messages: list[dict[str, Any]] = []
    for start, stop in runs:
        merged = flat[start]
        for later in flat[start + 1 : stop]:
            merged = api.merge(merged, later)
        messages.append(merged)
    for at, ttl in api.assemble(body, shapes, last_of, breakpoints, ttls):
        messages[at] = api.mark(messages[at], ttl)
    return messages


def _same_start(blobs: Sequence[bytes], before: Sequence[bytes]) -> int:
    """How many leading entries are the very entries sent before."""
    n = min(len(blobs), len(before))
    if blobs[:n] == before[:n]:  # a list comparison: identity first, in C
        return n
    k = 0
    while k < n and (blobs[k] is before[k] or blobs[k] == before[k]):
        k += 1
    return k


def assemble(
    api: Api,
    body: Mapping[str, Any],
    blobs: Sequence[bytes],
    breakpoints: Sequence[int],
    mode: str,
    before: Pieces | None,
    ttls: Sequence[str] = (),
) -> Assembled:
    """The conversation of a request, encoded, from the daemon's entries ``blobs``, and the
    provider's rules checked on it. What the previous request (``before``) made of the same
    leading entries is taken as it was, up to the last message that nothing later can change
    (a merge with what follows, the latest assistant message's rule); the rest is made anew
    from the messages kept for each entry, exported only for an entry not sent before."""
    if before is None or before.mode != mode:
        before = Pieces(mode)
    same = _same_start(blobs, before.blobs)
    per_entry = before.per_entry[:same]
    exported = 0
    known = before.by_blob
    for blob in blobs[same:]:
        messages = known.get(blob)
        if messages is None:
            exported += 1
            made = api.export_entry(entry_from_json(blob), mode)
            messages = tuple(message_of(api, m) for m in made)
            known[blob] = messages
        per_entry.append(messages)
    if len(known) > 2 * len(blobs) + KEPT_EXTRA:  # entries long gone: keep those sent
        known = dict(zip(blobs, per_entry, strict=True))
    latest = _latest_message(per_entry)
    run = _restart(before, same, latest)
    if not 0 < run < len(before.sent):
        run = 0
    entry, offset = (before.run_entry[run], before.run_offset[run]) if run else (0, 0)
    sent = before.sent[:run]
    data = before.data[:run]
    shapes = before.shapes[:run]
    run_entry, run_offset = before.run_entry[:run], before.run_offset[:run]
    run_turns = before.run_turns[:run]
    last_of = before.last_of[:entry]
    turns = before.turns[: before.run_turns[run]] if run else []
    reused = len(turns)
    merged = before.merged if before.mode == mode else {}
    parts: list[Message] = []
    for e in range(entry, len(per_entry)):
        messages = per_entry[e]
        for j in range(offset if e == entry else 0, len(messages)):
            message = messages[j]
            if parts and joins(shapes[-1], message.shape, (e, j) == latest):
                parts.append(message)
                shapes[-1] = shapes[-1].joined(message.shape)
                continue
            if parts:
                sent.append(_one(api, parts, shapes[-1], merged))
            parts = [message]
            shapes.append(message.shape)
            run_entry.append(e)
            run_offset.append(j)
        last_of.append(len(shapes) - 1)
    if parts:
        sent.append(_one(api, parts, shapes[-1], merged))
    for message in sent[run:]:
        run_turns.append(len(turns))
        data.append(message.data)
        if message.turn is not None and (turns or message.shape.role not in api.prompt_roles):
            turns.append(message.turn)
    if len(merged) > 2 * len(sent) + KEPT_EXTRA:
        merged = {m.parts: m for m in sent if m.parts}
    marked = list(data)
    lifetimes: list[str] = []
    for at, ttl in api.assemble(body, shapes, last_of, breakpoints, ttls):
        marked[at] = orjson.dumps(api.mark(orjson.loads(data[at]), ttl))
        lifetimes.append(ttl)
    problems, calls, calls_at = _checked(turns, before, reused)
    pieces = Pieces(
        mode=mode,
        blobs=list(blobs),
        per_entry=per_entry,
        by_blob=known,
        merged=merged,
        sent=sent,
        data=data,
        shapes=shapes,
        run_entry=run_entry,
        run_offset=run_offset,
        run_turns=run_turns,
        last_of=last_of,
        latest=latest,
        turns=turns,
        calls=calls,
        calls_at=calls_at,
    )
    return Assembled(marked, problems, pieces, exported, tuple(lifetimes))


def _latest_message(per_entry: Sequence[tuple[Message, ...]]) -> tuple[int, int]:
    """(entry, index in it) of the last assistant message, or (-1, -1)."""
    for e in range(len(per_entry) - 1, -1, -1):
        entry = per_entry[e]
        for j in range(len(entry) - 1, -1, -1):
            if entry[j].shape.role == "assistant":
                return e, j
    return -1, -1


def _restart(before: Pieces, same: int, latest: tuple[int, int]) -> int:
    """The first message sent before that is made again: the one that holds the last message
    of the entry before the first that changed, or before the latest assistant message, then
    or now (that one's merging can change), whichever comes first."""
    stop = same
    for e, _ in (latest, before.latest):
        if e >= 0:
            stop = min(stop, e)
    if stop <= 0 or not before.last_of:
        return 0
    return max(0, before.last_of[stop - 1])


def _one(
    api: Api,
    parts: list[Message],
    shape: Shape,
    merged: dict[tuple[Message, ...], Message],
) -> Message:
    """The message sent for ``parts`` (one, or several merged: made once, then kept)."""
    if len(parts) == 1:
        return parts[0]
    key = tuple(parts)
    found = merged.get(key)
    if found is not None:
        return found
    message: dict[str, Any] = orjson.loads(parts[0].data)
    for later in parts[1:]:
        message = api.merge(message, orjson.loads(later.data))
    turn = api.turn(message)
    calls = turn_calls(turn) if turn else ()
    made = merged[key] = Message(encoded(message), shape, turn, calls, key)
    return made


def _checked(
    turns: list[Turn], before: Pieces, same: int
) -> tuple[list[Problem], list[str], array[int]]:
    """The problems of ``turns``, and their calls for the next request. What is checked
    starts where the previous request's turns, valid, stood before an assistant turn (or
    ended), at or before the first turn that is not the very one it sent (the first
    ``same`` are): all that went before made its calls and answered them, which is all
    the rules need of it."""
    previous = before.turns
    start = same
    limit = min(len(turns), len(previous))
    while start < limit and turns[start] is previous[start]:
        start += 1
    while start > 0 and start < len(previous) and _inside_a_turn(previous, start):
        start -= 1
    if start == 0:
        calls: list[str] = []
        calls_at = array("q", [0])
        problems = turn_problems(turns)
    else:
        calls = before.calls[: before.calls_at[start]]
        calls_at = before.calls_at[: start + 1]
        problems = turn_problems(turns[start:], calls, start)
    for turn in turns[start:]:
        calls.extend(turn_calls(turn))
        calls_at.append(len(calls))
    return problems, calls, calls_at


def _inside_a_turn(turns: Sequence[Turn], at: int) -> bool:
    """Whether a check may not start at ``turns[at]``: it is not the model's, or it goes on
    the model's turn right before it (the Responses API's items of one turn)."""
    turn = turns[at]
    if turn.role != "assistant":
        return True
    return turn.joins and at > 0 and turns[at - 1].role == "assistant"
