"""What the provider holds of one conversation in its prompt cache: the one owner of it.

Per model call the session asks it two questions, which waiting density edits apply now
(``choose``) and where the request's message breakpoints go (``place``), applies the answers,
and tells it the call was made (``called``). It holds:

- the cache entries the provider may still hold (``held``): prefixes of the working view, by
  their length in entries, each with when the provider last wrote or read it. An entry past the
  first entry changed since is gone for good: the view no longer starts with it;
- the cost ledger (``ledger.py``): what the calls so far cost, and would have without density.

A request of ``n`` entries carries breakpoints at prefix lengths ``b1 < … < n`` (a breakpoint
at ``b`` sits on the last block of entry ``b - 1``). For a provider that caches at breakpoints
(``Pricing.at_breakpoints``) it reads the longest live entry ``q`` that lies within the lookback
of one of them (``q ≤ b``, at most ``lookback_blocks`` content blocks before it), and writes
from there on: the tokens before ``q`` at the read price, the others at the write price (a
provider bills each input token once, read, written or plain). Then every breakpoint holds an
entry, written or refreshed now, and the entry read is refreshed. A provider that matches any
shared prefix reads up to the first changed entry while its cache is warm.

Where the breakpoints go (``place``): on the last entry, always; then, when the longest live
entry is further back than the last entry's lookback reaches, on that entry (else the request
would read nothing of the messages); then on anchors, one right before where the waiting edits
start (the earliest first), so that an entry stays alive there (every request re-hits it) and
a batch, once it applies, rewrites only from there, not from the start. An entry made inside
what the request reads or writes anyway costs nothing more. ``choose`` plans with the anchors
already placed: they are among the live entries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from .ledger import CostLedger
from .pricing import Pricing
from .schedule import Candidate, Plan, everything, plan

Held = tuple[int, int]
"""(prefix length in working-view entries, when the provider last wrote or read it, ms)."""

ANCHOR_SEARCH = 64
"""How far before an edit an anchor is looked for, in entries (an entry that cannot carry a
breakpoint, such as OpenAI's assistant messages, is passed over)."""


class View(Protocol):
    """The working view, as the cache measures it (``History`` is one)."""

    def tokens_between(self, start: int, stop: int) -> int: ...

    def blocks_between(self, start: int, stop: int) -> int: ...


@dataclass(frozen=True)
class Call:
    """One model call's request, as the cache sees it."""

    view: View
    length: int
    """Entries in the working view (the request's last breakpoint is here)."""
    unchanged: int
    """Entries at its head unchanged since the previous request."""
    at: int
    pricing: Pricing
    slots: int = 2
    """Message breakpoints the client places (``cache.maxBreakpoints``)."""
    carries: Callable[[int], bool] = lambda _: True
    """Whether a breakpoint can go at a prefix length (the entry before it can carry one)."""


@dataclass(frozen=True)
class PromptCache:
    held: tuple[Held, ...] = ()
    """Ascending by length."""
    ledger: CostLedger = field(default_factory=CostLedger)

    # -- what the provider still holds --------------------------------------------------------

    def live(self, call: Call) -> tuple[Held, ...]:
        """The entries the provider may still hold at the call that the request starts with."""
        if self.ledger.cold_reported:
            return ()
        ttl = call.pricing.ttl_ms
        return tuple(
            (q, used) for q, used in self.held if q <= call.unchanged and 0 <= call.at - used <= ttl
        )

    def warm(self, call: Call) -> bool:
        """Whether the request can read anything of the messages from the cache."""
        if call.pricing.at_breakpoints:
            return bool(self.live(call))
        return self.ledger.warm(call.at, call.pricing)

    def reading(self, call: Call, breakpoints: Sequence[int]) -> int:
        """Where a request carrying ``breakpoints`` reads the cache up to (0: nothing)."""
        if not call.pricing.at_breakpoints:
            return call.unchanged if self.ledger.warm(call.at, call.pricing) else 0
        return max(
            (q for q, _ in self.live(call) if _reaches(call, q, breakpoints)),
            default=0,
        )

    def _restart(self, call: Call) -> Callable[[int], int]:
        """Where the read would end if entry ``i`` changed, with the breakpoints the daemon
        would place then: at any live entry when the client places two or more, else only
        what the last entry's lookback finds."""
        if not call.pricing.at_breakpoints:
            return lambda i: i
        live = [q for q, _ in self.live(call)]
        if call.slots < 2:
            tail = (call.length,)
            live = [q for q in live if _reaches(call, q, tail)]

        def restart(i: int) -> int:
            return max((q for q in live if q <= i), default=0)

        return restart

    # -- the two questions --------------------------------------------------------------------

    def choose(self, call: Call, candidates: Sequence[Candidate], all_now: bool) -> Plan:
        """Which edits apply at this call (``schedule.plan``), priced against what the
        provider holds: every one when ``all_now`` (a rewrite is coming anyway) or when the
        request would read nothing from the cache. An edit that applies only for free
        (``Edit.free_only``: masking at a cold cache) waits while it starts inside what the
        request would read."""
        if all_now or not self.warm(call):
            return everything(candidates)
        restart = self._restart(call)
        cached_end = restart(call.unchanged)
        held = tuple(c for c in candidates if c.edit.free_only and c.start < cached_end)
        chosen = plan(
            [c for c in candidates if not (c.edit.free_only and c.start < cached_end)],
            cached_end=cached_end,
            tokens_between=call.view.tokens_between,
            pricing=call.pricing,
            horizon=self.ledger.horizon(),
            budget=self.ledger.budget(),
            restart=restart,
        )
        return Plan(chosen.apply, chosen.wait + held)

    def place(self, call: Call, waiting: Sequence[int]) -> tuple[int, ...]:
        """The request's message breakpoints, as prefix lengths, ascending: the last entry,
        the longest live entry if the last one's lookback misses it, anchors before the
        ``waiting`` edits' starts (working-view indices), at most ``call.slots``."""
        n = call.length
        if n == 0:
            return ()
        chosen = [n]
        if not call.pricing.at_breakpoints:
            return (n,)
        best = max((q for q, _ in self.live(call)), default=0)
        if best and not _reaches(call, best, chosen) and len(chosen) < call.slots:
            spot = _spot_reaching(call, best)
            if spot is not None:
                chosen.append(spot)
        for start in sorted(set(waiting)):
            if len(chosen) >= call.slots:
                break
            anchor = _anchor_before(call, start)
            if anchor is not None and anchor not in chosen:
                chosen.append(anchor)
        return tuple(sorted(chosen))

    # -- the call made ------------------------------------------------------------------------

    def called(self, call: Call, breakpoints: Sequence[int], off_total: int) -> PromptCache:
        """The cache after the request was sent with ``breakpoints``, and the ledger with its
        cost (``off_total``: what the request would hold without density)."""
        read = self.reading(call, breakpoints)
        kept = dict(self.live(call))
        if read:
            kept[read] = call.at
        for b in breakpoints:
            kept[b] = call.at
        newest = sorted(kept.items(), key=lambda e: (e[1], e[0]))[-call.pricing.max_entries :]
        ledger = self.ledger.record(
            at=call.at,
            warm=self.ledger.warm(call.at, call.pricing),
            stable_tokens=call.view.tokens_between(0, read),
            total=call.view.tokens_between(0, call.length),
            off_total=off_total,
            pricing=call.pricing,
        )
        return replace(self, held=tuple(sorted(newest)), ledger=ledger)

    def reported_cold(self) -> PromptCache:
        """The provider said it read and wrote nothing of the last call (``history/usage``):
        it holds nothing, until the next call writes again."""
        return replace(self, ledger=replace(self.ledger, cold_reported=True))


def _reaches(call: Call, q: int, breakpoints: Sequence[int]) -> bool:
    """Whether some breakpoint finds an entry at ``q`` within the provider's lookback."""
    lookback = call.pricing.lookback_blocks
    return any(
        q <= b and (lookback is None or call.view.blocks_between(q, b) <= lookback)
        for b in breakpoints
    )


def _spot_reaching(call: Call, q: int) -> int | None:
    """A place for a breakpoint that finds the entry at ``q``: ``q`` itself, else the first
    one after it within the lookback that can carry one."""
    lookback = call.pricing.lookback_blocks
    for p in range(q, call.length):
        if lookback is not None and call.view.blocks_between(q, p) > lookback:
            return None
        if call.carries(p):
            return p
    return None


def _anchor_before(call: Call, start: int) -> int | None:
    """The last place at or before ``start`` that can carry a breakpoint (none at 0)."""
    for p in range(min(start, call.length - 1), max(0, start - ANCHOR_SEARCH), -1):
        if call.carries(p):
            return p
    return None
