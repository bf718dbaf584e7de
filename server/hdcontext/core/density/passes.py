"""The shape every density rule takes: a pass that keeps its own index and proposes edits.

A pass sees each entry of the working history once, when it joins (``add``), and again when it
leaves (``remove``: pruned, compressed away, or replaced by an edited copy that is then added
under the same key). From what it keeps it proposes, when asked, every edit its rule wants now.
The engine feeds it from the history's journal, so a turn costs a pass what the turn changed;
the seeds' whole-history ``optimize()`` is the same passes fed every entry of a fresh history.
A new rule is one new pass.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..content import IContent
from .edits import Edit, Position, Rule


@dataclass(frozen=True)
class PassContext:
    """What a pass may read besides its own index when it proposes."""

    stamp_of: Callable[[int], int | None]
    """An entry's ``metadata.timestamp``, by key: when a read took its content."""
    entry_of: Callable[[int], IContent]
    """The entry with this key as it stands (parsed on demand): for building replacements."""
    ledger: Mapping[str, int]
    """Resolved path -> time of the latest write seen outside the history."""
    earlier: Sequence[Edit]
    """What the passes before this one propose, so a rule can leave their blocks alone."""
    protected: frozenset[Position] = frozenset()
    """Blocks no rule may take: the current views of files (``stale_reads.py``)."""


class DensityPass(Protocol):
    @property
    def rule(self) -> Rule: ...

    def add(self, key: int, entry: IContent) -> None: ...

    def remove(self, key: int, entry: IContent) -> None: ...

    def propose(self, context: PassContext) -> list[Edit]: ...

    def protected(self) -> frozenset[Position]:
        """Blocks the later passes must leave alone (after ``propose``)."""
        ...
