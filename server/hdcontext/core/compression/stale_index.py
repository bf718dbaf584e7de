"""READ → WRITE pruning (``read_write.py``) kept up to date across turns.

``prune_stale_reads`` looks at the whole history: every call, every response, every shell
command, every write. After a turn, almost all of that is what it was. This index keeps it:
calls and responses by id, the shell walk (``shell_runs.py``), what each call with a unique id
wrote and read, the latest write of each file, the readers of each file, the disk ledger. A
change of entries marks the ids it touches; settling redoes those ids' facts, the latest write
of the files they wrote, and the staleness of the reads of those files (and of the files the
ledger moved on). The prunable reads are kept as a set, so what a turn costs is what it
touched. The rules are ``read_write``'s own functions; the property tests hold the two equal.

Positions are ``(entry key, block index)`` (``journal.py``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from typing import TypeVar

from ..content import IContent, ToolCallBlock, ToolResponseBlock
from ..shell import command_of, cwd_of
from ..tools import extract_path, path_parameters, resolve_path
from .read_write import (
    Outcome,
    ShellRun,
    answered_without_error,
    entry_cwd,
    outcome_of,
    read_of,
    shell_succeeded,
    written_after,
)
from .shell_runs import Position, ShellRuns
from .types import DensityConfig

_first = itemgetter(0)
M = TypeVar("M", str, Position)


@dataclass(frozen=True, slots=True)
class _KeptCall:
    """A tool call as the rules read it (``read_write.ToolUse``): its name, and of its
    parameters only those that name files (``tools.path_parameters``), for the tools that
    read or write files. The index keeps no written content alive."""

    name: str
    parameters: object


B = TypeVar("B", _KeptCall, Outcome)


@dataclass(frozen=True, slots=True)
class _Facts:
    """What a call with a unique id did: files written (if it succeeded) and read."""

    position: Position
    writes: tuple[str, ...]
    reads: tuple[str, ...]
    only_reads: bool
    read_time: int | None
    is_read: bool


class StaleReadIndex:
    def __init__(self, config: DensityConfig) -> None:
        self._config = config
        # Calls as ``_KeptCall``, responses as their outcome: the index keeps no tool's output
        # or written content alive.
        self._calls: dict[str, list[tuple[Position, _KeptCall]]] = {}
        self._responses: dict[str, list[tuple[Position, Outcome]]] = {}
        self._shell = ShellRuns(config.workspace_root)
        self._facts: dict[str, _Facts] = {}
        self._writers: dict[str, set[Position]] = {}  # file -> positions of writes to it
        self._last_write: dict[str, Position] = {}
        self._readers: dict[str, set[str]] = {}  # file -> ids of reads of it
        self._ledger: dict[str, int] = {}
        self._prunable: set[str] = set()
        self._dirty_ids: set[str] = set()
        self._recheck: set[str] = set()

    # -- changes --------------------------------------------------------------------------

    def add(self, key: int, entry: IContent) -> None:
        config = self._config
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock):
                position = (key, j)
                call = (position, self._call(block))
                insort(self._calls.setdefault(block.id, []), call, key=_first)
                self._dirty_ids.add(block.id)
                if block.name in config.shell_tools:
                    command = command_of(block.parameters)
                    if command is not None:
                        cwd = cwd_of(block.parameters) or entry_cwd(entry)
                        self._shell.add(position, block.id, command, cwd)
            elif isinstance(block, ToolResponseBlock):
                answers = self._responses.setdefault(block.call_id, [])
                insort(answers, ((key, j), outcome_of(block)), key=_first)
                self._dirty_ids.add(block.call_id)
                self._shell.touch(block.call_id)

    def _call(self, block: ToolCallBlock) -> _KeptCall:
        config = self._config
        on_files = block.name in config.read_tools or block.name in config.write_tools
        parameters = path_parameters(block.parameters) if on_files else None
        return _KeptCall(block.name, parameters)

    def remove(self, key: int, entry: IContent) -> None:
        config = self._config
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock):
                _discard(self._calls, block.id, (key, j))
                self._dirty_ids.add(block.id)
                if block.name in config.shell_tools and command_of(block.parameters) is not None:
                    self._shell.remove((key, j))
            elif isinstance(block, ToolResponseBlock):
                _discard(self._responses, block.call_id, (key, j))
                self._dirty_ids.add(block.call_id)
                self._shell.touch(block.call_id)

    def set_ledger(self, ledger: Mapping[str, int]) -> None:
        """The writes seen outside the history (``read_write.ledger_of``)."""
        if ledger == self._ledger:
            return
        for path in self._ledger.keys() | ledger.keys():
            if self._ledger.get(path) != ledger.get(path):
                self._recheck.update(self._readers.get(path, ()))
        self._ledger = dict(ledger)

    # -- what to prune --------------------------------------------------------------------

    def drops(self, stamp_of: Callable[[int], int | None]) -> dict[int, set[int]]:
        """Entry key -> block indices to drop: every prunable read, call and responses.

        ``stamp_of(key)``: the timestamp of the entry with that key (a read's time).
        """
        self._settle(stamp_of)
        out: dict[int, set[int]] = {}
        for call_id in self._prunable:
            key, j = self._facts[call_id].position
            out.setdefault(key, set()).add(j)
            for (key, j), _ in self._responses.get(call_id, ()):
                out.setdefault(key, set()).add(j)
        return out

    def _settle(self, stamp_of: Callable[[int], int | None]) -> None:
        changed = self._shell.update(self._shell_succeeded)
        ids = self._dirty_ids | changed
        self._dirty_ids = set()
        files: set[str] = set()
        recheck = self._recheck
        self._recheck = set()
        for call_id in ids:
            old = self._facts.get(call_id)
            new = self._facts_of(call_id, stamp_of)
            if new == old:
                continue
            recheck.add(call_id)
            if old is not None:
                for path in old.writes:
                    _discard_member(self._writers, path, old.position)
                    files.add(path)
                for path in set(old.reads):
                    _discard_member(self._readers, path, call_id)
                del self._facts[call_id]
            if new is not None:
                for path in new.writes:
                    self._writers.setdefault(path, set()).add(new.position)
                    files.add(path)
                for path in set(new.reads):
                    self._readers.setdefault(path, set()).add(call_id)
                self._facts[call_id] = new
        for path in files:
            writers = self._writers.get(path)
            latest = max(writers) if writers else None
            if latest != self._last_write.get(path):
                if latest is None:
                    del self._last_write[path]
                else:
                    self._last_write[path] = latest
                recheck.update(self._readers.get(path, ()))
        for call_id in recheck:
            if self._is_prunable(call_id):
                self._prunable.add(call_id)
            else:
                self._prunable.discard(call_id)

    def _answers(self, call_id: str, position: Position) -> list[tuple[Position, Outcome]]:
        responses = self._responses.get(call_id, [])
        return responses[bisect_left(responses, position, key=_first) :]

    def _shell_succeeded(self, call_id: str, position: Position) -> bool:
        return shell_succeeded([r for p, r in self._answers(call_id, position) if p > position])

    def _facts_of(self, call_id: str, stamp_of: Callable[[int], int | None]) -> _Facts | None:
        """``read_write``'s view of the call with this id, if exactly one call has it and
        it read or wrote a file (the rest need not be kept)."""
        calls = self._calls.get(call_id)
        if calls is None or len(calls) != 1:
            return None
        config = self._config
        position, block = calls[0]
        answers = [(p, r) for p, r in self._answers(call_id, position) if p > position]
        step = self._shell.run_of(call_id)
        run = None
        if step is not None and step.effect is not None:
            run = ShellRun(step.effect, step.succeeded)
        writes: list[str] = []
        if block.name in config.write_tools:
            path = extract_path(block.parameters)
            if path is not None and answered_without_error([r for _, r in answers]):
                writes.append(resolve_path(path, config.workspace_root))
        if run is not None and run.succeeded:
            writes.extend(run.effect.writes)
        written = tuple(dict.fromkeys(writes))
        read = read_of(block, run, config)
        if read is None:
            return _Facts(position, written, (), False, None, False) if written else None
        time = stamp_of(answers[0][0][0]) if answers else None
        if time is None:
            time = stamp_of(position[0])
        return _Facts(position, written, read[0], read[1], time, True)

    def _is_prunable(self, call_id: str) -> bool:
        facts = self._facts.get(call_id)
        if facts is None or not facts.is_read or not facts.only_reads or not facts.reads:
            return False
        return all(
            written_after(p, facts.position, facts.read_time, self._last_write, self._ledger)
            for p in facts.reads
        )


def _discard(index: dict[str, list[tuple[Position, B]]], call_id: str, position: Position) -> None:
    items = index[call_id]
    del items[bisect_left(items, position, key=_first)]
    if not items:
        del index[call_id]


def _discard_member(index: dict[str, set[M]], key: str, item: M) -> None:
    members = index[key]
    members.discard(item)
    if not members:
        del index[key]
