"""JSON Lines as log tools read them: a line that is not a JSON object is skipped, and one
warning a file says how many were, what share of the file's bytes they held and which, unless
the caller asks for strictness.

An agent writes its log line by line while it runs; a crash, a full disk or two writers can
leave one line cut short or two records on one line. Rejecting the whole session for that
loses everything else in it, so by default the bad line goes and the warning says which. A
file damaged throughout (a redaction tool that cut most lines) gives one warning too, not one a
line, and its share of bytes says how much of the conversation is missing.

A log cut short can end inside a multi-byte UTF-8 character; :func:`decode` reads such a file
up to the cut, so its last line is a damaged line like any other rather than the whole file
being refused as not UTF-8.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..conversation import FormatError

SHOWN_LINES = 5
"""How many skipped lines the warning names."""


@dataclass(frozen=True)
class Skipped:
    """The lines of a file that were not JSON records: their numbers, the bytes they held
    (newlines included) against the file's, and why the first one was skipped."""

    lines: tuple[int, ...]
    line_count: int
    """The file's non-blank lines."""
    skipped_bytes: int
    total_bytes: int
    first_problem: str

    @property
    def share(self) -> float:
        return self.skipped_bytes / self.total_bytes if self.total_bytes else 0.0

    def describe(self) -> str:
        """``3 of 120 lines (4.2% of the file's bytes)``."""
        return (
            f"{len(self.lines)} of {self.line_count} line{'s' if self.line_count != 1 else ''} "
            f"({percent(self.share)} of the file's bytes)"
        )

    def warning(self) -> str:
        """The file's one warning: how many, what share, the first few line numbers, and why
        the first was skipped."""
        shown = ", ".join(str(n) for n in self.lines[:SHOWN_LINES])
        more = ", …" if len(self.lines) > SHOWN_LINES else ""
        noun = "line" if len(self.lines) == 1 else "lines"
        return (
            f"skipped {self.describe()} that are not JSON records: {noun} {shown}{more} "
            f"(the first: {self.first_problem})"
        )


@dataclass(frozen=True)
class Lines:
    records: tuple[tuple[int, Mapping[str, Any]], ...]
    """(line number, record) of every line that holds a JSON object."""
    skipped: Skipped | None = None
    """The lines that did not, when any did."""

    @property
    def warnings(self) -> tuple[str, ...]:
        return () if self.skipped is None else (self.skipped.warning(),)


def percent(share: float) -> str:
    """82%, 4.2%, <0.1%."""
    if share >= 0.1:
        return f"{share:.0%}"
    if share >= 0.001:
        return f"{share:.1%}"
    return "<0.1%" if share > 0 else "0%"


def decode(data: bytes) -> str:
    """A conversation file's bytes as text. When the only fault is a multi-byte character cut
    at the very end (a writer stopped mid-character), the text ends before it: the line it was
    on is then cut JSON, skipped with the usual warning. Any other byte that is not UTF-8 is a
    UnicodeDecodeError, as before: that file was not written as UTF-8 text at all."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.end != len(data) or exc.reason != "unexpected end of data":
            raise
        return data[: exc.start].decode("utf-8")


def read_lines(text: str, strict: bool = False) -> Lines:
    """The objects of ``text``, one a line (blank lines ignored). A line that is not a JSON
    object is skipped and counted, or a FormatError naming it when ``strict``."""
    records: list[tuple[int, Mapping[str, Any]]] = []
    skipped: list[int] = []
    skipped_bytes = 0
    first_problem = ""
    line_count = 0
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        line_count += 1
        try:
            record = json.loads(line)
        except ValueError as exc:
            problem = f"line {number} is not JSON ({exc})"
        else:
            if isinstance(record, Mapping):
                records.append((number, record))
                continue
            problem = f"line {number} is not a JSON object"
        if strict:
            raise FormatError(problem)
        if not skipped:
            first_problem = problem
        skipped.append(number)
        skipped_bytes += len(line.encode("utf-8", "surrogatepass")) + 1
    if not skipped:
        return Lines(tuple(records))
    total = len(text.encode("utf-8", "surrogatepass"))
    found = Skipped(tuple(skipped), line_count, min(skipped_bytes, total), total, first_problem)
    return Lines(tuple(records), found)
