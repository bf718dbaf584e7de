"""Density edits as values: what a pass proposes, and how proposals become a new history.

An ``Edit`` is one pruning decision that is applied whole or not at all: a stale read's call
and every response to it, the repeated inclusions of one message, one old tool output. The
cache-aware schedule chooses among them, so each must leave a provider-valid history on its
own: no edit separates a call from its response. Edits speak of entries by key
(``history/journal.py``), which survives the removal of earlier entries, and of blocks by index in
the entry as it stands.

Composing edits is done here once, for every pass: a block dropped by one edit and an entry
left with no block at all both go; a replaced block takes the new one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeAlias

from ..content import Block, IContent
from .types import DensityMetadata, DensityResult

Rule: TypeAlias = Literal["readWrite", "fileDedupe", "recency", "masking"]
"""The rule behind an edit: the keys of PROTOCOL.md's density metadata, shortened."""

Position: TypeAlias = tuple[int, int]
"""(entry key, block index): where a block is, in the order blocks were appended."""


@dataclass(frozen=True, slots=True)
class BlockEdit:
    """One block of one entry: dropped (``new is None``) or replaced by ``new``."""

    key: int
    block: int
    new: Block | None = None


@dataclass(frozen=True, slots=True)
class Edit:
    """One pruning decision: the blocks it drops or replaces, applied together."""

    rule: Rule
    blocks: tuple[BlockEdit, ...]
    informs: bool = False
    """The edit tells the model something (a file changed on disk): the cache-aware schedule
    makes it even when it saves no token. Any other edit is only worth its saving."""
    free_only: bool = False
    """The edit applies only when it costs no cache rewrite: a cold cache, compression due,
    or it touches only entries past the prefix the provider holds. It never waits for the
    saving to repay a rewrite (masking with ``cold``: what it takes out is worth having only
    when nothing cached is lost for it)."""

    _keys: frozenset[int] = field(init=False, repr=False, compare=False)
    """``keys`` and ``first_key``, made once: the schedule asks every waiting edit for them
    at every compact."""

    _first_key: int | None = field(init=False, repr=False, compare=False)
    last_key: int = field(init=False, repr=False, compare=False)
    """The largest key it touches (-1: none, below every key). A field, not a property:
    the schedule reads it of every waiting edit at every compact."""
    positions: tuple[Position, ...] = field(init=False, repr=False, compare=False)
    """The blocks it drops or replaces, in order; ``dropped``: those it drops. Made once
    (tuples, the smallest that holds them): the later passes join those of every earlier
    edit at every compact."""
    dropped: tuple[Position, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        keys = frozenset(b.key for b in self.blocks)
        object.__setattr__(self, "_keys", keys)
        object.__setattr__(self, "_first_key", min(keys) if keys else None)
        object.__setattr__(self, "last_key", max(keys) if keys else -1)
        positions = tuple((b.key, b.block) for b in self.blocks)
        object.__setattr__(self, "positions", positions)
        if all(b.new is None for b in self.blocks):
            dropped = positions
        else:
            dropped = tuple((b.key, b.block) for b in self.blocks if b.new is None)
        object.__setattr__(self, "dropped", dropped)

    @property
    def keys(self) -> frozenset[int]:
        return self._keys

    @property
    def first_key(self) -> int:
        if self._first_key is None:
            raise ValueError("an edit of no block has no first key")
        return self._first_key


def touched_by(edits: Iterable[Edit]) -> frozenset[Position]:
    """Every block the edits drop or replace (joined in C: a later pass asks this of every
    earlier edit at every compact)."""
    return frozenset().union(*[edit.positions for edit in edits])


def dropped_by(edits: Iterable[Edit]) -> frozenset[Position]:
    """Every block the edits drop."""
    return frozenset().union(*[edit.dropped for edit in edits])


def drop(rule: Rule, positions: Iterable[Position]) -> Edit:
    return Edit(rule, tuple(BlockEdit(k, j) for k, j in sorted(positions)))


Replace: TypeAlias = Callable[[Block, Callable[[int], IContent]], Block]
"""What a pass makes of a block, given the block and how to read any entry by key."""


class Replacements:
    """A pass's one-block edits (a block replaced by what ``replace`` makes of it), each
    built once: building one parses its entry, and a waiting edit is asked for at every
    compact until it applies. A pass forgets a block's edit when the block leaves."""

    def __init__(self, rule: Rule, replace: Replace, free_only: bool = False) -> None:
        self._rule = rule
        self._replace = replace
        self._free_only = free_only
        self._built: dict[Position, Edit] = {}

    def edit(self, position: Position, entry_of: Callable[[int], IContent]) -> Edit:
        built = self._built.get(position)
        if built is None:
            key, j = position
            new = self._replace(entry_of(key).blocks[j], entry_of)
            edit = Edit(self._rule, (BlockEdit(key, j, new),), free_only=self._free_only)
            built = self._built[position] = edit
        return built

    @property
    def built(self) -> Mapping[Position, Edit]:
        """The edits built so far, by block (read-only): a pass walking many may look them
        up in place."""
        return self._built

    def forget(self, position: Position) -> None:
        self._built.pop(position, None)


@dataclass(frozen=True)
class PassEdits:
    """One rule's edits on a plain list, by index into it (the seeds' per-pass contract,
    which the single-rule functions of ``optimize.py`` answer with).

    ``count`` is what REQ-HD-013.7 asks the metadata to report: entries touched, not blocks.
    """

    removals: frozenset[int] = frozenset()
    replacements: Mapping[int, IContent] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.removals | self.replacements.keys())

    @property
    def is_empty(self) -> bool:
        return not self.removals and not self.replacements


