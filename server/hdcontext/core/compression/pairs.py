"""Tool call / tool response pairing: what keeps a history acceptable to providers.

Providers reject a ``tool_response`` whose ``tool_call`` is gone and a call left without its
response. Every cut a strategy makes into a history, and every edit optimize returns, must
keep the pairs that were whole in its input whole in its output (DESIGN.md decision 4).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..content import IContent, ToolCallBlock, ToolResponseBlock


def call_index(history: Sequence[IContent]) -> dict[str, int]:
    """Call id -> index of the entry that holds the call (the first, if ids repeat)."""
    found: dict[str, int] = {}
    for i, entry in enumerate(history):
        for block in entry.blocks:
            if isinstance(block, ToolCallBlock):
                found.setdefault(block.id, i)
    return found


def pairs(history: Sequence[IContent]) -> list[tuple[int, int]]:
    """(call entry index, response entry index) for every response whose call precedes it."""
    calls = call_index(history)
    out: list[tuple[int, int]] = []
    for i, entry in enumerate(history):
        for block in entry.blocks:
            if isinstance(block, ToolResponseBlock):
                c = calls.get(block.call_id)
                if c is not None and c <= i:
                    out.append((c, i))
    return out


def pairing_problems(history: Sequence[IContent]) -> set[tuple[str, str]]:
    """The broken pairs of a history: ``("orphan_response", id)`` and ``("unanswered_call", id)``.

    A transformation is provider-safe when the problems of its output are a subset of the
    problems of its input.
    """
    problems: set[tuple[str, str]] = set()
    seen_calls: set[str] = set()
    answered: set[str] = set()
    for entry in history:
        for block in entry.blocks:
            if isinstance(block, ToolCallBlock):
                seen_calls.add(block.id)
            elif isinstance(block, ToolResponseBlock):
                if block.call_id in seen_calls:
                    answered.add(block.call_id)
                else:
                    problems.add(("orphan_response", block.call_id))
    for call_id in seen_calls - answered:
        problems.add(("unanswered_call", call_id))
    return problems


def valid_cuts(history: Sequence[IContent]) -> list[bool]:
    """``valid[k]`` (0 <= k <= len): splitting before entry k separates no call from its
    response. O(n) over the history, so strategies can search cuts freely."""
    n = len(history)
    delta = [0] * (n + 2)
    for c, r in pairs(history):
        if c < r:
            delta[c + 1] += 1
            delta[r + 1] -= 1
    valid: list[bool] = []
    running = 0
    for k in range(n + 1):
        running += delta[k]
        valid.append(running == 0)
    return valid


def cut_at_or_after(valid: Sequence[bool], k: int) -> int:
    """The first valid cut at or after ``k`` (``len(valid) - 1``, the end, is always valid)."""
    k = max(0, k)
    while k < len(valid) - 1 and not valid[k]:
        k += 1
    return min(k, len(valid) - 1)


def cut_at_or_before(valid: Sequence[bool], k: int) -> int:
    """The last valid cut at or before ``k`` (0, the start, is always valid)."""
    k = min(k, len(valid) - 1)
    while k > 0 and not valid[k]:
        k -= 1
    return max(k, 0)
