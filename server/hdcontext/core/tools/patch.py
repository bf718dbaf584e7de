"""Which files an ``apply_patch`` patch adds, updates, deletes or moves: Codex's one write tool.

Codex writes files with a patch of its own format, as a tool call's input (``{"input": …}``, a
custom tool's freeform text) or, in older CLIs, inside a shell call (``apply_patch <<'EOF'`` or
``["apply_patch", "…"]``)::

    *** Begin Patch
    *** Add File: PATH          then the file's lines, each "+…": its whole new content
    *** Update File: PATH       then "*** Move to: NEW" or not, then hunks ("@@ …", " …", "-…",
                                "+…", "*** End of File"): a part of it changed
    *** Delete File: PATH
    *** End Patch

The density rules need only the file list and what each file's part is: an Add File shows the
file whole (a full view of it, DESIGN.md decision 11), an Update File changes a part, a Delete
File leaves nothing of it to see. The list is read as Codex's own parser reads it: the patch
trimmed, header lines trimmed, an Add File's lines each opening with ``+``; the heredoc wrapper
Codex strips (``<<'EOF'`` … ``EOF``) is stripped. Any other line where a header must be makes
the whole patch unread (``None``): Codex refused that patch too, and a write read into it would
prune a read the model still needs. A path is only ever a header's own text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, TypeAlias

BEGIN = "*** Begin Patch"
END = "*** End Patch"
ADD = "*** Add File: "
UPDATE = "*** Update File: "
DELETE = "*** Delete File: "
MOVE = "*** Move to: "
END_OF_FILE = "*** End of File"
PATCH_KEYS: tuple[str, ...] = ("input", "patch")
"""The parameters a patch comes in: a freeform tool's input (Codex's ``custom_tool_call``, and
``apply_patch`` offered as a function), or a ``patch`` of other agents' tools."""

Action: TypeAlias = Literal["add", "update", "delete"]
_HEADERS: tuple[tuple[str, Action], ...] = ((ADD, "add"), (UPDATE, "update"), (DELETE, "delete"))
_MARKER: dict[Action, str] = {action: marker for marker, action in _HEADERS}
_HEREDOC_OPENERS = ("<<EOF", "<<'EOF'", '<<"EOF"')


@dataclass(frozen=True, slots=True)
class PatchFile:
    action: Action
    path: str
    move_to: str | None = None
    """An Update File's new name: the file at ``path`` is gone, ``move_to`` holds it, changed."""


@dataclass(frozen=True, slots=True)
class PatchWrites:
    """What a patch did to files, in the rules' words."""

    paths: tuple[str, ...]
    """Every file it wrote, added, deleted, or moved from or to, as the patch names it."""
    whole: tuple[str, ...]
    """Of ``paths``, those the patch shows whole afterwards: added (its every line is in the
    patch) or deleted (nothing is left), when no later part of the patch changes them."""


def patch_text(parameters: object) -> str | None:
    """The patch a tool call's parameters carry, when one of ``PATCH_KEYS`` holds one."""
    if not isinstance(parameters, Mapping):
        return None
    for key in PATCH_KEYS:
        value = parameters.get(key)
        if isinstance(value, str) and _body(value) is not None:
            return value
    return None


def patch_files(text: str) -> tuple[PatchFile, ...] | None:
    """The files a patch names, in its order; ``None`` when ``text`` is not a patch Codex
    would apply (no ``*** Begin Patch`` … ``*** End Patch``, a line that is no header where one
    must be, a header without a path)."""
    lines = _body(text)
    if lines is None:
        return None
    files: list[PatchFile] = []
    i, n = 0, len(lines)
    while i < n:
        header = _header(lines[i])
        if header is None:
            return None
        action, path = header
        i += 1
        if action == "add":
            while i < n and lines[i].startswith("+"):
                i += 1
            files.append(PatchFile("add", path))
        elif action == "delete":
            files.append(PatchFile("delete", path))
        else:
            move_to = None
            if i < n and lines[i].startswith(MOVE):
                move_to = lines[i][len(MOVE) :].strip()
                if not move_to:
                    return None
                i += 1
            while i < n and (lines[i].strip() == END_OF_FILE or not lines[i].startswith("***")):
                if not _is_hunk_line(lines[i]):
                    return None
                i += 1
            files.append(PatchFile("update", path, move_to))
    return tuple(files) if files else None


def patch_writes(files: Sequence[PatchFile]) -> PatchWrites:
    """Each file's last state after the patch: shown whole (added, deleted) or changed in part
    (updated; moved away from, or to)."""
    state: dict[str, bool] = {}  # path -> shown whole, in the order first named
    for f in files:
        if f.move_to is not None:
            state[f.path] = False  # its content lives on, changed, under the new name
            state[f.move_to] = False
        else:
            state[f.path] = f.action != "update"
    return PatchWrites(tuple(state), tuple(p for p, whole in state.items() if whole))


def headers_only(text: str) -> str | None:
    """The patch with its headers and nothing else: the same file list (``patch_files``), none
    of the content. What stands for a patch whose content a later view of its files shows."""
    files = patch_files(text)
    if files is None:
        return None
    lines = [BEGIN]
    for f in files:
        lines.append(_MARKER[f.action] + f.path)
        if f.move_to is not None:
            lines.append(f"{MOVE}{f.move_to}")
    lines.append(END)
    return "\n".join(lines)


def _body(text: str) -> list[str] | None:
    """The lines between ``*** Begin Patch`` and ``*** End Patch``, or ``None``."""
    # Lines as Codex splits them (Rust's ``lines``): at "\n" only, a "\r" before it dropped. A
    # split at Python's other line breaks (U+2028…) would turn an added line into a header.
    lines = [line.removesuffix("\r") for line in text.strip().split("\n")]
    if len(lines) >= 4 and lines[0].strip() in _HEREDOC_OPENERS and lines[-1].strip() == "EOF":
        lines = lines[1:-1]
    if len(lines) < 2 or lines[0].strip() != BEGIN or lines[-1].strip() != END:
        return None
    return lines[1:-1]


def _header(line: str) -> tuple[Action, str] | None:
    trimmed = line.strip()
    for marker, action in _HEADERS:
        if trimmed.startswith(marker):
            path = trimmed[len(marker) :].strip()
            return (action, path) if path else None
    return None


def _is_hunk_line(line: str) -> bool:
    """A line of an Update File's hunks: a change, context, a hunk's ``@@``, the end-of-file
    mark or a blank line."""
    return (
        not line.strip() or line[0] in " +-" or line.startswith("@@") or line.strip() == END_OF_FILE
    )
