"""Where a Gemini CLI session ran (its workspace root), from what the CLI itself wrote.

Relative paths in tool calls resolve against the root, and the density rules compare files by
resolved path, so a root that is only a guess would do harm; each answer here is one the CLI
wrote down:

* the context preamble the CLI opens a conversation with names the folder: "I'm currently
  working in the directory: …" (2025's CLIs), "- **Workspace Directories:**" and a list (later
  ones, inside ``<session_context>``); a ``/chat save`` checkpoint has only this;
* a chat recording names its project by ``projectHash``, the SHA-256 of the project root's
  path, and older recordings have no preamble: the root is then the absolute path mentioned in
  the session (a tool's argument, a command, a message), or the ancestor of one, whose hash is
  the project's. A session that mentions no path of its project has no root here.
"""

from __future__ import annotations

import hashlib
import ntpath
import posixpath
import re
from collections.abc import Iterable

_WORKING_IN = re.compile(r"I'm currently working in the directory: *([^\n]+)")
_WORKSPACE_LIST = re.compile(r"- \*\*Workspace Directories:\*\*\n +- ([^\n]+)")
# An absolute path as it stands in text: POSIX from a slash not glued to a word before it,
# Windows from a drive letter (JSON escapes its backslashes, so both spellings are read).
_POSIX_PATH = re.compile(r"(?<![\w.~/\\])/[\w.@+~-]+(?:/[\w.@+~-]+)*")
_WINDOWS_PATH = re.compile(r"(?<![\w])[A-Za-z]:(?:\\{1,2}[\w.@+~ -]+)+")
_MAX_CANDIDATES = 20_000
"""Folders tried against the hash at most: enough for any session, bounded for any input."""


def preamble_root(text: str) -> str | None:
    """The folder a CLI context preamble names, when ``text`` is one."""
    for pattern in (_WORKING_IN, _WORKSPACE_LIST):
        found = pattern.search(text)
        if found is not None:
            root = found.group(1).strip()
            if root:
                return root
    return None


def hashed_root(project_hash: str, texts: Iterable[str]) -> str | None:
    """The folder, among the absolute paths in ``texts`` and their ancestors, whose SHA-256
    is ``project_hash``; ``None`` when none is."""
    wanted = project_hash.lower()
    tried: set[str] = set()
    for text in texts:
        for folder in _folders(text):
            if folder in tried:
                continue
            if len(tried) >= _MAX_CANDIDATES:
                return None
            tried.add(folder)
            if hashlib.sha256(folder.encode("utf-8", "surrogatepass")).hexdigest() == wanted:
                return folder
    return None


def _folders(text: str) -> Iterable[str]:
    """Every absolute path in ``text``, then each of its ancestors, root excluded."""
    for match in _POSIX_PATH.finditer(text):
        path = match.group(0).rstrip("/.")
        while path not in ("", "/"):
            yield path
            path = posixpath.dirname(path)
    for match in _WINDOWS_PATH.finditer(text):
        path = match.group(0).replace("\\\\", "\\").rstrip("\\ .")
        while path and not path.endswith(":") and ntpath.dirname(path) != path:
            yield path
            path = ntpath.dirname(path)
