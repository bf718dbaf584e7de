"""READ → WRITE pair pruning (REQ-HD-005, REQ-HD-013.5).

A file read that was followed by a write to the same file shows the model content that no
longer exists; worse, it competes with the newer content. Such reads go, call and response
together, and nothing else: only the stale blocks leave their entries (REQ-HD-005.8).

What counts as "followed by a write" is deliberately cautious, because removing a read the
model still needs is worse than keeping a stale one:

* a write tool call counts only once its response has arrived without an error (a failed edit
  did not change the file; a pending one may not happen);
* a write seen on disk (``DensityConfig.external_writes``) counts only when the read has a
  timestamp to order it against;
* a call id used by more than one tool call is ambiguous, so such calls are neither removed
  nor counted as writes;
* a multi-file read goes only when every file it names is stale and none is a glob;
* a shell call (``config.shell_tools``) reads or writes only in the plain forms ``shell.py``
  recognises, in the directory its ``cwd`` parameter or its entry's ``metadata.cwd`` names;
  it counts as a write under the same rule as a write tool, and also not when its output
  reports a nonzero exit status; it goes as a read only when it did nothing but read (one
  command, no write) and every file it read is stale.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..content import IContent, ToolCallBlock, ToolResponseBlock
from ..shell import ShellCall, ShellEffect, command_of, cwd_of, effects_in_order, exit_status
from ..tools import extract_path, extract_paths, resolve_path
from .edits import PassEdits, edits_from_blocks
from .types import DensityConfig

Position = tuple[int, int]
"""(entry index, block index): the order tool calls were made in."""


class ToolUse(Protocol):
    """What the read and write rules read of a tool call (a ToolCallBlock is one)."""

    @property
    def name(self) -> str: ...

    @property
    def parameters(self) -> object: ...


@dataclass(frozen=True)
class _Call:
    position: Position
    block: ToolCallBlock


@dataclass(frozen=True)
class _Response:
    position: Position
    block: ToolResponseBlock


@dataclass(frozen=True)
class ShellRun:
    """A shell call's recognised effect, and whether the call succeeded."""

    effect: ShellEffect
    succeeded: bool


@dataclass(frozen=True)
class StaleRead:
    """A read some of whose files were written after it."""

    call_id: str
    tool_name: str
    paths: tuple[str, ...]
    stale: tuple[str, ...]
    prunable: bool
    """Every file is stale and the call did nothing but read: the pass removes it."""


def prune_stale_reads(history: Sequence[IContent], config: DensityConfig) -> PassEdits:
    """Remove every read tool call (and its responses) whose files were all written later.

    Ignores ``config.read_write_pruning``: whether the pass runs at all is the strategy's
    decision, so the pass can be tested on its own.
    """
    stale, calls, responses = _analyse(history, config)
    drop: dict[int, set[int]] = {}
    for found in stale:
        if not found.prunable:
            continue
        entry, block = calls[found.call_id].position
        drop.setdefault(entry, set()).add(block)
        for response in responses.get(found.call_id, []):
            entry, block = response.position
            drop.setdefault(entry, set()).add(block)

    new_blocks = {
        entry: [b for j, b in enumerate(history[entry].blocks) if j not in blocks]
        for entry, blocks in drop.items()
    }
    return edits_from_blocks(history, new_blocks)


def find_stale_reads(history: Sequence[IContent], config: DensityConfig) -> list[StaleRead]:
    """Every read with at least one file written after it, in call order, and whether the
    pass may remove it. The pass removes exactly the prunable ones; the rest is for reports
    (a read partly stale, a shell command that did more than read)."""
    return _analyse(history, config)[0]


def _analyse(
    history: Sequence[IContent], config: DensityConfig
) -> tuple[list[StaleRead], dict[str, _Call], dict[str, list[_Response]]]:
    """The stale reads, with the call and response indexes they were found with."""
    calls = _unique_calls(history)
    responses = _responses_by_call(history)
    shell = _shell_effects(history, responses, config)
    last_write = _last_writes(calls, responses, shell, config)
    ledger = ledger_of(config)

    out: list[StaleRead] = []
    for call_id, call in calls.items():
        read = read_of(call.block, shell.get(call_id), config)
        if read is None:
            continue
        paths, only_reads = read
        read_time = _read_time(history, call, responses.get(call_id, []))
        stale = tuple(
            p for p in paths if written_after(p, call.position, read_time, last_write, ledger)
        )
        if stale:
            prunable = only_reads and len(stale) == len(paths)
            out.append(StaleRead(call_id, call.block.name, paths, stale, prunable))
    return out, calls, responses


def read_of(
    call: ToolUse, effect: ShellRun | None, config: DensityConfig
) -> tuple[tuple[str, ...], bool] | None:
    """(resolved files read, whether reading was all the call did), or ``None``."""
    if call.name in config.read_tools:
        paths = _read_paths(call, config.workspace_root)
        return None if paths is None else (tuple(paths), True)
    if effect is not None and effect.effect.reads:
        return effect.effect.reads, effect.effect.pure_read
    return None


def _unique_calls(history: Sequence[IContent]) -> dict[str, _Call]:
    """Tool calls by id, leaving out ids that more than one call uses."""
    found: dict[str, _Call] = {}
    repeated: set[str] = set()
    for i, entry in enumerate(history):
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock):
                if block.id in found:
                    repeated.add(block.id)
                else:
                    found[block.id] = _Call((i, j), block)
    for call_id in repeated:
        del found[call_id]
    return found


