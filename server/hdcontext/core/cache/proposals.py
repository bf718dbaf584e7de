"""What the density rules propose for a session's history, and what each proposal saves.

Both are kept from one compaction to the next, so that a turn costs what it adds: the density
engine's indexes catch up through the history's journal (``density/engine.py``), and each
waiting edit's saving is counted once (``savings.py``). The rules read the session's settings,
its workspace, the retrieve tool its model can call, and the files written outside the history
(on disk, or saved in the editor), which are noted here as they come.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..content import IContent
from ..density.applied import entry_at
from ..density.edits import Edit
from ..density.engine import DensityEngine
from ..density.types import DensityConfig, FileWrite
from ..history.history import History
from ..settings import Settings
from .savings import Savings
from .schedule import Candidate


class Proposals:
    def __init__(self, workspace_root: Callable[[], str], retrieve_tool: str | None) -> None:
        self.writes: dict[str, int] = {}
        """Each file written outside the history, with the time of its latest write (ms)."""
        self._workspace_root = workspace_root
        self._retrieve_tool = retrieve_tool
        # What the density rules learnt about the history, kept between turns so that a turn
        # costs what it adds (it catches up through the history's journal).
        self._density = DensityEngine()
        self._savings = Savings()  # what each waiting edit saves, counted once

    def config(self, v: Settings) -> DensityConfig:
        """What the rules read, as the settings ``v`` say."""
        writes = tuple(FileWrite(p, t) for p, t in self.writes.items()) if v.watch_enabled else ()
        return DensityConfig(
            read_write_pruning=v.read_write_pruning,
            file_dedupe=v.file_dedupe,
            recency_pruning=v.recency_pruning,
            recency_retention=v.recency_retention,
            workspace_root=self._workspace_root(),
            read_tools=frozenset(v.read_tools),
            write_tools=frozenset(v.write_tools),
            shell_tools=frozenset(v.shell_tools),
            external_writes=writes,
            retrieve_tool=self._retrieve_tool,
            keep_latest_view=v.keep_latest_view,
            masking=v.masking,
            mask_retention=v.mask_retention,
        )

    def note_write(self, path: str, when: int) -> bool:
        """A file written outside the history at ``when``: whether it is news (later than
        the write of it known so far)."""
        if when > self.writes.get(path, -1):
            self.writes[path] = when
            return True
        return False

    def edits(self, view: History, values: Settings) -> list[Edit]:
        """Every edit the enabled rules want on ``view`` now."""
        return self._density.proposals(view, self.config(values))

    def candidates(self, edits: Sequence[Edit], view: History) -> list[Candidate]:
        """Each edit with the first working-view index it touches and what it saves."""

        def entry(key: int) -> IContent:
            return entry_at(view, key)

        return self._savings.candidates(edits, view, entry)

    def read_times(self, view: History, values: Settings) -> dict[str, int]:
        """Each file ``view`` read, with the earliest time a read took its content."""
        return self._density.read_times(view, self.config(values))

    def forget(self) -> None:
        """Forget what each edit saves: the keys and places of entries rolled back will be
        given again."""
        self._savings.forget()
