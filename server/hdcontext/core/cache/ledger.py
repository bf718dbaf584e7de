"""What a session's model calls cost so far, estimated, against sending everything.

Each ``history/compact`` is one model call, and each ``history/refresh`` one refresh call. A
call's input is billed by kind of token (``Charge``): read from the cache, written to an entry
of the default lifetime, written to one of the longer lifetime (Anthropic's hour), or plain.
``prompt_cache.py`` says which tokens are which, from the entries the provider holds and the
breakpoints and lifetimes the request carries.

The same is reckoned for the history as it would be with no density edit at all and no
refresh call (every entry appended, the previous call's history its prefix, every breakpoint of
the lifetime the agent itself asks): that is what the session would have cost without
hdcontext. The difference is what hdcontext has saved so far: the schedule spends it only on a
rewrite it can repay, so a session is never much dearer than sending everything.

The ledger also keeps the session's rhythm (how many of its pauses outlived the default
lifetime, and the longest of them lately): ``rhythm.py`` reads the chance of a pause from it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .pricing import Pricing

HORIZON_CAP = 20.0
"""The most further calls a batch is planned to pay back over. Measured on the replay (49
conversations, ``python -m bench.holdout``): from 10 to 40 the cost moves by less than 0.1%;
20 was the best in sample and the pick of 20 of the 21 leave-one-project-out folds."""
BATCH_ALLOWANCE = 0.0
"""How much of what the calls so far cost without density a batch may overrun what the session
saved by. Measured on the replay: 0.5% to 2% save no more than none (at most 0.05% of the
cost) and let a session end up to 0.7% dearer than density off; with none, no session is."""
LIFETIME_ALLOWANCE = 0.01
"""How much of what the calls so far cost without hdcontext the lifetime's premiums and the
refresh calls may overrun what the session saved by (``budget(lifetimes=True)``). Chosen on
the replay with each project held out (``python -m bench.lifetimes``): 0.01 in 18 of 21 folds,
no conversation more than 1% dearer than sending everything."""
PAUSES_KEPT = 16
"""How many of the session's latest pauses (gaps longer than the default lifetime) are kept."""


@dataclass(frozen=True)
class Charge:
    """One request's input tokens by how the provider bills them."""

    read: int = 0
    """Read from the cache."""
    write: int = 0
    """Written to entries of the default lifetime."""
    write_long: int = 0
    """Written to entries of the longer lifetime."""
    plain: int = 0
    """Neither: after the request's last breakpoint."""

    @property
    def total(self) -> int:
        return self.read + self.write + self.write_long + self.plain

    def cost(self, pricing: Pricing) -> float:
        """In uncached input tokens."""
        return (
            self.read * pricing.read
            + self.write * pricing.write
            + self.write_long * pricing.write_price(True)
            + self.plain
        )


@dataclass(frozen=True)
class CallBill:
    """One call as the ledger priced it: what the edge keeps per call (``hdcontext stats``)."""

    at: int
    refresh: bool
    """A refresh call (the session's own calls are model calls)."""
    charge: Charge
    """With hdcontext, as the daemon expects the provider to bill it."""
    off: Charge
    """The same call without hdcontext (none for a refresh call: without hdcontext there is
    none)."""
    cost: float
    off_cost: float