def _responses_by_call(history: Sequence[IContent]) -> dict[str, list[_Response]]:
    found: dict[str, list[_Response]] = {}
    for i, entry in enumerate(history):
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolResponseBlock):
                found.setdefault(block.call_id, []).append(_Response((i, j), block))
    return found


def _answers(call: _Call, responses: Sequence[_Response]) -> list[_Response]:
    """The responses that came after the call (one before it answers nothing)."""
    return [r for r in responses if r.position > call.position]


def _succeeded(call: _Call, responses: Sequence[_Response]) -> bool:
    return answered_without_error([outcome_of(r.block) for r in _answers(call, responses)])


@dataclass(frozen=True, slots=True)
class Outcome:
    """All the rules read of a tool response: whether it is an error, and the exit status
    its output reports. The incremental index keeps this, not the output."""

    error: bool
    exit_status: int | None


_PLAIN = Outcome(False, None)


def outcome_of(response: ToolResponseBlock) -> Outcome:
    error, status = bool(response.error), exit_status(response.result)
    return _PLAIN if not error and status is None else Outcome(error, status)


def answered_without_error(answers: Sequence[Outcome]) -> bool:
    """Answered, with no error: the one rule for "this write happened"."""
    return bool(answers) and not any(a.error for a in answers)


def shell_succeeded(answers: Sequence[Outcome]) -> bool:
    """A shell call's rule: answered without an error, and no answer reports a failing exit."""
    return answered_without_error(answers) and all(a.exit_status in (None, 0) for a in answers)


def _shell_effects(
    history: Sequence[IContent], responses: dict[str, list[_Response]], config: DensityConfig
) -> dict[str, ShellRun]:
    """The effect of every shell call with a unique id, read in the order the calls ran.

    A call succeeded when it is answered without an error (as a write tool) and no answer
    reports a nonzero exit status. Calls with a repeated id still take part in following
    ``cd`` (as failed calls: their responses cannot be told apart) but get no effect.
    """
    if not config.shell_tools:
        return {}
    found: list[tuple[_Call, str]] = []
    for i, entry in enumerate(history):
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock) and block.name in config.shell_tools:
                command = command_of(block.parameters)
                if command is not None:
                    found.append((_Call((i, j), block), command))
    repeated = {
        call_id for call_id, n in Counter(call.block.id for call, _ in found).items() if n > 1
    }
    runs: list[ShellCall] = []
    for call, command in found:
        answers = _answers(call, responses.get(call.block.id, []))
        ok = call.block.id not in repeated and shell_succeeded(
            [outcome_of(r.block) for r in answers]
        )
        cwd = cwd_of(call.block.parameters) or entry_cwd(history[call.position[0]])
        runs.append(ShellCall(command, cwd, ok))
    effects = effects_in_order(runs, config.workspace_root)
    return {
        call.block.id: ShellRun(effect, run.succeeded)
        for (call, _), run, effect in zip(found, runs, effects, strict=True)
        if effect is not None and call.block.id not in repeated
    }


def entry_cwd(entry: IContent) -> str | None:
    """``metadata.cwd``: where the agent's shell was when it made the entry's calls
    (Claude Code records it; its shell keeps the directory between calls)."""
    extra = entry.metadata.model_extra if entry.metadata is not None else None
    cwd = (extra or {}).get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


def _last_writes(
    calls: dict[str, _Call],
    responses: dict[str, list[_Response]],
    shell: dict[str, ShellRun],
    config: DensityConfig,
) -> dict[str, Position]:
    """Resolved path -> position of the latest write known to have succeeded."""
    latest: dict[str, Position] = {}

    def note(path: str, position: Position) -> None:
        if path not in latest or latest[path] < position:
            latest[path] = position

    for call_id, call in calls.items():
        if call.block.name in config.write_tools:
            path = extract_path(call.block.parameters)
            if path is not None and _succeeded(call, responses.get(call_id, [])):
                note(resolve_path(path, config.workspace_root), call.position)
        run = shell.get(call_id)
        if run is not None and run.succeeded:
            for path in run.effect.writes:
                note(path, call.position)
    return latest


def ledger_of(config: DensityConfig) -> dict[str, int]:
    """Resolved path -> time of the latest write seen outside the history."""
    latest: dict[str, int] = {}
    for write in config.external_writes:
        path = resolve_path(write.path, config.workspace_root)
        latest[path] = max(write.time, latest.get(path, write.time))
    return latest


def _read_paths(call: ToolUse, workspace_root: str) -> list[str] | None:
    """The resolved files a read is about, or ``None`` when it cannot be judged stale."""
    extracted = extract_paths(call.parameters)
    if extracted is None:
        return None
    concrete, has_glob = extracted
    if has_glob or not concrete:
        return None
    return [resolve_path(p, workspace_root) for p in concrete]


def _read_time(
    history: Sequence[IContent], call: _Call, responses: Sequence[_Response]
) -> int | None:
    """When the file content was taken: the response's entry time, else the call's."""
    answers = _answers(call, responses)
    if answers:
        stamp = history[answers[0].position[0]].timestamp
        if stamp is not None:
            return stamp
    return history[call.position[0]].timestamp


def written_after(
    path: str,
    read_at: Position,
    read_time: int | None,
    last_write: dict[str, Position],
    ledger: dict[str, int],
) -> bool:
    written = last_write.get(path)
    if written is not None and written > read_at:
        return True
    on_disk = ledger.get(path)
    return on_disk is not None and read_time is not None and on_disk > read_time
