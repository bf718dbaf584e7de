"""JSON Lines as log tools read them: a line that is not a JSON object is skipped with a
warning that names it, unless the caller asks for strictness.

An agent writes its log line by line while it runs; a crash, a full disk or two writers can
leave one line cut short or two records on one line. Rejecting the whole session for that
loses everything else in it, so by default the bad line goes and the warning says which.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..conversation import FormatError


@dataclass(frozen=True)
class Lines:
    records: tuple[tuple[int, Mapping[str, Any]], ...]
    """(line number, record) of every line that holds a JSON object."""
    warnings: tuple[str, ...] = ()


def read_lines(text: str, strict: bool = False) -> Lines:
    """The objects of ``text``, one a line (blank lines ignored). A line that is not a JSON
    object is a warning, or a FormatError naming it when ``strict``."""
    records: list[tuple[int, Mapping[str, Any]]] = []
    warnings: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
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
        warnings.append(f"{problem}: skipped")
    return Lines(tuple(records), tuple(warnings))
