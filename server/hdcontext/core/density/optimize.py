"""The seeds' pure ``optimize(history, config)`` (REQ-HD-001.2): the engine, folded cold.

A plain list of entries becomes a history whose keys are its indices, and a fresh engine reads
it once; what it proposes, composed, is the DensityResult. The functions for a single rule
answer the seeds' per-pass contract (``PassEdits`` by index), so a rule can be tested alone.
There is no second implementation of any rule here: the session's incremental engine and this
fold run the same passes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..content import IContent
from ..history.journal import Journal
from .edits import PassEdits, result_of
from .engine import DensityEngine
from .stale_reads import StaleRead
from .types import DensityConfig, DensityResult

_ALL_OFF = DensityConfig(read_write_pruning=False, file_dedupe=False, recency_pruning=False)


class _ListHistory:
    """A plain list as the engine reads a history: keys are indices, no change is journaled."""

    def __init__(self, entries: Sequence[IContent]) -> None:
        self.raw = list(entries)
        self.keys = range(len(self.raw))
        self.timestamps = [e.timestamp for e in self.raw]
        self.journal = Journal()

    def position(self, key: int) -> int | None:
        return key if 0 <= key < len(self.raw) else None


def optimize(history: Sequence[IContent], config: DensityConfig) -> DensityResult:
    """Every enabled rule's edits on ``history``, by index into it."""
    return DensityEngine().optimize(_ListHistory(history), config)


def _one_rule(history: Sequence[IContent], config: DensityConfig) -> PassEdits:
    keyed = _ListHistory(history)
    edits = DensityEngine().proposals(keyed, config)
    result = result_of(edits, keyed.position, keyed.raw.__getitem__)
    return PassEdits(frozenset(result.removals), dict(result.replacements))


def _stale_only(config: DensityConfig) -> DensityConfig:
    return dataclasses.replace(
        config, read_write_pruning=True, file_dedupe=False, recency_pruning=False
    )


def prune_stale_reads(history: Sequence[IContent], config: DensityConfig) -> PassEdits:
    """READ → WRITE pruning alone (REQ-HD-005), whatever ``config`` says of the other rules."""
    return _one_rule(history, _stale_only(config))


def find_stale_reads(history: Sequence[IContent], config: DensityConfig) -> list[StaleRead]:
    """Every read with at least one file written after it, in call order, and whether READ →
    WRITE pruning removes it."""
    return DensityEngine().stale_reads(_ListHistory(history), _stale_only(config))


def read_times(history: Sequence[IContent], config: DensityConfig) -> dict[str, int]:
    """Each file ``history`` read, with the earliest time a read took its content (none
    when READ → WRITE pruning is off: writes on disk matter to nothing else)."""
    return DensityEngine().read_times(_ListHistory(history), config)


def dedupe_file_inclusions(history: Sequence[IContent], workspace_root: str) -> PassEdits:
    """Duplicate ``@file`` inclusion dedup alone (REQ-HD-006)."""
    return _one_rule(
        history, dataclasses.replace(_ALL_OFF, file_dedupe=True, workspace_root=workspace_root)
    )


def prune_old_results(history: Sequence[IContent], retention: int) -> PassEdits:
    """Tool result recency pruning alone (REQ-HD-007); below 1 counts as 1."""
    return _one_rule(
        history, dataclasses.replace(_ALL_OFF, recency_pruning=True, recency_retention=retention)
    )
