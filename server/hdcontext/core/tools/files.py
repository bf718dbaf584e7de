"""Which tool calls read or write which files: pure helpers shared by the density passes.

A tool's parameters are arbitrary JSON that the model produced; anything that is not the shape
we expect is skipped, never an error (REQ-HD-013.5).
"""

from __future__ import annotations

import ntpath
import posixpath
import re
from collections.abc import Mapping, Sequence

from ..content import IContent, ToolCallBlock, ToolResponseBlock

# REQ-HD-005.4: these three first, in this order; then keys other agents use for one file
# (Claude Code's NotebookEdit, opencode's camelCase tools).
PATH_KEYS: tuple[str, ...] = ("file_path", "absolute_path", "path", "notebook_path", "filePath")

# REQ-HD-005.9: an entry of a many-file read's list with one of these is a pattern, not a
# file. A single-file tool's path is always a file: ``app/[slug]/page.tsx`` is a Next.js route.
GLOB_CHARS = frozenset("*?[{")

MULTI_PATH_KEYS: tuple[str, ...] = ("paths", "file_paths")

COMMAND_KEYS: tuple[str, ...] = ("command", "cmd")

# Parameters worth naming when a tool's output is summarized (REQ-HD-008.3).
KEY_PARAM_KEYS: tuple[str, ...] = (
    *PATH_KEYS,
    *COMMAND_KEYS,
    "pattern",
    "query",
    "url",
    "description",
)


def extract_path(parameters: object) -> str | None:
    """The file a single-file tool call is about, from the first path key present."""
    if not isinstance(parameters, Mapping):
        return None
    for key in PATH_KEYS:
        if key in parameters:
            value = parameters[key]
            return value if isinstance(value, str) and value else None
    return None


def extract_paths(parameters: object) -> tuple[list[str], bool] | None:
    """A multi-file read's concrete paths and whether any entry was a glob.

    ``None`` when the parameters have no usable list of paths.
    """
    if not isinstance(parameters, Mapping):
        return None
    for key in MULTI_PATH_KEYS:
        value = parameters.get(key)
        if isinstance(value, Sequence) and not isinstance(value, str):
            concrete: list[str] = []
            has_glob = False
            for item in value:
                if not isinstance(item, str) or not item:
                    has_glob = True  # unknown shape: cannot be sure what was read
                elif is_glob(item):
                    has_glob = True
                else:
                    concrete.append(item)
            return concrete, has_glob
    single = extract_path(parameters)
    if single is None:
        return None
    return [single], False


def path_parameters(parameters: object) -> object:
    """Only what ``extract_path`` and ``extract_paths`` read of a call's parameters: they
    give the same answers for it, and an index can keep it without the rest (a written
    file's whole content, say)."""
    if not isinstance(parameters, Mapping):
        return None
    return {k: parameters[k] for k in (*PATH_KEYS, *MULTI_PATH_KEYS) if k in parameters}


def is_glob(path: str) -> bool:
    """Whether an entry of a many-file read's list is a pattern (never asked of one path)."""
    return any(ch in GLOB_CHARS for ch in path)


# A drive (``C:\``, ``c:/``) or a UNC share (``\\server\share``) starts a Windows path.
_WINDOWS_ABSOLUTE = re.compile(r"^(?:[A-Za-z]:[\\/]|\\\\[^\\/]+[\\/])")


def is_windows_path(path: str) -> bool:
    """An absolute Windows path: one on a drive letter or a UNC share."""
    return _WINDOWS_ABSOLUTE.match(path) is not None


def is_absolute(path: str) -> bool:
    r"""Absolute on either kind of system: ``/…``, ``C:\…``, ``\\server\share\…``."""
    return posixpath.isabs(path) or is_windows_path(path)


def resolve_path(path: str, workspace_root: str) -> str:
    r"""Like Node's ``path.resolve(root, p)``: absolute and normalized, no case folding,
    no symlink resolution (REQ-HD-005.5, REQ-HD-005.11).

    Windows paths resolve as Node's ``path.win32`` would: a session recorded on Windows has
    ``C:\Users\…`` paths and a ``C:\…`` root, and a relative path joins that root with
    backslashes. Drive letters keep their case: paths are still compared exactly.
    """
    if is_windows_path(path):
        return ntpath.normpath(path)
    if is_windows_path(workspace_root) and not posixpath.isabs(path):
        return ntpath.normpath(ntpath.join(workspace_root, path))
    if not posixpath.isabs(path) and workspace_root:
        path = posixpath.join(workspace_root, path)
    normalized = posixpath.normpath(path)
    # POSIX keeps a leading '//' as is; Node's resolve collapses it.
    if normalized.startswith("//"):
        normalized = "/" + normalized.lstrip("/")
    return normalized


def key_parameter(parameters: object) -> str | None:
    """The one parameter that says what a call was about, for one-line summaries."""
    if not isinstance(parameters, Mapping):
        return None
    for key in KEY_PARAM_KEYS:
        value = parameters.get(key)
        if isinstance(value, str) and value:
            return value
    multi = extract_paths(parameters)
    if multi and multi[0]:
        return ", ".join(multi[0])
    return None


def tool_calls(entry: IContent) -> list[ToolCallBlock]:
    return [b for b in entry.blocks if isinstance(b, ToolCallBlock)]


def tool_responses(entry: IContent) -> list[ToolResponseBlock]:
    return [b for b in entry.blocks if isinstance(b, ToolResponseBlock)]


def read_times(
    history: Sequence[IContent], read_tools: frozenset[str], workspace_root: str
) -> dict[str, int]:
    """Each file the history read (resolved), with the earliest timestamp of a read of it.

    The session keeps this across turns (``read_log.py``); this is the whole-history form,
    which the daemon's watcher settles against the files' modification times.
    """
    earliest: dict[str, int] = {}
    for entry in history:
        stamp = entry.timestamp
        if stamp is None:
            continue
        for resolved in entry_reads(entry, read_tools, workspace_root):
            if stamp < earliest.get(resolved, stamp + 1):
                earliest[resolved] = stamp
    return earliest


def entry_reads(entry: IContent, read_tools: frozenset[str], workspace_root: str) -> list[str]:
    """The files (resolved) the read tool calls of one entry name, globs left out."""
    out: list[str] = []
    for block in entry.blocks:
        if not isinstance(block, ToolCallBlock) or block.name not in read_tools:
            continue
        extracted = extract_paths(block.parameters)
        if extracted is None:
            continue
        out.extend(resolve_path(path, workspace_root) for path in extracted[0])
    return out
