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
* a shell call (``config.shell_tools``) reads or writes only in the plain forms
  ``tools/shell/commands.py`` recognises, in the directory its ``cwd`` parameter or its
  entry's ``metadata.cwd`` names;
  it counts as a write under the same rule as a write tool, and also not when its output
  reports a nonzero exit status; it goes as a read only when it did nothing but read (one
  command, no write) and every file it read is stale;
* a write tool's files are the one its path parameter names, or those of the patch it
  carries (Codex's ``apply_patch``, ``tools/patch.py``).

These are the rules; ``stale_reads.py`` keeps what they need across turns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..content import IContent, ToolResponseBlock
from ..tools.files import extract_path, extract_paths, resolve_path
from ..tools.patch import patch_files, patch_text, patch_writes
from ..tools.shell.commands import ShellEffect, exit_status
from ..tools.summary import is_compact
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
    """All the rules read of a tool response: whether it is an error, the exit status its
    output reports, and whether the output is gone (a pointer or a one-line summary stands
    in for it). The stale-read index keeps this, not the output."""

    error: bool
    exit_status: int | None
    gone: bool = False


_PLAIN = Outcome(False, None)


def outcome_of(response: ToolResponseBlock) -> Outcome:
    error, status = bool(response.error), exit_status(response.result)
    gone = is_compact(response.result)
    return _PLAIN if not error and status is None and not gone else Outcome(error, status, gone)


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


# -- views: what of a file the model can see ------------------------------------------------

RANGE_KEYS: tuple[str, ...] = (
    "offset",
    "limit",
    "start_line",
    "end_line",
    "line_start",
    "line_end",
    "startLine",
    "endLine",
    "view_range",
    "lines",
    "range",
)
"""Parameters that make a read tool show part of a file (Claude Code's ``offset``/``limit``,
gemini-cli's, ``read_line_range``'s…); a read with none of them shows the whole file."""

WHOLE_CONTENT_KEYS: tuple[str, ...] = ("content", "contents", "file_text")
"""A write tool call with one of these (a string) gives the file's whole new content…"""

PARTIAL_WRITE_KEYS: tuple[str, ...] = (
    "old_string",
    "old_str",
    "new_string",
    "edits",
    "diff",
    "line_number",
    "line",
    "insert_line",
    "start_line",
    "offset",
    "cell_id",
)
"""…unless one of these says it changes a part of it (an insertion, a replacement, a cell)."""


@dataclass(frozen=True, slots=True)
class Span:
    """What part of a file one read showed: all of it, or a range (or, when the range cannot
    be compared, the exact parameters or command that asked for it)."""

    whole: bool
    source: str = ""
    """The tool or the command: ranges compare only within one source."""
    low: int | None = None
    high: int | None = None
    """``[low, high)`` in the source's units; ``None`` high: to the end."""
    exact: str = ""

    def covers(self, other: Span) -> bool:
        """Whether a read of this span shows everything a read of ``other`` showed."""
        if self.whole:
            return True
        if other.whole or self.source != other.source:
            return False
        if self.low is not None and other.low is not None:
            ends_after = self.high is None or (other.high is not None and self.high >= other.high)
            return self.low <= other.low and ends_after
        return self.exact == other.exact and bool(self.exact)


WHOLE = Span(whole=True)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_span(name: str, parameters: object) -> Span:
    """The part of its file(s) a read tool call shows."""
    if not isinstance(parameters, Mapping):
        return WHOLE
    given = {k: parameters[k] for k in RANGE_KEYS if parameters.get(k) is not None}
    if not given:
        return WHOLE
    exact = repr(sorted(given.items()))
    offset, limit = _int(given.get("offset")), _int(given.get("limit"))
    if set(given) <= {"offset", "limit"} and (offset is not None or limit is not None):
        low = offset or 0
        return Span(False, name, low, None if limit is None else low + limit, exact)
    start = _int(given.get("start_line", given.get("line_start", given.get("startLine"))))
    end = _int(given.get("end_line", given.get("line_end", given.get("endLine"))))
    if start is not None and len(given) <= 2:
        return Span(False, name, start, None if end is None else end + 1, exact)
    return Span(False, name, exact=exact)


def shell_span(command: str, lines: tuple[int, int | None] | None = None) -> Span:
    """A shell read that shows part of a file (``head``, ``sed -n``…): the lines it showed,
    which a read of a range holding them shows again, when they are a range
    (``ShellEffect.line_ranges``); else only the very same command shows the same part."""
    if lines is None:
        return Span(False, "shell", exact=command)
    return Span(False, "shell", lines[0], lines[1], exact=command)


def writes_whole_content(parameters: object) -> bool:
    """Whether a write tool call carries the file's whole new content (``Write``,
    ``write_file``, ``create_file``…): then the call is itself a full view of the file."""
    if not isinstance(parameters, Mapping):
        return False
    if not any(isinstance(parameters.get(k), str) for k in WHOLE_CONTENT_KEYS):
        return False
    return not any(k in parameters for k in PARTIAL_WRITE_KEYS)


def written_files(parameters: object) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(files a write tool call names, of them those whose whole new content it carries), as
    written, unresolved. One file (``file_path``…), whole when ``writes_whole_content``; or
    the files of a patch (``apply_patch``'s ``input``: ``tools/patch.py``), an added or deleted
    file whole, an updated one not. A patch that cannot be read names none."""
    patch = patch_text(parameters)
    if patch is not None:
        files = patch_files(patch)
        if files is None:
            return (), ()
        done = patch_writes(files)
        return done.paths, done.whole
    path = extract_path(parameters)
    if path is None:
        return (), ()
    return (path,), (path,) if writes_whole_content(parameters) else ()
