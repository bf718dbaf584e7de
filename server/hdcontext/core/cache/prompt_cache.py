"""What the provider holds of one conversation in its prompt cache: the one owner of it.

Per model call the session asks it two questions, which waiting density edits apply now
(``choose``) and where the request's message breakpoints go (``place``), applies the answers,
and tells it the call was made (``called``). It holds:

- the cache entries the provider may still hold (``held``): prefixes of the working view, by
  their length in entries, each with when the provider last wrote or read it and how long it
  lives after that (its lifetime, chosen by the breakpoint that wrote it). An entry past the
  first entry changed since is gone for good: the view no longer starts with it;
- the cost ledger (``ledger.py``): what the calls so far cost, and would have without density.

A request of ``n`` entries carries breakpoints at prefix lengths ``b1 < … < n`` (a breakpoint
at ``b`` sits on the last block of entry ``b - 1``). For a provider that caches at breakpoints
(``Pricing.at_breakpoints``) it reads the longest live entry ``q`` that lies within the
lookback of one of them (``q ≤ b``, at most ``lookback_blocks`` content blocks before it), and
writes from there on: the tokens before ``q`` at the read price, the others at a write price (a
provider bills each input token once, read, written or plain). Breakpoints may ask different
lifetimes, the longer ones first (Anthropic refuses a request with an hour after five minutes):
the tokens from ``q`` to the last breakpoint of the longer lifetime are written at its price,
the rest at the default one (Anthropic's billing of mixed lifetimes). Then every breakpoint
past ``q`` holds an entry written now with its own lifetime; the entry read, and any held at a
breakpoint before it, is refreshed for the lifetime it was written with (a read upgrades
nothing), and a breakpoint before it where none was held holds one now, of the entry read's
lifetime. A provider that matches any shared prefix reads up to the first changed entry while
its cache is warm.

Where the breakpoints go (``place``): on the last entry, always; then, when the longest live
entry is further back than the last entry's lookback reaches, on that entry (else the request
would read nothing of the messages); then on anchors, one right before where the waiting edits
start (the earliest first), so that an entry stays alive there (every request re-hits it) and
a batch, once it applies, rewrites only from there, not from the start. An entry made inside
what the request reads or writes anyway costs nothing more. ``choose`` plans with the anchors
already placed: they are among the live entries. Each breakpoint's lifetime
(``lifetimes``): as the client can ask (``cache.ttl``): the default, the longer one everywhere,
or, with ``auto``, as ``lifetimes.py`` chooses from the session's rhythm. ``refresh`` makes the
request of a refresh call (``refresh.py`` says when one pays): the longest live entry's prefix,
each breakpoint on an entry held, so that it reads and keeps them.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, Protocol, TypeAlias

from .ledger import CallBill, Charge, CostLedger
from .lifetimes import last_long
from .pricing import Pricing
from .rhythm import pause_chance
from .schedule import Candidate, Plan, everything, plan

Held = tuple[int, int, int]
"""(prefix length in working-view entries, when the provider last wrote or read it (ms), how
long it lives after that (ms))."""

Lifetimes: TypeAlias = Literal["5m", "1h", "auto"]
"""``cache.ttl``: what lifetimes the client can ask its breakpoints (``5m``: the provider's
default only; ``1h``: the longer one on every breakpoint; ``auto``: each as the daemon says)."""

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
    lifetimes: Lifetimes = "5m"


@dataclass(frozen=True)
class Placed:
    """A request's message breakpoints (prefix lengths, ascending) and whether each asks the
    longer lifetime (the longer ones first, as the provider requires)."""

    breakpoints: tuple[int, ...]
    long: tuple[bool, ...]

    @classmethod
    def default(cls, breakpoints: Sequence[int]) -> Placed:
        return cls(tuple(breakpoints), (False,) * len(breakpoints))


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
        return tuple(e for e in self.held if e[0] <= call.unchanged and 0 <= call.at - e[1] <= e[2])

    def warm(self, call: Call) -> bool:
        """Whether the request can read anything of the messages from the cache."""
        if call.pricing.at_breakpoints:
            return bool(self.live(call))
        return self.ledger.warm(call.at, call.pricing)

    def reading(self, call: Call, breakpoints: Sequence[int]) -> int:
        """Where a request carrying ``breakpoints`` reads the cache up to (0: nothing)."""
        if not call.pricing.at_breakpoints:
            return call.unchanged if self.ledger.warm(call.at, call.pricing) else 0
        # ``held`` is ascending by length: the first that reaches from the end is the longest.
        return next(
            (e[0] for e in reversed(self.live(call)) if _reaches(call, e[0], breakpoints)), 0
        )

    def _restart(self, call: Call) -> Callable[[int], int]:
        """Where the read would end if entry ``i`` changed, with the breakpoints the daemon
        would place then: at any live entry when the client places two or more, else only
        what the last entry's lookback finds."""
        if not call.pricing.at_breakpoints:
            return lambda i: i
        live = [e[0] for e in self.live(call)]
        if call.slots < 2:
            tail = (call.length,)
            live = [q for q in live if _reaches(call, q, tail)]
        live.sort()  # asked once per waiting edit: the largest at or before ``i`` by bisection

        def restart(i: int) -> int:
            k = bisect_right(live, i)
            return live[k - 1] if k else 0

        return restart

    # -- the questions of a call --------------------------------------------------------------

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
        # When the entry the request reads outlives a pause, a cold cache (the moment a free
        # edit waits for) would hardly come: such edits compete like the others.
        held: list[Candidate] = []
        if not self._long_lived(call, cached_end):
            ready: list[Candidate] = []
            for c in candidates:
                if c.edit.free_only and c.start < cached_end:
                    held.append(c)
                else:
                    ready.append(c)
            candidates = ready
        chosen = plan(
            candidates,
            cached_end=cached_end,
            tokens_between=call.view.tokens_between,
            pricing=_rewritten_at(call),
            horizon=self.ledger.horizon(),
            budget=self.ledger.budget(),
            restart=restart,
        )
        return Plan(chosen.apply, chosen.wait + tuple(held))

    def _long_lived(self, call: Call, q: int) -> bool:
        """Whether the live entry at ``q`` is of the longer lifetime."""
        long_ttl = call.pricing.long_ttl_ms
        return any(e[0] == q and e[2] >= long_ttl for e in self.live(call))

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
        best = max((e[0] for e in self.live(call)), default=0)
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
        if len(chosen) < call.slots and call.lifetimes == "auto" and call.pricing.write_long:
            spot = self._checkpoint(call, chosen)
            if spot is not None:
                chosen.append(spot)
        return tuple(sorted(chosen))

    def _checkpoint(self, call: Call, chosen: Sequence[int]) -> int | None:
        """Where an entry of the longer lifetime costs least and keeps most: the first place
        after what the request reads that can carry a breakpoint (usually right after the
        model's last answer, before the new tool results), so that its dearer write covers
        only that answer. ``lifetimes`` decides whether it asks the longer lifetime; placed,
        it costs nothing more either way (the request writes up to its last entry anyway)."""
        read = self.reading(call, chosen)
        for p in range(read + 1, call.length):
            if p in chosen:
                return None
            if call.carries(p):
                return p
        return None

    def lifetimes(self, call: Call, breakpoints: Sequence[int], free_waiting: int = 0) -> Placed:
        """Each breakpoint's lifetime, as ``cache.ttl`` lets the client ask it: the default
        (``5m``), the longer one on every breakpoint (``1h``), or (``auto``) the longer one up
        to where ``lifetimes.last_long`` says it pays. ``free_waiting``: the tokens that
        waiting edits would take out for free once the cache is cold (kept alive, they keep
        waiting)."""
        count = len(breakpoints)
        if call.pricing.write_long is None or call.lifetimes == "5m" or not count:
            return Placed.default(breakpoints)
        if call.lifetimes == "1h":
            return Placed(tuple(breakpoints), (True,) * count)
        k = last_long(
            breakpoints,
            tokens_between=call.view.tokens_between,
            read=self.reading(call, breakpoints),
            protected=self._protected(call),
            pricing=call.pricing,
            chance=pause_chance(self.ledger),
            horizon=self.ledger.horizon(),
            budget=self.ledger.budget(lifetimes=True),
            free_waiting=free_waiting,
        )
        return Placed(tuple(breakpoints), tuple(i <= k for i in range(count)))

    def _protected(self, call: Call) -> int:
        """The longest live entry of the longer lifetime: what a pause would not take."""
        long_ttl = call.pricing.long_ttl_ms
        return max((q for q, _, ttl in self.live(call) if ttl >= long_ttl), default=0)

    # -- the call made ------------------------------------------------------------------------

    def charge(self, call: Call, placed: Placed) -> tuple[int, Charge]:
        """Where the request reads up to, and how its input is billed: read up to there,
        written at the longer lifetime's price up to its last breakpoint of that lifetime,
        at the default one up to its last breakpoint, plain after that."""
        read = self.reading(call, placed.breakpoints)
        tokens = call.view.tokens_between
        marks = zip(placed.breakpoints, placed.long, strict=True)
        written = [(b, long) for b, long in marks if b > read]
        last = max((b for b, _ in written), default=read)
        long_end = max([read, *(b for b, long in written if long)])
        return read, Charge(
            read=tokens(0, read),
            write_long=tokens(read, long_end),
            write=tokens(long_end, max(long_end, last)),
            plain=tokens(last, call.length),
        )

    def called(
        self, call: Call, placed: Placed, off_total: int, off_long: bool = False
    ) -> tuple[PromptCache, CallBill]:
        """The cache after the request was sent as ``placed``, the ledger with its cost
        (``off_total``: what the request would hold without density, ``off_long``: whether
        the agent itself asks the longer lifetime), and the call's bill."""
        read, charge = self.charge(call, placed)
        ledger, bill = self.ledger.record(
            at=call.at,
            charge=charge,
            off_total=off_total,
            pricing=call.pricing,
            off_long=off_long,
        )
        return self._kept(call, placed, read, ledger), bill

    def refreshed(self, call: Call, placed: Placed, plain: int) -> tuple[PromptCache, CallBill]:
        """The cache after a refresh call: the request ``call`` describes, then ``plain``
        tokens (the line of text that asks nothing)."""
        read, charge = self.charge(call, placed)
        charge = replace(charge, plain=charge.plain + plain)
        ledger, bill = self.ledger.record_refresh(at=call.at, charge=charge, pricing=call.pricing)
        return self._kept(call, placed, read, ledger), bill

    def _kept(self, call: Call, placed: Placed, read: int, ledger: CostLedger) -> PromptCache:
        kept = {q: (used, ttl) for q, used, ttl in self.live(call)}
        read_ttl = kept[read][1] if read in kept else call.pricing.ttl_ms
        if read:
            kept[read] = (call.at, read_ttl)
        for b, long in zip(placed.breakpoints, placed.long, strict=True):
            if b > read:
                kept[b] = (call.at, call.pricing.lifetime(long))
            else:
                kept[b] = (call.at, kept[b][1] if b in kept else read_ttl)
        newest = sorted(kept.items(), key=lambda e: (e[1][0], e[0]))[-call.pricing.max_entries :]
        held = tuple(sorted((q, used, ttl) for q, (used, ttl) in newest))
        return replace(self, held=held, ledger=ledger)

    def reported_cold(self) -> PromptCache:
        """The provider said it read and wrote nothing of the last call (``history/usage``):
        it holds nothing, until the next call writes again."""
        return replace(self, ledger=replace(self.ledger, cold_reported=True))

    # -- a refresh call -----------------------------------------------------------------------

    def refresh_placed(self, call: Call) -> Placed:
        """A refresh call's breakpoints: its last entry, then the longest other live entries
        (each read or found at a breakpoint of its own, so every one is kept), at most
        ``call.slots``; each labelled with the lifetime it lives by, the longer ones first."""
        live = [e for e in self.live(call) if e[0] < call.length]
        chosen = [call.length] if call.length else []
        for q, _, _ in sorted(live, key=lambda e: -e[0]):
            if len(chosen) >= call.slots:
                break
            if call.carries(q):
                chosen.append(q)
        breakpoints = tuple(sorted(chosen))
        if call.pricing.write_long is None or call.lifetimes == "5m":
            return Placed.default(breakpoints)
        ttl_of = {q: ttl for q, _, ttl in self.live(call)}
        long_ttl = call.pricing.long_ttl_ms
        wants = [call.lifetimes == "1h" or ttl_of.get(b, 0) >= long_ttl for b in breakpoints]
        last = max((i for i, w in enumerate(wants) if w), default=-1)
        return Placed(breakpoints, tuple(i <= last for i in range(len(breakpoints))))


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


def _rewritten_at(call: Call) -> Pricing:
    """The prices a rewrite is written at: an hour's when every breakpoint asks an hour
    (``cache.ttl: 1h``), where a rewrite costs 2x a token, not 1.25x. Priced at the five
    minutes' write, a batch under the session's budget could cost more than it saved (a
    session that ends right after it dearer than sending everything)."""
    pricing = call.pricing
    if call.lifetimes == "1h" and pricing.write_long is not None:
        return replace(pricing, write=pricing.write_long)
    return pricing
