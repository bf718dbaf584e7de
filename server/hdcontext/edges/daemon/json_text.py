"""JSON replies that carry text already encoded (a whole history, written by pydantic).

pygls writes a result by running its cattrs converter over it (a deep copy of every dict)
and then the json module (a walk of every value): for a history of megabytes that is most of
the time of ``history/get`` and ``history/compact``, and garbage that fragments the heap. The
daemon puts such a history into its reply as ``JsonText``, and server.py writes replies that
hold one with ``encode``: the small rest through the json module as pygls would, the text as
it is. What the client receives is the same JSON.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class JsonText:
    """A JSON value already encoded as UTF-8: whole, or as pieces to join in order."""

    data: bytes | Sequence[bytes]


def holds_text(value: object) -> bool:
    """Whether a reply (a dict) holds JSON text among its values, or one level down (the
    ``delta`` of ``history/compact``)."""
    if not isinstance(value, dict):
        return False
    return any(
        isinstance(v, JsonText)
        or (isinstance(v, dict) and any(isinstance(w, JsonText) for w in v.values()))
        for v in value.values()
    )


def encode(value: object) -> list[bytes]:
    """``value`` as JSON, in pieces to join: its JsonText parts as they are, the rest as
    pygls' json.dumps writes it (non-ASCII escaped, so that text from the client that is
    not valid UTF-8 cannot break the reply)."""
    parts: list[bytes] = []
    _encode(value, parts)
    return parts


def _encode(value: object, parts: list[bytes]) -> None:
    if isinstance(value, JsonText):
        if isinstance(value.data, bytes):
            parts.append(value.data)
        else:
            parts.extend(value.data)
    elif isinstance(value, dict) and all(isinstance(k, str) for k in value):
        parts.append(b"{")
        for n, (key, item) in enumerate(value.items()):
            if n:
                parts.append(b",")
            parts.append(json.dumps(key).encode("ascii"))
            parts.append(b":")
            _encode(item, parts)
        parts.append(b"}")
    elif isinstance(value, list | tuple):
        parts.append(b"[")
        for n, item in enumerate(value):
            if n:
                parts.append(b",")
            _encode(item, parts)
        parts.append(b"]")
    else:
        parts.append(json.dumps(value).encode("ascii"))
