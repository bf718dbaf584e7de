"""When density edits apply, under prompt caching (PROTOCOL.md ``compression.density.schedule``).

An edit to an entry the provider already cached turns every token after that entry into a
cache write at the next call, instead of a cache read. So an edit that touches only entries
past the previous reply (nothing cached there yet) is free and applies at once; the others
wait, and apply together when that pays over the calls to come:

    saving  = horizon × S × read                  (S tokens fewer, read from cache, each call)
    rewrite = (A − S) × write − A × read          (A tokens from where the provider's cache
                                                   stops hitting to the end of the cached
                                                   prefix, now written instead of read, less
                                                   the S gone)

where the cut (the first edited entry) is chosen to make ``saving − rewrite`` largest: every
waiting edit at or after it applies, the ones before it keep waiting. A batch whose rewrite
would cost more than the session has saved so far (``budget``) waits too, so that a session
that ends right after a batch is still no dearer than sending everything. When the cache is
cold (the previous call is older than its lifetime), or compression is about to rewrite the
history anyway, everything applies.

Where the cache stops hitting is the first edited entry for a provider that matches any shared
prefix, and the last cache entry before it that the provider still holds and the request's
breakpoints reach for one that caches only at breakpoints (``Pricing.at_breakpoints``;
``prompt_cache.py`` says where): trimming the last entry the model read then costs the rewrite
of the model's answer before it too, unless an anchor sits right before it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from operator import attrgetter

from ..density.edits import Edit
from .pricing import Pricing


@dataclass(frozen=True)
class Candidate:
    """An edit the density rules want, where it starts and what it saves."""

    edit: Edit
    start: int
    """The first working-view index it touches."""
    saving: int
    """Tokens it takes out of the history."""


@dataclass(frozen=True)
class Plan:
    apply: tuple[Candidate, ...]
    wait: tuple[Candidate, ...]

    @property
    def waiting_tokens(self) -> int:
        return sum(c.saving for c in self.wait)


def everything(candidates: Sequence[Candidate]) -> Plan:
    return Plan(tuple(candidates), ())


def plan(
    candidates: Sequence[Candidate],
    *,
    cached_end: int,
    tokens_between: Callable[[int, int], int],
    pricing: Pricing,
    horizon: float,
    budget: float,
    restart: Callable[[int], int] | None = None,
) -> Plan:
    """Which edits apply now. ``cached_end``: the working-view index where the prefix the
    provider holds ends (0 when its cache is cold); ``tokens_between(i, j)``: the tokens of
    entries ``i`` to ``j - 1``; ``restart(i)``: where the provider's cached prefix would end if
    entry ``i`` changed (``i`` itself unless said otherwise): the last cache entry at or
    before ``i``, so that it is the same for every index from what it answers up to ``i``."""
    free: list[Candidate] = []
    costly: list[Candidate] = []
    for c in candidates:
        if c.start < cached_end:
            costly.append(c)
        else:
            free.append(c)
    costly.sort(key=_START)
    # Read once into plain lists: the walk below runs over every waiting edit at every call.
    starts = list(map(_START, costly))
    savings = list(map(_SAVING, costly))
    write, read = pricing.write, pricing.read
    best, best_net = len(costly), 0.0
    saved = 0
    # Where the read restarts takes few values (the live cache entries): each is asked and
    # counted once, the starts walked downwards (``restart``'s contract, in ``plan``'s doc).
    counted: dict[int, int] = {}
    cut = after = -1
    for k in range(len(costly) - 1, -1, -1):
        saved += savings[k]
        start = starts[k]
        if k > 0 and starts[k - 1] == start:
            continue  # edits that start at one entry go together
        if start < cut or cut < 0 or restart is None:
            cut = start if restart is None else restart(start)
            known = counted.get(cut)
            if known is None:
                known = counted[cut] = tokens_between(cut, cached_end)
            after = known
        rewrite = (after - saved) * write - after * read
        net = horizon * saved * read - rewrite
        if net > best_net and rewrite <= budget:
            best, best_net = k, net
    return Plan(tuple(free + costly[best:]), tuple(costly[:best]))


_START = attrgetter("start")
_SAVING = attrgetter("saving")