def edited_entries(
    edits: Iterable[Edit], entry_of: Callable[[int], IContent]
) -> dict[int, tuple[IContent, IContent | None]]:
    """Entry key -> the entry as it stands (``entry_of(key)``) and with every given edit
    applied, or ``None`` when that leaves it with no block."""
    by_key: dict[int, dict[int, Block | None]] = {}
    for edit in edits:
        for b in edit.blocks:
            by_key.setdefault(b.key, {})[b.block] = b.new
    out: dict[int, tuple[IContent, IContent | None]] = {}
    for key, changes in by_key.items():
        entry = entry_of(key)
        blocks: list[Block] = []
        for j, block in enumerate(entry.blocks):
            if j not in changes:
                blocks.append(block)
            else:
                new = changes[j]
                if new is not None:
                    blocks.append(new)
        out[key] = (entry, entry.with_blocks(blocks) if blocks else None)
    return out


def metadata_of(edits: Iterable[Edit]) -> DensityMetadata:
    """Entries touched, per rule (REQ-HD-013.7)."""
    touched: dict[Rule, set[int]] = {
        "readWrite": set(),
        "fileDedupe": set(),
        "recency": set(),
        "masking": set(),
    }
    for edit in edits:
        touched[edit.rule].update(edit.keys)
    return DensityMetadata(
        read_write_pairs_pruned=len(touched["readWrite"]),
        file_deduplications_pruned=len(touched["fileDedupe"]),
        recency_pruned=len(touched["recency"]),
        masked_pruned=len(touched["masking"]),
    )


def result_of(
    edits: Sequence[Edit],
    position_of: Callable[[int], int | None],
    entry_of: Callable[[int], IContent],
) -> DensityResult:
    """The edits as REQ-HD-001.5 speaks of them: indices into the history as it stands.

    An edit that would leave an entry as it was is not a replacement (a pass that rewrites a
    text into itself changes nothing).
    """
    removals: list[int] = []
    replacements: dict[int, IContent] = {}
    for key, (entry, edited) in sorted(edited_entries(edits, entry_of).items()):
        index = position_of(key)
        if index is None:
            raise RuntimeError("a density edit names an entry the history does not hold")
        if edited is None:
            removals.append(index)
        elif edited != entry:
            replacements[index] = edited
    return DensityResult(tuple(removals), replacements, metadata_of(edits))
