"""Duplicate ``@file`` inclusion dedup (REQ-HD-006).

When a user ``@``-includes a file, the agent inlines its content into the human message between
a ``--- <path> ---`` line and a ``--- End of content ---`` line. Including the same file again
later makes the earlier copy dead weight: the model should read the newer one. Nothing marks
these segments structurally, so the match is a heuristic and fails safe: a text block whose
marker lines do not pair up exactly is left untouched, and only the segment itself is replaced
by a one-line note; every other character of the message stays (REQ-HD-006.3, 006.5). Only
inclusions in *earlier* human messages go: several inclusions of one file inside the latest
message that has it are the user's own doing and stay.

The pass parses a message once, when it joins, and keeps per file the messages that include
it: a new message moves the latest inclusion of its files on, so only the messages including
those files are looked at again. Once the notes are applied, an earlier message no longer
includes the file, so a file's list stays short.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..content import IContent, TextBlock
from ..tools.files import resolve_path
from .edits import BlockEdit, Edit, Position, Rule
from .passes import PassContext

END_MARKER = "--- End of content ---"

_MARKER = re.compile(r"--- (.+) ---")

# Lines with the marker shape that open no file: gemini-style agents put this header before
# the included files. Seeing it means the block is in a format this pass does not know, so the
# block is left alone rather than mistaken for one inclusion of a file by that name.
_NOT_FILE_MARKERS = frozenset({"Content from referenced files"})


@dataclass(frozen=True)
class Inclusion:
    """One ``--- path ---`` … ``--- End of content ---`` segment of a text.

    ``start`` is where the opening line begins; ``end`` is where the closing line's text ends
    (its line break is not part of the segment, so a replacement keeps the text's line breaks).
    """

    path: str
    start: int
    end: int


def find_inclusions(text: str) -> list[Inclusion] | None:
    """The inclusions of a text in order, or ``None`` when its markers do not pair up.

    Pairing is strict: an opening must be closed before the next opening, and a closing
    needs an opening. Anything else means the text is not what we think it is.
    """
    found: list[Inclusion] = []
    opened: tuple[str, int] | None = None
    offset = 0
    for raw_line in text.split("\n"):
        line = raw_line.removesuffix("\r")
        if line == END_MARKER:
            if opened is None:
                return None
            found.append(Inclusion(opened[0], opened[1], offset + len(line)))
            opened = None
        else:
            match = _MARKER.fullmatch(line)
            if match is not None:
                path = match.group(1).strip()
                if opened is not None or not path or path in _NOT_FILE_MARKERS:
                    return None
                opened = (path, offset)
        offset += len(raw_line) + 1
    return None if opened is not None else found


def omitted_note(path: str) -> str:
    """What stands in for an earlier inclusion; never marker-shaped, so a rerun skips it."""
    return f"[@{path}: earlier inclusion omitted, the file is included again later]"


def replace_inclusions(text: str, stale: Sequence[Inclusion]) -> str:
    """The text with each of the given inclusions (in order) cut to its one-line note."""
    parts: list[str] = []
    cursor = 0
    for inclusion in stale:
        parts.append(text[cursor : inclusion.start])
        parts.append(omitted_note(inclusion.path))
        cursor = inclusion.end
    parts.append(text[cursor:])
    return "".join(parts)


@dataclass(frozen=True, slots=True)
class _Found:
    """The inclusions of one text block, with each one's resolved file."""

    block: int
    inclusions: tuple[Inclusion, ...]
    paths: tuple[str, ...]


_Signature = tuple[tuple[int, tuple[int, ...]], ...]
"""Which inclusions (by start) of which text blocks an edit cuts."""


class FileDedupPass:
    rule: Rule = "fileDedupe"

    def __init__(self, workspace_root: str) -> None:
        self._root = workspace_root
        self._found: dict[int, tuple[_Found, ...]] = {}  # entry key -> its text blocks
        self._includers: dict[str, set[int]] = {}  # file -> keys of messages including it
        self._latest: dict[str, int] = {}
        self._stale: set[int] = set()
        self._dirty: set[str] = set()
        # The note edit of a message, with which inclusions it cuts: built once (it parses
        # the message), kept while the message and the set it cuts stay the same.
        self._edits: dict[int, tuple[_Signature, Edit]] = {}

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
        self._edits.pop(key, None)
        if found is None:
            return
        self._stale.discard(key)
        for path in {p for f in found for p in f.paths}:
            keys = self._includers[path]
            keys.discard(key)
            if not keys:
                del self._includers[path]
            self._dirty.add(path)

    def protected(self) -> frozenset[Position]:
        return frozenset()

    def propose(self, context: PassContext) -> list[Edit]:
        """One edit per message with inclusions that a later message repeats."""
        self._settle()
        return [self._edit(key, context) for key in self._stale]

    def _edit(self, key: int, context: PassContext) -> Edit:
        repeated = {
            found.block: [
                inc
                for inc, path in zip(found.inclusions, found.paths, strict=True)
                if self._latest[path] > key
            ]
            for found in self._found[key]
        }
        signature = tuple(
            (j, tuple(inc.start for inc in incs)) for j, incs in sorted(repeated.items()) if incs
        )
        kept = self._edits.get(key)
        if kept is not None and kept[0] == signature:
            return kept[1]
        entry = context.entry_of(key)
        changes: list[BlockEdit] = []
        for j, incs in sorted(repeated.items()):
            block = entry.blocks[j]
            if incs and isinstance(block, TextBlock):
                text = replace_inclusions(block.text, incs)
                changes.append(BlockEdit(key, j, block.model_copy(update={"text": text})))
        edit = Edit(self.rule, tuple(changes))
        self._edits[key] = (signature, edit)
        return edit

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
