"""READ → WRITE pruning (REQ-HD-005): a read whose files were all written later goes, call and
responses together, and nothing else (REQ-HD-005.8). The rules are ``file_rules.py``'s.

The whole history matters to the answer (every call, response, shell command and write), but
after a turn almost all of it is what it was. So the pass keeps: calls and responses by id,
the shell walk (``shell_runs.py``), what each call with a unique id wrote and read, the latest
write of each file, the readers of each file, and the disk ledger. A change of entries marks
the ids it touches; settling redoes those ids' facts, the latest write of the files they wrote,
and the staleness of the reads of those files (and of the files the ledger moved on). The
prunable reads are kept as a set, so what a turn costs is what it touched.

The pass keeps no tool output and no written content: calls as their name and path
parameters, responses as their outcome.
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
from .edits import Edit, Position, Rule, drop
from .file_rules import (
    Outcome,
    ShellRun,
    answered_without_error,
    entry_cwd,
    outcome_of,
    read_of,
    shell_succeeded,
    written_after,
)
from .passes import PassContext
from .shell_runs import ShellRuns
from .types import DensityConfig

_first = itemgetter(0)
M = TypeVar("M", str, Position)


@dataclass(frozen=True, slots=True)
class _KeptCall:
    """A tool call as the rules read it (``file_rules.ToolUse``): its name, and of its
    parameters only those that name files, for the tools that read or write files."""

    name: str
    parameters: object


B = TypeVar("B", _KeptCall, Outcome)


@dataclass(frozen=True, slots=True)
class _Facts:
    """What a call with a unique id did: files written (if it succeeded) and read."""

    position: Position
    name: str
    writes: tuple[str, ...]
    reads: tuple[str, ...]
    only_reads: bool
    read_time: int | None
    is_read: bool


@dataclass(frozen=True)
class StaleRead:
    """A read some of whose files were written after it (for reports)."""

    call_id: str
    tool_name: str
    paths: tuple[str, ...]
    stale: tuple[str, ...]
    prunable: bool
    """Every file is stale and the call did nothing but read: the pass removes it."""


class StaleReadPass:
    rule: Rule = "readWrite"

    def __init__(self, config: DensityConfig) -> None:
        self._config = config
        self._calls: dict[str, list[tuple[Position, _KeptCall]]] = {}
        self._responses: dict[str, list[tuple[Position, Outcome]]] = {}
        self._shell = ShellRuns(config.workspace_root)
        self._facts: dict[str, _Facts] = {}
        self._writers: dict[str, set[Position]] = {}  # file -> positions of writes to it
        self._last_write: dict[str, Position] = {}
        self._readers: dict[str, set[str]] = {}  # file -> ids of reads of it
        self._ledger: Mapping[str, int] = {}
        self._prunable: set[str] = set()
        self._dirty_ids: set[str] = set()
        self._recheck: set[str] = set()

    # -- changes --------------------------------------------------------------------------

    def add(self, key: int, entry: IContent) -> None:
        config = self._config
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock):
                position = (key, j)
                insort(
                    self._calls.setdefault(block.id, []), (position, self._kept(block)), key=_first
                )
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

    def _kept(self, block: ToolCallBlock) -> _KeptCall:
        config = self._config
        on_files = block.name in config.read_tools or block.name in config.write_tools
        return _KeptCall(block.name, path_parameters(block.parameters) if on_files else None)

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

    def _set_ledger(self, ledger: Mapping[str, int]) -> None:
        if ledger == self._ledger:
            return
        for path in self._ledger.keys() | ledger.keys():
            if self._ledger.get(path) != ledger.get(path):
                self._recheck.update(self._readers.get(path, ()))
        self._ledger = dict(ledger)

    # -- what to prune --------------------------------------------------------------------

    def propose(self, context: PassContext) -> list[Edit]:
        """One edit per prunable read: its call and every response to it."""
        self.settle(context)
        edits: list[Edit] = []
        for call_id in self._prunable:
            positions = [self._facts[call_id].position]
            positions.extend(p for p, _ in self._responses.get(call_id, ()))
            edits.append(drop(self.rule, positions))
        return edits

    def settle(self, context: PassContext) -> None:
        """Bring the facts up to date with the entries and the ledger given so far."""
        self._set_ledger(context.ledger)
        stamp_of = context.stamp_of
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

    def read_times(self) -> dict[str, int]:
        """Each file read (resolved), with the earliest time a read took its content: what
        the daemon compares with the files' modification times before a compaction, so a
        write made while no event could arrive is not missed. Call after ``settle``."""
        earliest: dict[str, int] = {}
        for path, readers in self._readers.items():
            times = [t for call_id in readers if (t := self._facts[call_id].read_time) is not None]
            if times:
                earliest[path] = min(times)
        return earliest

    def report(self) -> list[StaleRead]:
        """Every read with at least one file written after it, in call order, and whether the
        pass prunes it (the rest is for reports: a read partly stale, a shell command that
        did more than read). Call after ``settle``."""
        out: list[StaleRead] = []
        for call_id, facts in sorted(self._facts.items(), key=lambda item: item[1].position):
            if not facts.is_read:
                continue
            stale = tuple(p for p in facts.reads if self._written_after(p, facts))
            if stale:
                out.append(
                    StaleRead(call_id, facts.name, facts.reads, stale, call_id in self._prunable)
                )
        return out

    def _answers(self, call_id: str, position: Position) -> list[tuple[Position, Outcome]]:
        """The responses that came after the call (one before it answers nothing)."""
        responses = self._responses.get(call_id, [])
        return [
            r for r in responses[bisect_left(responses, position, key=_first) :] if r[0] > position
        ]

    def _shell_succeeded(self, call_id: str, position: Position) -> bool:
        return shell_succeeded([r for _, r in self._answers(call_id, position)])

    def _facts_of(self, call_id: str, stamp_of: Callable[[int], int | None]) -> _Facts | None:
        """The rules' view of the call with this id, if exactly one call has it and it read
        or wrote a file (the rest need not be kept)."""
        calls = self._calls.get(call_id)
        if calls is None or len(calls) != 1:
            return None
        config = self._config
        position, block = calls[0]
        answers = self._answers(call_id, position)
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
            if not written:
                return None
            return _Facts(position, block.name, written, (), False, None, False)
        # When the content was taken: the response's entry time, else the call's.
        time = stamp_of(answers[0][0][0]) if answers else None
        if time is None:
            time = stamp_of(position[0])
        return _Facts(position, block.name, written, read[0], read[1], time, True)

    def _written_after(self, path: str, facts: _Facts) -> bool:
        return written_after(path, facts.position, facts.read_time, self._last_write, self._ledger)

    def _is_prunable(self, call_id: str) -> bool:
        facts = self._facts.get(call_id)
        if facts is None or not facts.is_read or not facts.only_reads or not facts.reads:
            return False
        return all(self._written_after(p, facts) for p in facts.reads)


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
