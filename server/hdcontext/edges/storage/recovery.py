"""What a stored session keeps when rows of its transcript are missing.

A transcript row can go missing (a damaged database page, a hand edit, a tool that
"cleaned up"): the daemon refused the whole session before, since its working view referred
to the row. Now the session opens with what is there, because a user's chat is worth more
than the one entry lost from it. Of the working view, the entries that were missing rows go,
and so do entries that would be left holding a tool call without its response or a response
without its call: providers reject both, and a history the daemon sends must stay valid. A
call in the very last entry may still be waiting for its response, as in any live session,
and stays.

Pure: the store reads the rows, asks here what to drop, and writes the result in one
transaction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Damage:
    """What a repair found and did, for the user to read."""

    session_id: str
    missing: int
    """Transcript rows not found (holes in the numbering, or rows the view refers to)."""
    lost: int
    """Working entries that were missing rows."""
    unpaired: int
    """Working entries dropped so that no tool call or response is left without its partner."""

    def message(self) -> str:
        entries = "entry" if self.missing == 1 else "entries"
        parts = [
            f"hdcontext: session '{self.session_id}' was damaged in storage: "
            f"{self.missing} transcript {entries} could not be found"
        ]
        if self.lost or self.unpaired:
            parts.append(
                f"; the working history lost {self.lost + self.unpaired} "
                f"({self.lost} missing, {self.unpaired} to keep tool calls and their responses "
                "together)"
            )
        parts.append(". The session goes on with the rest.")
        return "".join(parts)


def unpaired(entries: Sequence[bytes]) -> set[int]:
    """Indices of ``entries`` (stored IContent JSON) to drop so that every tool response has
    its call before it and every call its response after it (but in the last entry)."""
    calls: list[set[str]] = []
    responses: list[set[str]] = []
    for blob in entries:
        found_calls: set[str] = set()
        found_responses: set[str] = set()
        for block in _blocks(blob):
            kind = block.get("type")
            call_id = block.get("id") if kind == "tool_call" else block.get("callId")
            if not isinstance(call_id, str):
                continue
            if kind == "tool_call":
                found_calls.add(call_id)
            elif kind == "tool_response":
                found_responses.add(call_id)
        calls.append(found_calls)
        responses.append(found_responses)
    last = len(entries) - 1
    dropped: set[int] = set()
    while True:
        kept = [i for i in range(len(entries)) if i not in dropped]
        more = set()
        seen_calls: set[str] = set()
        for i in kept:
            if responses[i] - seen_calls:
                more.add(i)  # a response whose call is not before it
            seen_calls |= calls[i]
        answered: set[str] = set()
        for i in reversed(kept):
            if i != last and calls[i] - answered:
                more.add(i)  # a call whose response is not after it
            answered |= responses[i]
        if not more:
            return dropped
        dropped |= more


def _blocks(blob: bytes) -> list[dict[str, object]]:
    try:
        entry = json.loads(blob)
    except ValueError:
        return []
    blocks = entry.get("blocks") if isinstance(entry, dict) else None
    if not isinstance(blocks, list):
        return []
    return [b for b in blocks if isinstance(b, dict)]
