"""Index edits of one density pass, and how several passes compose into one DensityResult.

Each pass is written against a plain list of entries and answers with indices into that list,
so it can be tested alone. ``optimize`` runs them one after another, each on the history as the
earlier passes left it, but the DensityResult must speak of the *input* list: this module keeps
that bookkeeping in one place instead of in every pass.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..content import Block, IContent
from .types import DensityMetadata, DensityResult


@dataclass(frozen=True)
class PassEdits:
    """What one pass changed, by index into the list it was given.

    A pass never both removes and replaces one entry; ``count`` is what REQ-HD-013.7 asks the
    metadata to report: entries touched, not blocks.
    """

    removals: frozenset[int] = frozenset()
    replacements: Mapping[int, IContent] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.removals | self.replacements.keys())

    @property
    def is_empty(self) -> bool:
        return not self.removals and not self.replacements


NO_EDITS = PassEdits()


def edits_from_blocks(
    history: Sequence[IContent], new_blocks: Mapping[int, Iterable[Block]]
) -> PassEdits:
    """Turn per-entry block lists into edits: an entry left with no block goes.

    Passes think in blocks (one tool call, one text segment); whether that empties the entry
    is decided here, once, so no pass can leave an empty ``tool`` entry behind.
    """
    removals: set[int] = set()
    replacements: dict[int, IContent] = {}
    for index, blocks in new_blocks.items():
        kept = tuple(blocks)
        if not kept:
            removals.add(index)
        elif kept != history[index].blocks:
            replacements[index] = history[index].with_blocks(kept)
    return PassEdits(frozenset(removals), replacements)


DensityPass = Callable[[Sequence[IContent]], PassEdits]


@dataclass(frozen=True)
class EditedHistory:
    """The input history with the edits of the passes run so far (``None`` = removed)."""

    original: tuple[IContent, ...]
    current: tuple[IContent | None, ...]

    @classmethod
    def of(cls, history: Sequence[IContent]) -> EditedHistory:
        entries = tuple(history)
        return cls(entries, entries)

    def visible(self) -> tuple[list[IContent], list[int]]:
        """The entries a later pass sees, and for each its index in the input."""
        entries: list[IContent] = []
        positions: list[int] = []
        for index, entry in enumerate(self.current):
            if entry is not None:
                entries.append(entry)
                positions.append(index)
        return entries, positions

    def run(self, density_pass: DensityPass) -> tuple[EditedHistory, int]:
        """Run a pass on the visible entries; map its edits back to input indices.

        A replacement of an already replaced entry simply supersedes it: the pass built it
        from the replaced entry, so the earlier edit is already inside it.
        """
        entries, positions = self.visible()
        edits = density_pass(entries)
        both = edits.removals & edits.replacements.keys()
        if both:
            raise ValueError(f"density pass both removed and replaced entries {sorted(both)}")
        out_of_bounds = [
            i for i in (*edits.removals, *edits.replacements) if not 0 <= i < len(entries)
        ]
        if out_of_bounds:
            raise ValueError(f"density pass edited entries out of bounds: {sorted(out_of_bounds)}")
        current = list(self.current)
        for i in edits.removals:
            current[positions[i]] = None
        for i, entry in edits.replacements.items():
            current[positions[i]] = entry
        return EditedHistory(self.original, tuple(current)), edits.count

    def result(self, metadata: DensityMetadata) -> DensityResult:
        removals = tuple(i for i, entry in enumerate(self.current) if entry is None)
        replacements = {
            i: entry
            for i, entry in enumerate(self.current)
            if entry is not None and entry is not self.original[i] and entry != self.original[i]
        }
        return DensityResult(removals=removals, replacements=replacements, metadata=metadata)
