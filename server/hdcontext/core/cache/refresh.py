"""When a refresh call keeps the cache for less than the rewrite a pause would cost
(``cache.refresh``, ``cache.refreshAt``).

A refresh call sends what the provider holds and a line of text, and asks one token back: it
reads the prefix (at the read price) and so keeps each entry it finds for another lifetime.
It is the user's money spent on a call they did not make, so it is made only when it pays on
average: at the moment the most valuable entry would die (less ``MARGIN_MS``), if the chance
that the session comes back before the idle limit, times the rewrite it spares, beats what the
refreshes until then are likely to cost:

    P(back before the limit | idle until now) × spared
        >  Σ over the refreshes to come  P(still idle then | idle until now) × refresh

``spared`` is the rewrite of the prefix less what waiting free edits would take out of it (a
cold cache lets them apply), ``refresh`` what one refresh call costs. Like a batch of edits, a
refresh is paid only out of what the session has saved so far (``CostLedger.budget``): a
session that never comes back is no dearer than it would have been without hdcontext. At most
``MAX_PER_PAUSE`` refreshes follow one model call, and none once the session has been idle for
``cache.refreshIdleSeconds``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .ledger import CostLedger
from .pricing import Pricing
from .rhythm import Waiting, back_between, idle_at

MARGIN_MS = 20_000
"""How long before an entry dies its refresh is due (a client's timer and the call's own
latency)."""
MAX_PER_PAUSE = 12
"""The most refresh calls after one model call (an hour of five-minute lifetimes)."""
REFRESH_PLAIN_TOKENS = 12
"""What a refresh call adds besides the prefix it reads, in uncached input tokens: the line of
text and the one token of output it asks for (at several times the input price)."""


def next_refresh(
    *,
    ledger: CostLedger,
    pricing: Pricing,
    held: Sequence[tuple[int, int, int]],
    tokens_between: Callable[[int, int], int],
    free_waiting: int,
    idle_limit: int,
    can_lengthen: bool = False,
    waiting: Waiting = "tool",
    at: int | None = None,
) -> int | None:
    """When the next refresh call is due (ms since the epoch), or ``None`` when none pays.
    ``held``: the entries the provider holds, as (length, last used, lifetime); the longest,
    which the next call would read, is the one kept. Refreshing it spares the rewrite of what
    lies between the longest entry that outlives it by a lifetime (a checkpoint of the longer
    lifetime) and its end. ``can_lengthen``: the refresh may write what came since at the
    longer lifetime (``cache.ttl: auto``), so that one refresh keeps the prefix that long; the
    better of the two plans decides. ``waiting``: what the idle session waits on (at the call
    itself the daemon cannot know yet: ``tool``, the likeliest to pay, names the moment to
    look again); ``at``: a refresh asked now rather than when the entry dies."""
    last = ledger.last_at
    if last is None or not held or ledger.refreshes_in_pause >= MAX_PER_PAUSE:
        return None
    q, used, lifetime = max(held)
    due = used + lifetime - MARGIN_MS if at is None else at
    if (at is None and due <= (ledger.touched_at or last)) or due - last > idle_limit:
        return None
    outlives = max(
        (p for p, u, t in held if p < q and u + t > due + lifetime + MARGIN_MS), default=0
    )
    spared = (pricing.write - pricing.read) * tokens_between(outlives, q)
    spared -= (pricing.write + ledger.horizon() * pricing.read) * free_waiting
    one = pricing.read * tokens_between(0, q) + REFRESH_PLAIN_TOKENS
    if spared <= 0 or one > ledger.budget(lifetimes=True):
        return None
    plans = [lifetime]
    if can_lengthen and pricing.write_long is not None and lifetime < pricing.long_ttl_ms:
        plans.append(pricing.long_ttl_ms)
    worth = max(_worth(ledger, waiting, due, every, idle_limit, spared, one) for every in plans)
    return due if worth > 0 else None


def _worth(
    ledger: CostLedger,
    waiting: Waiting,
    due: int,
    every: int,
    idle_limit: int,
    spared: float,
    one: float,
) -> float:
    """What refreshing from ``due`` every ``every`` ms is worth on average: the rewrite it
    spares if the session comes back while the refreshes keep the cache, less the refreshes
    made while it is still idle."""
    last = ledger.last_at
    assert last is not None
    idle = due - last
    cost, at = 0.0, due
    for _ in range(MAX_PER_PAUSE - ledger.refreshes_in_pause):
        if at - last > idle_limit:
            break
        cost += idle_at(ledger, waiting, idle, at - last) * one
        at += every
    back = back_between(ledger, waiting, idle, at + MARGIN_MS - last)
    return back * spared - cost


def long_pays(
    *,
    ledger: CostLedger,
    pricing: Pricing,
    due: int,
    written: int,
    prefix_tokens: int,
    waiting: Waiting,
) -> bool:
    """Whether a refresh call that writes ``written`` new tokens should write them to an
    entry of the longer lifetime: its dearer write against the refresh calls of the default
    lifetime that it spares while the session is likely still idle."""
    last = ledger.last_at
    if pricing.write_long is None or last is None or written <= 0:
        return False
    one = pricing.read * prefix_tokens + REFRESH_PLAIN_TOKENS
    idle = due - last
    spared = 0.0
    at = due + pricing.ttl_ms
    while at < due + pricing.long_ttl_ms:
        spared += idle_at(ledger, waiting, idle, at - last) * one
        at += pricing.ttl_ms
    return (pricing.write_long - pricing.write) * written < spared
