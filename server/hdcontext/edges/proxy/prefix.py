"""The previous request's bytes: the part of a new body the proxy has read before.

An agent resends its whole conversation on every call and writes the same bytes for the same
messages, so a new body starts with most of the previous one. Parsing all of it again made a
turn's cost grow with the conversation (a 3 MB body: a quarter of the proxy's time). Here a
body is read once: the proxy keeps, for each conversation it serves, the body's bytes and
where each element of its ``messages`` array stands in them (``Layout``). The next body is
compared with those bytes (``common_prefix``, a memory comparison), and the elements that lie
wholly inside the common prefix are cut out before parsing: the body that is decoded holds
the rest of the request (its other fields, the new messages) around a marker.

It cannot be fooled into taking other messages for known ones, on the same argument as
``lsp/resent.py``'s. The cut bytes are replaced by an object holding a random nonce the proxy
never sends; the body counts as known only when, decoded, its top-level ``messages`` holds
that object exactly where the cut elements began. The bytes before the cut are the previous
body's bytes, so a JSON parser reaches the cut in the same state as it did there, at the same
element of the same array; and the cut bytes, the same too, are the elements that stood
there, whose values the proxy took in before. Anything else (the marker elsewhere, a body
that does not parse) is decoded whole, as if nothing had been kept.

A layout is found by the parser itself: each element's end is where ``orjson`` stops reading
the value that starts there (or, for a client that writes JSON as ``orjson`` does, where its
encoding of the element's value ends), so the spans are exactly the parser's.
"""

from __future__ import annotations

import json
import secrets
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

CHUNK = 64 * 1024
"""``common_prefix`` compares this many bytes at a time, then narrows down."""
WINDOW = 4 * 1024
"""The first window ``value_end`` gives orjson (doubled until the value ends inside it)."""
_BLANKS = b" \t\r\n"
KEY = "messages"
"""The conversation's array in a body when the caller names no other (Anthropic's and OpenAI
chat's; the Responses API's is ``input``, Gemini's ``contents``)."""
_AFTER_VALUE = "unexpected content after document"
"""orjson's message when a value is followed by more: its position is where the value ends."""


def common_prefix(a: bytes, b: bytes) -> int:
    """The length of the longest common prefix of ``a`` and ``b``: whole chunks compared in
    place (``startswith`` of a view: a memory comparison, no copy), then the first chunk that
    differs halved until the byte is found."""
    n = min(len(a), len(b))
    view = memoryview(a)
    lo = 0
    while lo < n:
        hi = min(lo + CHUNK, n)
        if not b.startswith(view[lo:hi], lo):
            break
        lo = hi
    else:
        return n
    # b[:lo] == a[:lo], and a[lo:hi] differs from b somewhere.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if b.startswith(view[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return lo


@dataclass(frozen=True, slots=True)
class Layout:
    """Where the elements of a body's top-level ``messages`` array stand in its bytes:
    element ``i`` is ``raw[starts[i]:ends[i]]``."""

    starts: array[int]
    ends: array[int]

    def __len__(self) -> int:
        return len(self.starts)

    def within(self, length: int) -> int:
        """How many leading elements end within the first ``length`` bytes."""
        return bisect_right(self.ends, length)

    def prefix(self, count: int) -> tuple[array[int], array[int]]:
        """The spans of the first ``count`` elements (copies, for the next layout)."""
        return self.starts[:count], self.ends[:count]


class LayoutError(ValueError):
    """The bytes are not laid out as the parsed body says (the layout is not kept)."""


def _skip_blanks(raw: bytes, at: int) -> int:
    while at < len(raw) and raw[at] in _BLANKS:
        at += 1
    return at


def _compact(value: object) -> bytes:
    return orjson.dumps(value)


def _python(value: object) -> bytes:
    return json.dumps(value).encode("ascii")


STYLES: tuple[Callable[[object], bytes], ...] = (_compact, _python)
"""How clients write JSON: compact UTF-8 (JavaScript's ``JSON.stringify``, Claude Code),
and Python's ``json.dumps`` as it comes (the Python SDKs: spaces, non-ASCII escaped)."""


def value_end(raw: bytes, start: int, value: object, style: int = 0) -> tuple[int, int]:
    """Where the JSON value that starts at ``raw[start]`` ends, ``value`` being what it parses
    to, and the index of the style in ``STYLES`` that wrote it (``len(STYLES)``: none):
    where its encoding in the style the previous element had, or another, ends when the
    client wrote it so (for a self-delimiting value: an object, an array, a string), else
    where orjson stops reading it."""
    if isinstance(value, dict | list | str):
        for k in (style, *(k for k in range(len(STYLES)) if k != style)):
            if k >= len(STYLES):
                continue
            try:
                encoded = STYLES[k](value)
            except (TypeError, ValueError, UnicodeEncodeError):
                continue
            if raw.startswith(encoded, start):
                return start + len(encoded), k
    return _parsed_end(raw, start), len(STYLES)


