"""The one density engine: the passes, kept up to date with a working history.

The session asks it, before each model call, for the edits every enabled rule wants now
(``proposals``), or for all of them composed into the seeds' ``DensityResult``
(``optimize``). It follows the history through its journal (``history/journal.py``): entries that
left and joined since it last looked are removed from and added to every pass, so a turn
costs what the turn changed. A change of config (other than the disk-write ledger, which moves
every turn and is handed to the passes as it is), a history replaced wholesale, or a journal
that no longer reaches back makes it start again from the history: that costs one cold fold,
once. ``optimize.py`` is the same engine folded over a plain list.
"""

from __future__ import annotations

import dataclasses

from ..content import IContent
from ..history.journal import KeyedHistory
from ..history.stored import parse
from .edits import Edit, Position, result_of
from .file_rules import ledger_of
from .inclusions import FileDedupPass
from .masking import MaskingPass
from .passes import DensityPass, PassContext
from .recency import RecencyPass
from .stale_reads import StaleRead, StaleReadPass
from .todo_lists import TodoListPass
from .types import DensityConfig, DensityResult
from .write_echoes import WriteEchoPass


def passes_for(config: DensityConfig) -> list[DensityPass]:
    """The enabled passes, in the order they propose. Order matters: stale reads go first,
    so recency does not spend a tool's retention window on reads that go anyway; masking
    goes last and leaves every block another rule edits or protects."""
    out: list[DensityPass] = []
    if config.read_write_pruning:
        out.append(StaleReadPass(config))
    elif config.keep_latest_view and (config.recency_pruning or config.masks):
        out.append(StaleReadPass(config, prune=False))  # it knows which outputs are views
    if config.read_write_pruning and config.keep_latest_view:
        # A tool that also reads (a view command) shows content, not an echo: not trimmed.
        echoing = config.write_tools - config.read_tools
        out.append(WriteEchoPass(echoing, config.retrieve_tool))
        out.append(TodoListPass())
    if config.file_dedupe:
        out.append(FileDedupPass(config.workspace_root))
    if config.recency_pruning:
        out.append(RecencyPass(config.retention, config.retrieve_tool, config.keep_latest_view))
    if config.masks:
        free_only = config.masking == "cold"
        out.append(MaskingPass(config.mask_retention, config.retrieve_tool, free_only))
    return out


class DensityEngine:
    def __init__(self) -> None:
        self._config: DensityConfig | None = None  # without the ledger
        self._journal: object = None  # of the history it follows
        self._revision = -1
        self._passes: list[DensityPass] = []

    # -- asking ---------------------------------------------------------------------------

    def proposals(self, history: KeyedHistory, config: DensityConfig) -> list[Edit]:
        """Every edit the enabled rules want on ``history`` now, pass by pass."""
        context = self._follow(history, config)
        edits: list[Edit] = []
        protected: frozenset[Position] = frozenset()
        for density_pass in self._passes:
            step = dataclasses.replace(context, earlier=edits, protected=protected)
            edits.extend(density_pass.propose(step))
            protected |= density_pass.protected()
        return edits

    def optimize(self, history: KeyedHistory, config: DensityConfig) -> DensityResult:
        """The seeds' ``optimize(history.raw, config)``: every proposal, composed."""
        edits = self.proposals(history, config)
        return result_of(edits, history.position, lambda key: _entry(history, key))

    def read_times(self, history: KeyedHistory, config: DensityConfig) -> dict[str, int]:
        """Each file the history read, with the earliest time a read took its content."""
        stale = self._stale_pass(history, config)
        return stale.read_times() if stale is not None else {}

    def stale_reads(self, history: KeyedHistory, config: DensityConfig) -> list[StaleRead]:
        """Every read with a file written after it, prunable or not (for reports)."""
        stale = self._stale_pass(history, config)
        return stale.report() if stale is not None else []

    def _stale_pass(self, history: KeyedHistory, config: DensityConfig) -> StaleReadPass | None:
        context = self._follow(history, config)
        for density_pass in self._passes:
            if isinstance(density_pass, StaleReadPass):
                density_pass.settle(context)
                return density_pass
        return None

    # -- keeping up -----------------------------------------------------------------------

    def _follow(self, history: KeyedHistory, config: DensityConfig) -> PassContext:
        try:
            self._sync(history, config)
        except BaseException:
            self._config = None  # whatever it was halfway through, start again next time
            raise

        def stamp_of(key: int) -> int | None:
            index = history.position(key)
            return None if index is None else history.timestamps[index]

        return PassContext(
            stamp_of=stamp_of,
            entry_of=lambda key: _entry(history, key),
            ledger=ledger_of(config),
            earlier=(),
        )

    def _sync(self, history: KeyedHistory, config: DensityConfig) -> None:
        settings = dataclasses.replace(config, external_writes=())
        journal = history.journal
        same = settings == self._config and journal is self._journal
        changes = journal.since(self._revision) if same else None
        if changes is None:
            self._config = settings
            self._passes = passes_for(settings)
            for key, entry in zip(history.keys, history.raw, strict=True):
                self._add(key, entry)
        else:
            for change in changes:
                for key, blob in change.removed:
                    self._remove(key, parse(blob))  # (packed when it left: stored.pack)
                for key, blob in change.added:
                    self._add(key, parse(blob))
        self._journal = journal
        self._revision = journal.revision

    def _add(self, key: int, entry: IContent) -> None:
        for density_pass in self._passes:
            density_pass.add(key, entry)

    def _remove(self, key: int, entry: IContent) -> None:
        for density_pass in self._passes:
            density_pass.remove(key, entry)


def _entry(history: KeyedHistory, key: int) -> IContent:
    index = history.position(key)
    if index is None:
        raise RuntimeError("the density engine knows an entry the history does not")
    return history.raw[index]
