"""READ → WRITE pruning (REQ-HD-005, DESIGN.md decision 11): reads the model no longer needs.

Two rules, by ``DensityConfig.keep_latest_view``:

* the seeds' (off): a read whose files were all written later goes, call and responses
  together, whatever the write was (REQ-HD-005.8);
* keep the latest view (on): a read goes only when every file it showed has a later *view*
  covering what it showed (a later read of the whole file or of a wider range, or a write
  that carries the file's whole content). A read followed only by partial edits stays: it is
  the model's only sight of the file, and an ``Edit`` made without one is made blind. A read
  of a file that changed on disk afterwards (not by a write in the history) becomes a pointer
  saying so, when no later view covers it. And the reads that stay are the current views of
  their files: recency pruning must leave them alone (``protected``).

The whole history matters to the answer (every call, response, shell command and write), but
after a turn almost all of it is what it was. So the pass keeps: calls and responses by id, the
shell walk (``shell_runs.py``), what each call with a unique id wrote, read and showed, and per
file its writes, its views and its readers. A change of entries marks the ids it touches;
settling redoes those ids' facts, the per-file summaries of the files they touched, and the
fate of the reads of those files (and of the files the disk ledger moved on). What a turn costs
is what it touched. The pass keeps no tool output and no written content: calls as their name
and path parameters, responses as their outcome.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import Enum
from operator import itemgetter
from typing import TypeVar

from ..content import IContent, ToolCallBlock, ToolResponseBlock
from ..tools.code_mode import seen_as
from ..tools.files import path_parameters, resolve_path
from ..tools.shell.commands import command_of, cwd_of
from ..tools.summary import DISK_POINTER, covered_parameters, is_covered_input
from .edits import BlockEdit, Edit, Position, Rule, drop
from .file_rules import (
    WHOLE,
    Outcome,
    ShellRun,
    Span,
    answered_without_error,
    entry_cwd,
    outcome_of,
    read_of,
    read_span,
    shell_span,
    shell_succeeded,
    written_after,
    written_files,
)
from .passes import PassContext
from .shell_runs import ShellRuns
from .types import DensityConfig

_first = itemgetter(0)
M = TypeVar("M", str, Position)


@dataclass(frozen=True, slots=True)
class _KeptCall:
    """A tool call as the rules read it (``file_rules.ToolUse``): its name, and of its
    parameters only those that name files, for the read tools; with what part of the file a
    read tool shows, and the files a write tool names and those it carries whole."""

    name: str
    parameters: object
    span: Span = WHOLE
    writes: tuple[str, ...] = ()
    whole_writes: tuple[str, ...] = ()


B = TypeVar("B", _KeptCall, Outcome)


@dataclass(frozen=True, slots=True)
class _Facts:
    """What a call with a unique id did: files written (if it succeeded) and read."""

    position: Position
    name: str
    writes: tuple[str, ...]
    whole_writes: tuple[str, ...]
    """Of ``writes``, those whose whole new content the call shows."""
    time: int | None
    """When the call took effect: its response's entry time, else the call's. A read took
    its content then; a write reached the disk by then."""
    reads: tuple[str, ...]
    spans: tuple[Span, ...]
    """What part of each file of ``reads`` the call showed."""
    only_reads: bool
    is_read: bool
    viewed: bool
    """The read worked and its output is still there: the model can see the content."""


class Fate(Enum):
    DROP = "drop"
    POINT = "point"


@dataclass(frozen=True)
class StaleRead:
    """A read some of whose files were written after it (for reports)."""

    call_id: str
    tool_name: str
    paths: tuple[str, ...]
    stale: tuple[str, ...]
    prunable: bool
    """The pass removes it."""


class StaleReadPass:
    rule: Rule = "readWrite"

    def __init__(self, config: DensityConfig, prune: bool = True) -> None:
        self._config = config
        self._keep_view = config.keep_latest_view
        self._prune = prune  # False: keep track of views for the other passes only
        self._calls: dict[str, list[tuple[Position, _KeptCall]]] = {}
        self._other_calls: dict[str, _KeptCall] = {}
        self._responses: dict[str, list[tuple[Position, Outcome]]] = {}
        self._shell = ShellRuns(config.workspace_root)
        self._facts: dict[str, _Facts] = {}
        self._writers: dict[str, set[str]] = {}  # file -> ids of writes to it
        self._viewers: dict[str, set[str]] = {}  # file -> ids of views of it
        self._readers: dict[str, set[str]] = {}  # file -> ids of reads of it
        self._last_write: dict[str, Position] = {}
        self._last_full: dict[str, Position] = {}  # the latest whole view of each file
        self._tool_write_time: dict[str, int] = {}
        self._first_read: dict[str, int] = {}  # the earliest time a read took each file
        self._ledger: Mapping[str, int] = {}
        self._fates: dict[str, Fate] = {}
        self._protected: set[str] = set()
        self._point_edits: dict[str, Edit] = {}
        self._drop_edits: dict[str, tuple[list[Position], Edit]] = {}
        """The last ``propose``'s drop edits, by read: the same blocks make the same edit
        object again (the schedule then knows it), not a new one each compact."""
        self._drop_moved: set[str] = set()
        """Reads whose call or responses came or went since the last ``propose`` (settled):
        only their drop edits are looked at again."""
        self._covered: set[str] = set()  # write calls a later whole view of their files covers
        self._pointed: set[Position] = set()  # write calls whose content is the pointer already
        self._input_edits: dict[str, Edit | None] = {}
        self._dirty_ids: set[str] = set()
        self._recheck: set[str] = set()

    # -- changes --------------------------------------------------------------------------

    def add(self, key: int, entry: IContent) -> None:
        config = self._config
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock):
                block = seen_as(block)  # a code-mode script as the call it makes
                position = (key, j)
                calls = self._calls.setdefault(block.id, [])
                insort(calls, (position, self._kept(block)), key=_first)
                self._dirty_ids.add(block.id)
                if block.name in config.write_tools:
                    self._recheck.add(block.id)  # pointed or not, its facts may be the same
                    if is_covered_input(block.parameters):
                        self._pointed.add(position)
                if block.name in config.shell_tools and command_of(block.parameters) is not None:
                    self._shell.add(position, block.id)
            elif isinstance(block, ToolResponseBlock):
                answers = self._responses.setdefault(block.call_id, [])
                insort(answers, ((key, j), outcome_of(block)), key=_first)
                self._dirty_ids.add(block.call_id)
                self._shell.touch(block.call_id)

    def _kept(self, block: ToolCallBlock) -> _KeptCall:
        config = self._config
        if block.name in config.read_tools:
            span = read_span(block.name, block.parameters)
            return _KeptCall(block.name, path_parameters(block.parameters), span)
        if block.name in config.write_tools:
            writes, whole = written_files(block.parameters)
            return _KeptCall(block.name, None, writes=writes, whole_writes=whole)
        kept = self._other_calls.get(block.name)
        if kept is None:  # one for all the calls of a tool that names no file
            kept = self._other_calls[block.name] = _KeptCall(block.name, None)
        return kept

    def remove(self, key: int, entry: IContent) -> None:
        config = self._config
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock):
                block = seen_as(block)
                _discard(self._calls, block.id, (key, j))
                self._dirty_ids.add(block.id)
                if block.name in config.write_tools:
                    self._recheck.add(block.id)
                    self._pointed.discard((key, j))
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
        """One edit per read that goes: its call and every response (``DROP``), or its
        output replaced by the disk pointer (``POINT``)."""
        self.settle(context)
        if not self._prune:
            return []
        edits: list[Edit] = []
        for call_id in sorted(self._covered):
            covered = self._input_edit(call_id, context)
            if covered is not None:
                edits.append(covered)
        built = self._drop_edits
        moved = self._drop_moved
        self._drop_edits = drops = {}
        self._drop_moved = set()
        for call_id, fate in self._fates.items():
            if fate is Fate.DROP:
                known = built.get(call_id)
                if known is None or call_id in moved:
                    positions = [self._facts[call_id].position]
                    positions.extend(p for p, _ in self._responses.get(call_id, ()))
                    if known is None or known[0] != positions:
                        known = (positions, drop(self.rule, positions))
                drops[call_id] = known
                edits.append(known[1])
            else:
                edit = self._point_edit(call_id, context)
                if edit is not None:
                    edits.append(edit)
        return edits

    def protected(self) -> frozenset[Position]:
        """The responses of the reads that are the current views of their files: no other
        rule may take their output (keep-latest-view only). Call after ``settle``."""
        out: set[Position] = set()
        for call_id in self._protected:
            position = self._facts[call_id].position
            out.update(p for p, _ in self._responses.get(call_id, ()) if p > position)
        return frozenset(out)

    def _point_edit(self, call_id: str, context: PassContext) -> Edit | None:
        edit = self._point_edits.get(call_id)
        if edit is None:
            position = self._facts[call_id].position
            blocks: list[BlockEdit] = []
            for (key, j), outcome in self._responses.get(call_id, ()):
                if (key, j) > position and not outcome.gone:
                    block = context.entry_of(key).blocks[j]
                    pointed = block.model_copy(update={"result": DISK_POINTER})
                    blocks.append(BlockEdit(key, j, pointed))
            if not blocks:
                return None
            edit = self._point_edits[call_id] = Edit(self.rule, tuple(blocks), informs=True)
        return edit

    def _input_edit(self, call_id: str, context: PassContext) -> Edit | None:
        """A covered write's call with only its path parameters and a pointer (None when it
        holds no more than that already)."""
        if call_id not in self._input_edits:
            key, j = self._facts[call_id].position
            block = context.entry_of(key).blocks[j]
            assert isinstance(block, ToolCallBlock)
            parameters = covered_parameters(block.parameters)
            edit = None
            if parameters != block.parameters and seen_as(block) is block:  # no script rewritten
                pointed = block.model_copy(update={"parameters": parameters})
                edit = Edit(self.rule, (BlockEdit(key, j, pointed),))
            self._input_edits[call_id] = edit
        return self._input_edits[call_id]

    def settle(self, context: PassContext) -> None:
        """Bring the facts up to date with the entries and the ledger given so far."""
        self._set_ledger(context.ledger)
        stamp_of = context.stamp_of
        entry_of = context.entry_of
        changed = self._shell.update(
            self._shell_succeeded, lambda position: _shell_call(entry_of, position)
        )
        ids = self._dirty_ids | changed
        self._dirty_ids = set()
        files: set[str] = set()
        recheck = self._recheck
        self._recheck = set()
        if self._prune:  # (a pass that only follows views proposes nothing)
            self._drop_moved |= ids
        for call_id in ids:
            self._point_edits.pop(call_id, None)
            self._input_edits.pop(call_id, None)
            old = self._facts.get(call_id)
            new = self._facts_of(call_id, stamp_of, entry_of)
            if new == old:
                continue
            recheck.add(call_id)
            if old is not None:
                self._unindex(call_id, old)
                files.update(old.writes, old.reads)
                del self._facts[call_id]
            if new is not None:
                self._index(call_id, new)
                files.update(new.writes, new.reads)
                self._facts[call_id] = new
        for path in files:
            self._summarize(path)
            recheck.update(self._readers.get(path, ()))
            if self._keep_view:
                recheck.update(self._writers.get(path, ()))
        for call_id in recheck:
            self._judge(call_id)

    def _index(self, call_id: str, facts: _Facts) -> None:
        for path in facts.writes:
            self._writers.setdefault(path, set()).add(call_id)
        for path in _views(facts):
            self._viewers.setdefault(path, set()).add(call_id)
        for path in set(facts.reads):
            self._readers.setdefault(path, set()).add(call_id)

    def _unindex(self, call_id: str, facts: _Facts) -> None:
        for path in facts.writes:
            _discard_member(self._writers, path, call_id)
        for path in _views(facts):
            _discard_member(self._viewers, path, call_id)
        for path in set(facts.reads):
            _discard_member(self._readers, path, call_id)

    def _summarize(self, path: str) -> None:
        """Redo what the rules need of one file."""
        facts = self._facts
        writers = self._writers.get(path, ())
        last_write = max((facts[i].position for i in writers), default=None)
        times = [t for i in writers if (t := facts[i].time) is not None]
        tool_time = max(times) if times else None
        read = [t for i in self._readers.get(path, ()) if (t := facts[i].time) is not None]
        full = [
            facts[i].position
            for i in self._viewers.get(path, ())
            if path in facts[i].whole_writes or _span_of(facts[i], path).whole
        ]
        last_full = max(full) if full else None
        _put(self._last_write, path, last_write)
        _put(self._tool_write_time, path, tool_time)
        _put(self._last_full, path, last_full)
        _put(self._first_read, path, min(read) if read else None)

    # -- the rules ------------------------------------------------------------------------

    def _judge(self, call_id: str) -> None:
        """Decide the fate of one read (and whether it is a current view)."""
        self._fates.pop(call_id, None)
        self._protected.discard(call_id)
        self._point_edits.pop(call_id, None)
        self._covered.discard(call_id)
        facts = self._facts.get(call_id)
        if (
            facts is not None
            and self._keep_view
            and facts.position not in self._pointed
            and self._input_covered(facts)
        ):
            self._covered.add(call_id)
        if facts is None or not facts.is_read or not facts.reads:
            return
        if not self._keep_view:
            if facts.only_reads and all(self._written_after(p, facts) for p in facts.reads):
                self._fates[call_id] = Fate.DROP
            return
        covered = [
            self._superseded(p, span, facts)
            for p, span in zip(facts.reads, facts.spans, strict=True)
        ]
        if facts.only_reads and all(covered):
            self._fates[call_id] = Fate.DROP
            return
        if facts.only_reads and facts.viewed:
            on_disk = [self._changed_on_disk(p, facts) for p in facts.reads]
            if any(on_disk) and all(c or d for c, d in zip(covered, on_disk, strict=True)):
                self._fates[call_id] = Fate.POINT
                return
        if facts.viewed and not all(covered):
            self._protected.add(call_id)

    def _input_covered(self, facts: _Facts) -> bool:
        """A write tool's call whose every file has a later whole view: what its parameters
        carry (the old and new text of an edit, a whole file) is shown there as it is now."""
        if facts.is_read or not facts.writes or facts.name not in self._config.write_tools:
            return False
        position = facts.position
        return all(
            (last := self._last_full.get(path)) is not None and last > position
            for path in facts.writes
        )

    def _superseded(self, path: str, span: Span, read: _Facts) -> bool:
        """A later view of ``path`` shows everything ``read`` showed of it."""
        last_full = self._last_full.get(path)
        if last_full is not None and last_full > read.position:
            return True
        if span.whole:
            return False
        for call_id in self._viewers.get(path, ()):
            view = self._facts[call_id]
            if view.position > read.position and _span_of(view, path).covers(span):
                return True
        return False

    def _changed_on_disk(self, path: str, read: _Facts) -> bool:
        """Written outside the history after the read, and no write in the history explains
        it (the agent's own edits reach the disk too, at about their response's time)."""
        on_disk = self._ledger.get(path)
        if on_disk is None or read.time is None or on_disk <= read.time:
            return False
        tool_time = self._tool_write_time.get(path)
        return tool_time is None or on_disk > tool_time

    def _written_after(self, path: str, facts: _Facts) -> bool:
        return written_after(path, facts.position, facts.time, self._last_write, self._ledger)

    # -- reports --------------------------------------------------------------------------

    def read_times(self) -> dict[str, int]:
        """Each file read (resolved), with the earliest time a read took its content: what
        the daemon compares with the files' modification times before a compaction, so a
        write made while no event could arrive is not missed. Call after ``settle``."""
        return dict(self._first_read)

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
                pruned = self._fates.get(call_id) is Fate.DROP
                out.append(StaleRead(call_id, facts.name, facts.reads, stale, pruned))
        return out

    # -- facts of one call ----------------------------------------------------------------

    def _answers(self, call_id: str, position: Position) -> list[tuple[Position, Outcome]]:
        """The responses that came after the call (one before it answers nothing)."""
        responses = self._responses.get(call_id, [])
        after = responses[bisect_left(responses, position, key=_first) :]
        return [r for r in after if r[0] > position]

    def _shell_succeeded(self, call_id: str, position: Position) -> bool:
        return shell_succeeded([r for _, r in self._answers(call_id, position)])

    def _facts_of(
        self,
        call_id: str,
        stamp_of: Callable[[int], int | None],
        entry_of: Callable[[int], IContent],
    ) -> _Facts | None:
        """The rules' view of the call with this id, if exactly one call has it and it read
        or wrote a file (the rest need not be kept)."""
        calls = self._calls.get(call_id)
        if calls is None or len(calls) != 1:
            return None
        config = self._config
        position, block = calls[0]
        answers = self._answers(call_id, position)
        outcomes = [r for _, r in answers]
        step = self._shell.run_of(call_id)
        run = None
        if step is not None and step.effect is not None:
            run = ShellRun(step.effect, step.succeeded)
        writes: list[str] = []
        whole: list[str] = []
        if block.name in config.write_tools and answered_without_error(outcomes):
            root = _tool_root(config.workspace_root, entry_of(position[0]))
            writes.extend(resolve_path(p, root) for p in block.writes)
            whole.extend(resolve_path(p, root) for p in block.whole_writes)
        if run is not None and run.succeeded:
            writes.extend(run.effect.writes)
            whole.extend(run.effect.whole_writes)
        written = tuple(dict.fromkeys(writes))
        # When the call took effect: its response's entry time, else the call's.
        time = stamp_of(answers[0][0][0]) if answers else None
        if time is None:
            time = stamp_of(position[0])
        read = read_of(block, run, config)
        if read is None:
            if not written:
                return None
            return _Facts(
                position, block.name, written, tuple(whole), time, (), (), False, False, False
            )
        paths, only_reads = read
        if run is not None and block.name not in config.read_tools:
            command = _shell_call(entry_of, position)[0]
            full = set(run.effect.full_reads)
            ranges = {p: (low, high) for p, low, high in run.effect.line_ranges}
            spans = tuple(WHOLE if p in full else shell_span(command, ranges.get(p)) for p in paths)
            worked = run.succeeded
        else:
            spans = (block.span,) * len(paths)
            worked = answered_without_error(outcomes)
        viewed = worked and not any(o.gone for o in outcomes)
        return _Facts(
            position,
            block.name,
            written,
            tuple(whole),
            time,
            paths,
            spans,
            only_reads,
            True,
            viewed,
        )


def _shell_call(entry_of: Callable[[int], IContent], position: Position) -> tuple[str, str | None]:
    """A shell call's command and the directory it names, read from its entry (kept by
    ``ShellRuns`` only by position)."""
    key, j = position
    entry = entry_of(key)
    block = entry.blocks[j]
    assert isinstance(block, ToolCallBlock)
    block = seen_as(block)
    command = command_of(block.parameters)
    assert command is not None
    return command, cwd_of(block.parameters) or entry_cwd(entry)


def _tool_root(workspace_root: str, entry: IContent) -> str:
    """Where a write tool's relative paths start: the directory its entry says the agent was
    in (Codex applies a patch in the turn's ``cwd``), else the workspace root."""
    cwd = entry_cwd(entry)
    return workspace_root if cwd is None else resolve_path(cwd, workspace_root)


def _views(facts: _Facts) -> set[str]:
    """The files this call shows the model: the files a read showed, and whole writes."""
    shown = set(facts.reads) if facts.viewed else set()
    return shown | set(facts.whole_writes)


def _span_of(facts: _Facts, path: str) -> Span:
    if path in facts.whole_writes:
        return WHOLE
    for read, span in zip(facts.reads, facts.spans, strict=True):
        if read == path:
            return span
    return Span(False)


V = TypeVar("V", int, Position)


def _put(index: dict[str, V], path: str, value: V | None) -> None:
    if value is None:
        index.pop(path, None)
    else:
        index[path] = value


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
