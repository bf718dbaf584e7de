"""What density is asked to do and what it answers (REQ-HD-001.5, 001.8, 001.9).

The session builds a ``DensityConfig`` from the resolved settings; the engine answers with
``Edit`` values (``edits.py``) and, for the seeds' ``optimize()`` contract, a ``DensityResult``
that speaks of indices into the history it was given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from ..content import IContent
from ..settings import MASK_RETENTION, Masking


@dataclass(frozen=True)
class FileWrite:
    """A write seen outside the history (on disk, or the editor's didSave).

    ``path`` is resolved the way tool paths are (absolute, normalized); ``time`` is in ms
    since the epoch, the clock of ``metadata.timestamp``.
    """

    path: str
    time: int


@dataclass(frozen=True)
class DensityConfig:
    """REQ-HD-001.9, plus the tool lists and the disk-write ledger the daemon adds."""

    read_write_pruning: bool = True
    file_dedupe: bool = True
    recency_pruning: bool = False
    recency_retention: int = 3
    workspace_root: str = ""
    read_tools: frozenset[str] = frozenset()
    write_tools: frozenset[str] = frozenset()
    shell_tools: frozenset[str] = frozenset()
    """Tools that run a shell command: their plain reads and writes count
    (``tools/shell/commands.py``)."""
    external_writes: Sequence[FileWrite] = ()
    retrieve_tool: str | None = None
    """The tool the client offers the model to get pruned results back: pointers name it."""
    keep_latest_view: bool = False
    """A read goes only when a later view of its file covers it (``stale_reads.py``); off is
    the seeds' rule: any later write makes a read go."""
    masking: Masking = "off"
    """Mask tool output the model has answered (``masking.py``): ``cold``, only when that
    costs no cache rewrite; ``always``, whenever the schedule finds it pays. It needs
    ``keep_latest_view``: the current views of files are what it must leave."""
    mask_retention: int = MASK_RETENTION
    """The newest tool outputs masking leaves, whatever they are."""

    @property
    def masks(self) -> bool:
        """Whether the masking rule runs (never under the seeds' rule for reads)."""
        return self.masking != "off" and self.keep_latest_view

    @property
    def retention(self) -> int:
        """REQ-HD-013.6: below 1 counts as 1."""
        return max(1, self.recency_retention)


@dataclass(frozen=True)
class DensityMetadata:
    """REQ-HD-001.8 / REQ-HD-013.7: entries each pass marked for removal or replacement."""

    read_write_pairs_pruned: int = 0
    file_deduplications_pruned: int = 0
    recency_pruned: int = 0
    masked_pruned: int = 0


@dataclass(frozen=True)
class DensityResult:
    """REQ-HD-001.5: edits to the raw history, by index into it."""

    removals: tuple[int, ...] = ()
    replacements: Mapping[int, IContent] = field(default_factory=dict)
    metadata: DensityMetadata = field(default_factory=DensityMetadata)

    @property
    def is_empty(self) -> bool:
        return not self.removals and not self.replacements
