"""``HighDensityStrategy.optimize`` for a session's hot path: what a turn costs follows the turn.

``optimize(history, config)`` is a pure function of the whole history, and stays the reference
(REQ-HD-001, the tests). Run after every turn of a long session it redoes, each time, work
whose answer has not changed. The index keeps that work: one incremental index per pass
(``stale_index``, ``inclusion_index``, ``recency_index``), fed with the entries that left and
joined the history since it last looked (``journal.py``), and composes their edits into the
DensityResult that ``optimize`` returns for the same history and config, exactly (the property
tests compare the two on histories built turn by turn).

A change of config (other than the disk-write ledger, which moves every turn and is kept
incrementally), a history replaced wholesale, or a journal that no longer reaches back makes
the index start again from the history: that costs what ``optimize`` costs, once.
"""

from __future__ import annotations

import dataclasses

from ..content import Block, IContent, TextBlock, ToolResponseBlock, entry_from_json
from ..journal import KeyedHistory
from .file_dedup import replace_inclusions
from .high_density import HighDensityStrategy
from .inclusion_index import InclusionIndex
from .read_write import ledger_of
from .recency_index import RecencyIndex
from .stale_index import StaleReadIndex
from .tool_summary import PRUNED_POINTER
from .types import DensityConfig, DensityMetadata, DensityResult, OptimizingStrategy

_HIGH_DENSITY_OPTIMIZE = HighDensityStrategy.optimize


def reproduces(strategy: OptimizingStrategy) -> bool:
    """Whether the index stands in for this strategy's ``optimize``: only for the very
    function it reproduces (a subclass or a replacement of it is asked directly)."""
    return type(strategy).optimize is _HIGH_DENSITY_OPTIMIZE


class DensityIndex:
    def __init__(self) -> None:
        self._config: DensityConfig | None = None  # without the ledger
        self._journal: object = None  # of the history it follows
        self._revision = -1
        self._stale: StaleReadIndex | None = None
        self._inclusions: InclusionIndex | None = None
        self._recency: RecencyIndex | None = None

    def optimize(self, history: KeyedHistory, config: DensityConfig) -> DensityResult:
        """``HighDensityStrategy().optimize(history.raw, config)``, from what changed."""
        try:
            self._sync(history, config)
            return self._result(history, config)
        except BaseException:
            self._config = None  # whatever it was halfway through, start again next time
            raise

    # -- keeping up -----------------------------------------------------------------------

    def _sync(self, history: KeyedHistory, config: DensityConfig) -> None:
        settings = dataclasses.replace(config, external_writes=())
        journal = history.journal
        same = settings == self._config and journal is self._journal
        changes = journal.since(self._revision) if same else None
        if changes is None:
            self._start(settings)
            for key, entry in zip(history.keys, history.raw, strict=True):
                self._add(key, entry)
        else:
            for change in changes:
                for key, blob in change.removed:
                    self._remove(key, entry_from_json(blob))
                for key, blob in change.added:
                    self._add(key, entry_from_json(blob))
        self._journal = journal
        self._revision = journal.revision
        if self._stale is not None:
            self._stale.set_ledger(ledger_of(config))

    def _start(self, config: DensityConfig) -> None:
        self._config = config
        self._stale = StaleReadIndex(config) if config.read_write_pruning else None
        self._inclusions = InclusionIndex(config.workspace_root) if config.file_dedupe else None
        self._recency = RecencyIndex() if config.recency_pruning else None

    def _add(self, key: int, entry: IContent) -> None:
        if self._stale is not None:
            self._stale.add(key, entry)
        if self._inclusions is not None:
            self._inclusions.add(key, entry)
        if self._recency is not None:
            self._recency.add(key, entry)

    def _remove(self, key: int, entry: IContent) -> None:
        if self._stale is not None:
            self._stale.remove(key, entry)
        if self._inclusions is not None:
            self._inclusions.remove(key, entry)
        if self._recency is not None:
            self._recency.remove(key, entry)

    # -- the result -----------------------------------------------------------------------

    def _result(self, history: KeyedHistory, config: DensityConfig) -> DensityResult:
        """The passes' edits on the entries they touch, as ``EditedHistory`` composes them:
        pass 1 drops blocks (an entry left with none goes), pass 2 rewrites text blocks,
        pass 3 points old outputs at a re-run."""

        def stamp_of(key: int) -> int | None:
            index = history.position(key)
            return None if index is None else history.timestamps[index]

        drops = self._stale.drops(stamp_of) if self._stale is not None else {}
        notes = self._inclusions.stale() if self._inclusions is not None else {}
        pointers: dict[int, set[int]] = {}
        if self._recency is not None:
            dropped = {(key, j) for key, blocks in drops.items() for j in blocks}
            pointers = self._recency.outdated(config.retention, dropped)
        removals: list[int] = []
        replacements: dict[int, IContent] = {}
        for key in sorted(drops.keys() | notes.keys() | pointers.keys()):
            index = history.position(key)
            if index is None:
                raise RuntimeError("the density index knows an entry the history does not")
            entry = history.raw[index]
            gone = drops.get(key, ())
            repeated = notes.get(key, {})
            old = pointers.get(key, ())
            blocks: list[Block] = []
            for j, block in enumerate(entry.blocks):
                if j in gone:
                    continue
                if j in repeated and isinstance(block, TextBlock):
                    text = replace_inclusions(block.text, repeated[j])
                    block = block.model_copy(update={"text": text})
                elif j in old and isinstance(block, ToolResponseBlock):
                    block = block.model_copy(update={"result": PRUNED_POINTER})
                blocks.append(block)
            if not blocks:
                removals.append(index)
                continue
            edited = entry.with_blocks(blocks)
            if edited != entry:
                replacements[index] = edited
        return DensityResult(
            removals=tuple(removals),
            replacements=replacements,
            metadata=DensityMetadata(
                read_write_pairs_pruned=len(drops),
                file_deduplications_pruned=len(notes),
                recency_pruned=len(pointers),
            ),
        )