@dataclass(frozen=True)
class CostLedger:
    calls: int = 0
    last_at: int | None = None
    """When the previous model call was made (ms), by the client's ``at`` or the daemon's
    clock."""
    off_tokens: int = 0
    """Tokens the previous call would have sent with density off."""
    spent: float = 0.0
    spent_off: float = 0.0
    cold_reported: bool = False
    """The client said the provider's cache was cold (``history/usage``)."""
    touched_at: int | None = None
    """When the provider last saw the conversation: the previous model or refresh call."""
    pauses: int = 0
    """Gaps between model calls longer than the default lifetime."""
    long_pauses: int = 0
    """Of those, the ones longer than the longer lifetime too."""
    recent_pauses: tuple[int, ...] = ()
    """The latest pauses' lengths (ms), at most ``PAUSES_KEPT``, oldest first."""
    refreshes: int = 0
    """Refresh calls made, and what they cost (part of ``spent``)."""
    refresh_spent: float = 0.0
    refreshes_in_pause: int = 0
    """Refresh calls since the latest model call."""

    def warm(self, at: int, pricing: Pricing) -> bool:
        """Whether the provider still holds the previous call's prefix at ``at`` (a provider
        that matches any shared prefix, whose entries all live the default lifetime)."""
        touched = self.touched_at if self.touched_at is not None else self.last_at
        if touched is None or self.cold_reported:
            return False
        return 0 <= at - touched <= pricing.ttl_ms

    @property
    def saved(self) -> float:
        """What density has saved so far (negative: cost)."""
        return self.spent_off - self.spent

    def horizon(self) -> float:
        """The calls still to come, as the schedule plans: as many as have been (a session
        that has run long tends to run on), at least one, at most ``HORIZON_CAP``."""
        return min(HORIZON_CAP, max(1.0, float(self.calls)))

    def budget(self, lifetimes: bool = False) -> float:
        """What a batch may cost at once: what density has saved so far (plus
        ``BATCH_ALLOWANCE`` of what the calls so far cost without it), so that a session that
        ends right after a batch is no dearer than sending everything (at most that much).
        ``lifetimes``: what a longer lifetime's premium or a refresh call may cost (plus
        ``LIFETIME_ALLOWANCE`` instead)."""
        allowance = LIFETIME_ALLOWANCE if lifetimes else BATCH_ALLOWANCE
        return max(0.0, self.saved + allowance * self.spent_off)

    def off_charge(self, at: int, off_total: int, pricing: Pricing, off_long: bool) -> Charge:
        """What sending everything would be billed at ``at``: the previous call's history read
        while the agent's own lifetime (``off_long``: the longer one) keeps it, the rest
        written."""
        ttl = pricing.lifetime(off_long)
        warm = self.last_at is not None and not self.cold_reported and 0 <= at - self.last_at <= ttl
        held = min(self.off_tokens, off_total) if warm else 0
        written = off_total - held
        if off_long and pricing.write_long is not None:
            return Charge(read=held, write_long=written)
        return Charge(read=held, write=written)

    def record(
        self,
        *,
        at: int,
        charge: Charge,
        off_total: int,
        pricing: Pricing,
        off_long: bool = False,
    ) -> tuple[CostLedger, CallBill]:
        """The ledger after a model call billed ``charge``, where sending everything would
        have sent ``off_total`` tokens; and the call's bill."""
        off = self.off_charge(at, off_total, pricing, off_long)
        cost, off_cost = charge.cost(pricing), off.cost(pricing)
        pauses, long_pauses, recent = self.pauses, self.long_pauses, self.recent_pauses
        if self.last_at is not None and at - self.last_at > pricing.ttl_ms:
            gap = at - self.last_at
            pauses += 1
            long_pauses += gap > pricing.long_ttl_ms
            recent = (*recent, gap)[-PAUSES_KEPT:]
        ledger = replace(
            self,
            calls=self.calls + 1,
            last_at=at,
            touched_at=at,
            off_tokens=off_total,
            spent=self.spent + cost,
            spent_off=self.spent_off + off_cost,
            cold_reported=False,
            pauses=pauses,
            long_pauses=long_pauses,
            recent_pauses=recent,
            refreshes_in_pause=0,
        )
        return ledger, CallBill(at, False, charge, off, cost, off_cost)

    def record_refresh(
        self, *, at: int, charge: Charge, pricing: Pricing
    ) -> tuple[CostLedger, CallBill]:
        """The ledger after a refresh call billed ``charge``: a cost of hdcontext's alone
        (sending everything makes none)."""
        cost = charge.cost(pricing)
        ledger = replace(
            self,
            touched_at=at,
            spent=self.spent + cost,
            cold_reported=False,
            refreshes=self.refreshes + 1,
            refresh_spent=self.refresh_spent + cost,
            refreshes_in_pause=self.refreshes_in_pause + 1,
        )
        return ledger, CallBill(at, True, charge, Charge(), cost, 0.0)
