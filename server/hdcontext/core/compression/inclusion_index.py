"""Duplicate ``@file`` inclusion dedup (``file_dedup.py``) kept up to date across turns.

``dedupe_file_inclusions`` parses every human message after every turn. This index parses a
message once, when it joins the history, and keeps, per file, the messages that include it:
an inclusion is stale when a later message includes the same file. A new message moves the
latest inclusion of its files on, so only the messages that include those files are looked
at again. Once the session has applied the notes, an earlier message no longer includes the
file, so a file's list is short.

Pass 1 (stale reads) drops tool blocks only, never text, so the messages with inclusions and
their order are the same before and after it: the index can work on the history as it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..content import IContent, TextBlock
from ..tools import resolve_path
from .file_dedup import Inclusion, find_inclusions


@dataclass(frozen=True, slots=True)
class _Found:
    """The inclusions of one text block, with each one's resolved file."""

    block: int
    inclusions: tuple[Inclusion, ...]
    paths: tuple[str, ...]


class InclusionIndex:
    def __init__(self, workspace_root: str) -> None:
        self._root = workspace_root
        self._found: dict[int, tuple[_Found, ...]] = {}  # entry key -> its text blocks
        self._includers: dict[str, set[int]] = {}  # file -> keys of messages including it
        self._latest: dict[str, int] = {}
        self._stale: set[int] = set()
        self._dirty: set[str] = set()

    def add(self, key: int, entry: IContent) -> None:
        if entry.speaker != "human":
            return
        found: list[_Found] = []
        for j, block in enumerate(entry.blocks):
            if isinstance(block, TextBlock):
                inclusions = find_inclusions(block.text)
                if inclusions:
                    paths = tuple(resolve_path(inc.path, self._root) for inc in inclusions)
                    found.append(_Found(j, tuple(inclusions), paths))
        if not found:
            return
        self._found[key] = tuple(found)
        for path in {p for f in found for p in f.paths}:
            self._includers.setdefault(path, set()).add(key)
            self._dirty.add(path)

    def remove(self, key: int, entry: IContent) -> None:
        found = self._found.pop(key, None)
        if found is None:
            return
        self._stale.discard(key)
        for path in {p for f in found for p in f.paths}:
            keys = self._includers[path]
            keys.discard(key)
            if not keys:
                del self._includers[path]
            self._dirty.add(path)

    def stale(self) -> dict[int, dict[int, list[Inclusion]]]:
        """Entry key -> text block index -> the inclusions a later message repeats."""
        self._settle()
        out: dict[int, dict[int, list[Inclusion]]] = {}
        for key in self._stale:
            blocks: dict[int, list[Inclusion]] = {}
            for found in self._found[key]:
                repeated = [
                    inc
                    for inc, path in zip(found.inclusions, found.paths, strict=True)
                    if self._latest[path] > key
                ]
                if repeated:
                    blocks[found.block] = repeated
            out[key] = blocks
        return out

    def _settle(self) -> None:
        recheck: set[int] = set()
        for path in self._dirty:
            keys = self._includers.get(path)
            if keys:
                self._latest[path] = max(keys)
                recheck.update(keys)
            else:
                self._latest.pop(path, None)
        self._dirty = set()
        for key in recheck:
            if any(self._latest[p] > key for f in self._found[key] for p in f.paths):
                self._stale.add(key)
            else:
                self._stale.discard(key)
