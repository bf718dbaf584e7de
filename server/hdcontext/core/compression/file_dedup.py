"""Duplicate ``@file`` inclusion dedup (REQ-HD-006).

When a user ``@``-includes a file, the agent inlines its content into the human message between
a ``--- <path> ---`` line and a ``--- End of content ---`` line. Including the same file again
later makes the earlier copy dead weight: the model should read the newer one. Nothing marks
these segments structurally, so the match is a heuristic and fails safe: a text block whose
marker lines do not pair up exactly is left untouched, and only the segment itself is replaced
by a one-line note; every other character of the message stays (REQ-HD-006.3, 006.5).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..content import Block, IContent, TextBlock
from ..tools import resolve_path
from .edits import PassEdits, edits_from_blocks

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


def dedupe_file_inclusions(history: Sequence[IContent], workspace_root: str) -> PassEdits:
    """Replace each inclusion that a later human message includes again with a note.

    Only inclusions in *earlier* human messages go: several inclusions of one file inside the
    latest message that has it are the user's own doing and stay.
    """
    parsed: dict[tuple[int, int], list[Inclusion]] = {}
    latest: dict[str, int] = {}
    for i, entry in enumerate(history):
        if entry.speaker != "human":
            continue
        for j, block in enumerate(entry.blocks):
            if not isinstance(block, TextBlock):
                continue
            inclusions = find_inclusions(block.text)
            if not inclusions:
                continue
            parsed[(i, j)] = inclusions
            for inclusion in inclusions:
                latest[resolve_path(inclusion.path, workspace_root)] = i

    new_blocks: dict[int, list[Block]] = {}
    for (i, j), inclusions in parsed.items():
        stale = [inc for inc in inclusions if latest[resolve_path(inc.path, workspace_root)] > i]
        if not stale:
            continue
        blocks = new_blocks.setdefault(i, list(history[i].blocks))
        text_block = blocks[j]
        assert isinstance(text_block, TextBlock)
        blocks[j] = text_block.model_copy(
            update={"text": replace_inclusions(text_block.text, stale)}
        )
    return edits_from_blocks(history, new_blocks)


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
