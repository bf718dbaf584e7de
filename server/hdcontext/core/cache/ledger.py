"""What a session's model calls cost so far, estimated, against sending everything.

Each ``history/compact`` is one model call. Its input costs, in uncached-token units: the
prefix the provider still holds from the previous call at the read price, the rest at the
write price (a cold cache holds nothing). The same is reckoned for the history as it would be
with no density edit at all (every entry appended, the previous call's history its prefix).
The difference is what density has saved so far: the schedule spends it only on a rewrite it
can repay, so a session is never much dearer than sending everything.
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


@dataclass(frozen=True)
class CostLedger:
    calls: int = 0
    last_at: int | None = None
    """When the previous call was made (ms), by the client's ``at`` or the daemon's clock."""
    off_tokens: int = 0
    """Tokens the previous call would have sent with density off."""
    spent: float = 0.0
    spent_off: float = 0.0
    cold_reported: bool = False
    """The client said the provider's cache was cold (``history/usage``)."""

    def warm(self, at: int, pricing: Pricing) -> bool:
        """Whether the provider still holds the previous call's prefix at ``at``."""
        if self.last_at is None or self.cold_reported:
            return False
        return 0 <= at - self.last_at <= pricing.ttl_ms

    @property
    def saved(self) -> float:
        """What density has saved so far (negative: cost)."""
        return self.spent_off - self.spent

    def horizon(self) -> float:
        """The calls still to come, as the schedule plans: as many as have been (a session
        that has run long tends to run on), at least one, at most ``HORIZON_CAP``."""
        return min(HORIZON_CAP, max(1.0, float(self.calls)))

    def budget(self) -> float:
        """What a batch may cost at once: what density has saved so far (plus
        ``BATCH_ALLOWANCE`` of what the calls so far cost without it), so that a session that
        ends right after a batch is no dearer than sending everything (at most that much)."""
        return max(0.0, self.saved) + BATCH_ALLOWANCE * self.spent_off

    def record(
        self,
        *,
        at: int,
        warm: bool,
        stable_tokens: int,
        total: int,
        off_total: int,
        pricing: Pricing,
    ) -> CostLedger:
        """The ledger after a call that sent ``total`` tokens, ``stable_tokens`` of them a
        prefix the provider held, where sending everything would have sent ``off_total``."""
        held = stable_tokens if warm else 0
        cost = held * pricing.read + (total - held) * pricing.write
        off_held = min(self.off_tokens, off_total) if warm else 0
        cost_off = off_held * pricing.read + (off_total - off_held) * pricing.write
        return replace(
            self,
            calls=self.calls + 1,
            last_at=at,
            off_tokens=off_total,
            spent=self.spent + cost,
            spent_off=self.spent_off + cost_off,
            cold_reported=False,
        )