def _parsed_end(raw: bytes, start: int) -> int:
    """Where orjson stops reading the value at ``raw[start]``. orjson reads (and checks as
    UTF-8) all it is given, so it is given a window that doubles: an element costs its own
    length, not the rest of the body's."""
    view = memoryview(raw)
    window = WINDOW
    while True:
        stop = min(start + window, len(raw))
        try:
            orjson.loads(view[start:stop])
        except orjson.JSONDecodeError as exc:
            if str(exc).startswith(_AFTER_VALUE):
                return _byte_offset(raw, start, exc.pos)
            if stop >= len(raw):
                raise LayoutError("an element does not parse on its own") from None
            window *= 2
            continue
        if stop >= len(raw):
            raise LayoutError("an element runs to the end of the body")
        return _byte_offset(raw, start, len(view[start:stop].tobytes().decode("utf-8")))


def _byte_offset(raw: bytes, start: int, chars: int) -> int:
    """The byte offset of the character ``chars`` characters after ``start`` (orjson counts
    characters), with the blanks before it left out (they follow the value)."""
    end = start + chars
    if not raw[start:end].isascii():
        text = raw[start : start + 4 * chars + 4].decode("utf-8", "ignore")
        end = start + len(text[:chars].encode("utf-8"))
    while end > start and raw[end - 1] in _BLANKS:
        end -= 1
    return end


def after(raw: bytes, end: int, more: bool) -> int:
    """Where the element after the one that ends at ``end`` starts its search: past the
    comma when ``more`` elements follow; at the array's end when none does (LayoutError
    when the bytes say otherwise)."""
    at = _skip_blanks(raw, end)
    expected = ord(",") if more else ord("]")
    if at >= len(raw) or raw[at] != expected:
        raise LayoutError("the elements are not laid out as parsed")
    return at + 1 if more else at


def walk(
    raw: bytes,
    at: int,
    values: Sequence[Any],
    starts: array[int] | None = None,
    ends: array[int] | None = None,
) -> Layout:
    """The layout of an array's elements ``values``, the first of which starts at ``raw[at]``
    (blanks before it allowed); ``starts`` and ``ends`` are those of the elements before it,
    kept. Each element must be followed by a comma, the last by the array's end."""
    starts = array("q") if starts is None else starts
    ends = array("q") if ends is None else ends
    style = 0
    for k, value in enumerate(values):
        start = _skip_blanks(raw, at)
        end, style = value_end(raw, start, value, style)
        starts.append(start)
        ends.append(end)
        after = _skip_blanks(raw, end)
        expected = ord("]") if k == len(values) - 1 else ord(",")
        if after >= len(raw) or raw[after] != expected:
            raise LayoutError("the elements are not laid out as parsed")
        at = after + 1
    return Layout(starts, ends)


def find(raw: bytes, messages: Sequence[Any], key: str = KEY) -> Layout:
    """The layout of a body's conversation array (``key``), read whole: the first such key
    whose array lays out as ``messages`` parsed (a nested one that happens to match is caught
    at the next body: its marker would not be at the top level)."""
    name = orjson.dumps(key)
    at = raw.find(name)
    while at >= 0:
        colon = _skip_blanks(raw, at + len(name))
        if colon < len(raw) and raw[colon] == ord(":"):
            bracket = _skip_blanks(raw, colon + 1)
            if bracket < len(raw) and raw[bracket] == ord("[") and messages:
                try:
                    return walk(raw, bracket + 1, messages)
                except LayoutError:
                    pass
        at = raw.find(name, at + 1)
    raise LayoutError(f"no {key} array laid out as parsed")


class Splicer:
    """Cuts known elements out of a body and checks that the parse put the marker in their
    place. One per proxy: its nonce is never sent anywhere."""

    def __init__(self) -> None:
        nonce = secrets.token_hex(16)
        self._marker = {"\u0000hdcontext-known": nonce}
        self._marker_bytes = orjson.dumps(self._marker)

    def parse(
        self, raw: bytes, start: int, stop: int, at: int, key: str = KEY
    ) -> dict[str, Any] | None:
        """``raw`` parsed with ``raw[start:stop]`` (known elements) cut out: the body, its
        conversation array (``key``) holding the marker at index ``at``, or ``None`` when the
        cut does not stand where it should (the body is then parsed whole by the caller)."""
        cut = b"".join((raw[:start], self._marker_bytes, raw[stop:]))
        try:
            body: object = orjson.loads(cut)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(body, dict):
            return None
        messages = body.get(key)
        if not isinstance(messages, list) or len(messages) <= at:
            return None
        found = messages[at]
        if type(found) is not dict or found != self._marker:
            return None
        return body
