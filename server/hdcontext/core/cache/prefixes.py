"""Where the prefixes the provider may hold end: at the previous request's end, and earlier.

A provider that caches only where a request ended (Anthropic, ``Pricing.request_ends``) holds a
prefix for each recent request: the entries up to that request's end, for the cache's lifetime
after the prefix was last written or read. When the history changes inside the previous
request, the next request hits the longest of those prefixes that it still starts with. The
session keeps those ends, as working-view lengths with the time each was last used, on its
reply mark; an end past the first changed entry is gone for good.
"""

from __future__ import annotations

from collections.abc import Sequence

End = tuple[int, int]
"""(working-view length at a reply, when the provider last wrote or read that prefix, ms)."""

MAX_ENDS = 32
"""The most ends kept: a cache lives minutes, and agents call the model every few seconds."""


def live(
    earlier: Sequence[End], previous: End | None, at: int, ttl_ms: int, unchanged: int
) -> tuple[End, ...]:
    """The ends the provider may still hold at ``at`` that the history still starts with:
    ``earlier`` ones and the ``previous`` reply's, none past ``unchanged`` entries, none
    unused for longer than the cache lives. Ascending, one time per end (the latest)."""
    latest: dict[int, int] = {}
    for end, used in (*earlier, *((previous,) if previous is not None else ())):
        if end <= unchanged and 0 <= at - used <= ttl_ms and used >= latest.get(end, used):
            latest[end] = used
    return tuple(sorted(latest.items()))


def hit(ends: Sequence[End], index: int) -> int:
    """Where the cached prefix a request hits ends if the history changed at ``index``: the
    last of ``ends`` at or before it (0: none)."""
    best = 0
    for end, _ in ends:
        if end <= index:
            best = end
    return best


def after_call(ends: Sequence[End], upto: int, at: int) -> tuple[End, ...]:
    """The ends to keep once a request made at ``at`` starts with the first ``upto`` entries
    of the previous one: those within them, the one it hit read again now (which keeps it
    alive), the newest ``MAX_ENDS``."""
    held = hit(ends, upto)
    kept = [(end, at if end == held else used) for end, used in ends if end <= upto]
    return tuple(kept[-MAX_ENDS:])
