"""The reply of ``history/compact`` and ``history/refresh``, assembled from what the call did.

The session decides and tells the prompt cache of the call; what the client is then sent (the
curated history, its revision, where its breakpoints go as indices of that history, and the
reports of each pass) is put together here, the same way for a compaction, a call passed as it
came and a refresh call. ``replies.py`` holds the wire types it is made of.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..cache.ledger import CallBill
from ..cache.pricing import Pricing
from ..cache.prompt_cache import Placed
from ..cache.refresh_call import RefreshCall, refresh_at
from ..cache.schedule import Candidate
from ..content import dump_entries
from ..history.history import History
from ..history.stored import Entries
from ..settings import Settings
from .calls import Told
from .replies import (
    CacheReport,
    CompactSummary,
    CompressionReport,
    DensityReport,
    Status,
)
from .state import CacheState


@dataclass(frozen=True)
class Step:
    """One pass of a compaction and the curated tokens around it (for tables and logs)."""

    name: str
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class CompactResult:
    history: Entries
    """The curated view (parsed as read, joined as stored for a reply)."""
    status: Status
    density: DensityReport | None
    compression: CompressionReport | None
    over_limit: bool
    revision: str
    """Names the returned history (a later ``reply: delta`` names it as its ``base``)."""
    previous: str | None
    """The revision of the previous reply, which ``cache.stablePrefix`` entries share."""
    cache: CacheReport
    steps: tuple[Step, ...] = field(default=())
    """The passes that ran, in order (``optimize``, ``compress``, ``emergency-optimize``…)."""
    bill: CallBill | None = None
    """The call as the daemon prices it (the edge keeps it for ``hdcontext stats``)."""

    def to_wire(self) -> dict[str, object]:
        """The whole reply of ``history/compact``, history as JSON values (the command line's
        ``--json``; the daemon writes the history as stored instead)."""
        return {"history": dump_entries(self.history), **self.wire_fields()}

    def delta(self, base: str | None) -> tuple[str | None, int, Entries]:
        """(``delta.base``, ``delta.keep``, ``delta.entries``) for a client that holds the
        history of revision ``base``: what changed, if it holds the previous reply."""
        if base is None or base != self.previous:
            return None, 0, self.history
        keep = self.cache.stable_prefix
        return base, keep, self.history[keep:]

    def wire_fields(self) -> dict[str, object]:
        """The reply of ``history/compact`` without its history (the edge adds it)."""
        return CompactSummary(
            revision=self.revision,
            cache=self.cache,
            status=self.status,
            density=self.density,
            compression=self.compression,
            over_limit=self.over_limit,
        ).to_wire()


@dataclass(frozen=True)
class Outcome:
    """What a compaction did, for its reply."""

    applied: int
    waiting: tuple[Candidate, ...]
    """The density edits left waiting (the reply anchors a breakpoint before them)."""
    density: DensityReport | None
    compression: CompressionReport | None
    over: bool
    steps: tuple[Step, ...]


def revision_name(epoch: str, n: int) -> str:
    """The name of a session's ``n``-th reply: with the epoch, so that a client holding a
    reply of an earlier session of the same id never takes it for this one's."""
    return f"{epoch}-{n}" if epoch else str(n)


def compacted(
    view: History,
    told: Told,
    outcome: Outcome,
    cache: CacheState,
    *,
    status: Status,
    pricing: Pricing,
    warm: bool,
    epoch: str,
) -> CompactResult:
    """A compaction's reply (or a call passed as it came), the prompt cache ``told`` of its
    call; ``cache``, the session's cache state (its edits still waiting)."""
    report = CacheReport(
        pricing=pricing.name,
        stable_prefix=view.curated_index(told.stable),
        edits_applied=outcome.applied,
        edits_pending=cache.pending_edits,
        pending_tokens=cache.pending_tokens,
        cold=not warm,
        **marks(view, told.placed),
        refresh_at=told.refresh_at,
    )
    return CompactResult(
        history=told.curated,
        status=status,
        density=outcome.density,
        compression=outcome.compression,
        over_limit=outcome.over,
        revision=revision_name(epoch, told.revision),
        previous=revision_name(epoch, told.previous) if told.previous else None,
        cache=report,
        steps=outcome.steps,
        bill=told.bill,
    )


def refreshed(
    view: History,
    made: RefreshCall | None,
    cache: CacheState,
    *,
    status: Status,
    values: Settings,
    pricing: Pricing,
    epoch: str,
) -> CompactResult:
    """A refresh call's reply: what it sends (nothing when none pays, ``made`` ``None``); no
    edit, no compression. ``cache``: the session's cache state after it."""
    curated, placed, read, bill, at = Entries(()), Placed((), ()), 0, None, None
    if made is not None:
        curated = view.curated()[: view.curated_index(made.call.length)]
        placed, read, bill = made.placed, made.read, made.bill
        at = refresh_at(values, pricing, cache.prompt, view, cache.free_pending)
    report = CacheReport(
        pricing=pricing.name,
        stable_prefix=len(curated),
        edits_applied=0,
        edits_pending=cache.pending_edits,
        pending_tokens=cache.pending_tokens,
        cold=read == 0,
        **marks(view, placed),
        refresh_at=at,
    )
    name = revision_name(epoch, cache.reply.revision)
    return CompactResult(
        history=curated,
        status=status,
        density=None,
        compression=None,
        over_limit=False,
        revision=f"{name}.r{cache.prompt.ledger.refreshes}",
        previous=None,
        cache=report,
        bill=bill,
    )


def marks(view: History, placed: Placed) -> dict[str, Any]:
    """``cache.breakpoints`` and ``cache.breakpointTtls``: the placed breakpoints as
    indices of the curated history (an empty model answer is not sent, so a breakpoint
    after one goes on the entry before it)."""
    found: dict[int, bool] = {}
    for b, long in zip(placed.breakpoints, placed.long, strict=True):
        index = view.curated_index(b) - 1
        if index >= 0:
            found[index] = found.get(index, False) or long
    indices = sorted(found)
    return {
        "breakpoints": indices,
        "breakpoint_ttls": ["1h" if found[i] else "5m" for i in indices],
    }
