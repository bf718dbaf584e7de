"""What a tool call read and wrote, and when a read went stale (REQ-HD-005, REQ-HD-013.5).

A file read that a later write made stale shows the model content that no longer exists. What
counts as "a later write" is deliberately cautious, because removing a read the model still
needs is worse than keeping a stale one:

* a write tool call counts only once its response has arrived without an error (a failed edit
  did not change the file; a pending one may not happen);
* a write seen on disk counts only when the read has a timestamp to order it against;
* a call id used by more than one tool call is ambiguous, so such calls are neither removed
  nor counted as writes;
* a multi-file read goes only when every file it names is stale and none is a glob;
* a shell call (``config.shell_tools``) reads or writes only in the plain forms ``shell.py``
  recognises, in the directory its ``cwd`` parameter or its entry's ``metadata.cwd`` names;
  it counts as a write under the same rule as a write tool, and also not when its output
  reports a nonzero exit status; it goes as a read only when it did nothing but read (one
  command, no write) and every file it read is stale.

These are the rules; ``stale_reads.py`` keeps what they need across turns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..content import IContent, ToolResponseBlock
from ..shell import ShellEffect, exit_status
from ..tools import extract_paths, resolve_path
from .edits import Position
from .types import DensityConfig


class ToolUse(Protocol):
    """What the read and write rules read of a tool call (a ToolCallBlock is one)."""

    @property
    def name(self) -> str: ...

    @property
    def parameters(self) -> object: ...


@dataclass(frozen=True)
class ShellRun:
    """A shell call's recognised effect, and whether the call succeeded."""

    effect: ShellEffect
    succeeded: bool


@dataclass(frozen=True, slots=True)
class Outcome:
    """All the rules read of a tool response: whether it is an error, and the exit status
    its output reports. The stale-read index keeps this, not the output."""

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


def entry_cwd(entry: IContent) -> str | None:
    """``metadata.cwd``: where the agent's shell was when it made the entry's calls
    (Claude Code records it; its shell keeps the directory between calls)."""
    extra = entry.metadata.model_extra if entry.metadata is not None else None
    cwd = (extra or {}).get("cwd")
    return cwd if isinstance(cwd, str) and cwd else None


def ledger_of(config: DensityConfig) -> dict[str, int]:
    """Resolved path -> time of the latest write seen outside the history."""
    latest: dict[str, int] = {}
    for write in config.external_writes:
        path = resolve_path(write.path, config.workspace_root)
        latest[path] = max(write.time, latest.get(path, write.time))
    return latest


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


def _read_paths(call: ToolUse, workspace_root: str) -> list[str] | None:
    """The resolved files a read is about, or ``None`` when it cannot be judged stale."""
    extracted = extract_paths(call.parameters)
    if extracted is None:
        return None
    concrete, has_glob = extracted
    if has_glob or not concrete:
        return None
    return [resolve_path(p, workspace_root) for p in concrete]


def written_after(
    path: str,
    read_at: Position,
    read_time: int | None,
    last_write: Mapping[str, Position],
    ledger: Mapping[str, int],
) -> bool:
    written = last_write.get(path)
    if written is not None and written > read_at:
        return True
    on_disk = ledger.get(path)
    return on_disk is not None and read_time is not None and on_disk > read_time
