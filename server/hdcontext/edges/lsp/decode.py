"""One message body in; a JSON-RPC 2.0 message, or the error that answers it, out.

PROTOCOL.md ("Transport") lists what a body may not be, and this module is where each is
caught, before pygls or a handler sees the message, so that every one gets its answer at once
and none can reach the conversation. pygls would hand ``json.loads`` the raw bytes: nesting a
thousand levels deep raised RecursionError, a 5,000-digit integer ValueError, and both were
logged and never answered (a client waiting for its reply hangs). NaN and ±Infinity parsed and
came back out as bare ``NaN``, which no JavaScript client can parse; a ``\\ud800`` escape
became a lone surrogate that the store could not encode (-32603).

So, in order: the body must be UTF-8 (else -32700, with the byte offset), JSON (-32700), and
a JSON-RPC 2.0 message: an object, no batch, ``"jsonrpc": "2.0"``, an ``id`` that is a
string or an integer, a string ``method`` (else -32600). Then no value may be nested deeper
than ``MAX_DEPTH`` levels, be an integer beyond 64 bits, NaN or ±Infinity, or a string (or key)
with a lone UTF-16 surrogate: -32602, naming the JSON path, never echoing the value.

The common case pays almost nothing: the depth is measured with C-speed string operations
before parsing (a body with at most ``MAX_DEPTH`` brackets needs no measuring at all),
numbers are checked by the parser's own hooks, and the walk that names a path runs only when
something was found. A body is decoded once and cleared as soon as it is text, so a 50 MB
request never lives twice as bytes and text.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from itertools import accumulate, repeat
from operator import sub
from typing import Any, Literal

from pydantic_core import from_json

from ..daemon.wire import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR

MAX_DEPTH = 200
"""The deepest a value may nest inside the message: ``params`` is level 1, its members level 2.
(pydantic-core's parser refuses exactly what nests deeper: 202 brackets in a row.)"""
INT_MIN = -(2**63)
INT_MAX = 2**63 - 1
_MAX_INT_CHARS = 20  # a sign and 19 digits: longer is out of range whatever the digits

MsgId = int | str
Kind = Literal["request", "notification", "response"]


@dataclass(frozen=True, slots=True)
class Incoming:
    """A well-formed JSON-RPC 2.0 message, as the client sent it."""

    message: dict[str, Any]
    kind: Kind

    @property
    def method(self) -> str | None:
        method = self.message.get("method")
        return method if isinstance(method, str) else None

    @property
    def id(self) -> MsgId | None:
        msg_id = self.message.get("id")
        return msg_id if _valid_id(msg_id) else None


@dataclass(frozen=True, slots=True)
class Refused:
    """A body that is not a message the daemon takes, and how to answer it."""

    code: int
    message: str
    reply_to: MsgId | None
    """The id to answer with; ``None`` is ``"id": null`` (no usable id was found)."""
    answer: bool = True
    """False for a notification (and a response) with bad values: nobody waits for an answer."""
    method: str | None = None


class _Bad:
    """Stands, in a parsed value, for a value the daemon refuses; says why."""

    __slots__ = ("why",)

    def __init__(self, why: str) -> None:
        self.why = why


_BIG_INT = _Bad("integer beyond 64 bits")
_NOT_FINITE = _Bad("a number beyond the range of a double (±Infinity)")
_CONSTANTS = {
    "NaN": _Bad("NaN is not a JSON number"),
    "Infinity": _Bad("Infinity is not a JSON number"),
    "-Infinity": _Bad("-Infinity is not a JSON number"),
}
_TOO_DEEP = _Bad(f"nested deeper than {MAX_DEPTH} levels")
_LONE_SURROGATE_WHY = "a lone UTF-16 surrogate (a \\uD800-\\uDFFF escape without its pair)"


class _Scan:
    """A JSON decoder whose number hooks stand a ``_Bad`` in for what the daemon refuses."""

    def __init__(self) -> None:
        self.found_bad = False
        self.decoder = json.JSONDecoder(
            parse_int=self._int, parse_float=self._float, parse_constant=self._constant
        )

    def _int(self, digits: str) -> int | _Bad:
        if len(digits) <= _MAX_INT_CHARS:
            value = int(digits)
            if INT_MIN <= value <= INT_MAX:
                return value
        self.found_bad = True
        return _BIG_INT

    def _float(self, digits: str) -> float | _Bad:
        value = float(digits)
        if value - value == 0.0:  # finite (inf - inf and nan - nan are nan)
            return value
        self.found_bad = True
        return _NOT_FINITE

    def _constant(self, name: str) -> _Bad:
        self.found_bad = True
        return _CONSTANTS[name]


def decode(body: bytearray) -> Incoming | Refused:
    """Decode one message body; the body is cleared (its memory freed) on the way out.

    The fast way: pydantic-core's JSON parser (jiter) reads the bytes as they are, with no
    text copy; it refuses invalid UTF-8, lone surrogates, NaN and ±Infinity, and nesting
    beyond ``MAX_DEPTH`` on its own. A number too large for 64 bits or a double it takes,
    so when a scan of the bytes says one may be there the parsed value is walked for it.
    Anything refused goes the exact way (``decode_text``), which says what is wrong and where.
    """
    try:
        try:
            value = from_json(body, allow_inf_nan=False, cache_strings="keys")
        except ValueError:
            pass
        else:
            # The parser takes integers of any size and a float beyond a double's range as
            # infinity; the scan says whether the body may hold either (a run of 19 digits,
            # inside a string too), and only then is the value walked for them.
            if not _numbers_to_check(body) or not _out_of_range(value):
                return _message(value, walk=False)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _not_json(exc.start, "not UTF-8")
    finally:
        body.clear()
    return decode_text(text)


def _out_of_range(value: object) -> bool:
    """Whether a parsed value holds an integer beyond 64 bits or an infinite float."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif type(item) is int:
            if not INT_MIN <= item <= INT_MAX:
                return True
        elif type(item) is float and item - item != 0.0:
            return True
    return False


_NUMERIC_MAP = bytes(
    ord("0")
    if chr(b).isdigit() and b < 128
    else ord("e")
    if b in b"eE"
    else ord("+")
    if b in b"+-"
    else ord(".")
    for b in range(256)
)
_CANDIDATES = (b"0" * 19, b"0e000", b"0e+000")
"""In the mapped bytes: 19 digits; a digit, an exponent mark and three digits."""
_NUMBER_PART = frozenset(b"0123456789.-+eE")
_BLANKS = frozenset(b" \t\r\n")
_BEFORE_NUMBER = frozenset(b":,[")


def _numbers_to_check(body: bytearray) -> bool:
    """Whether the body may hold an integer beyond 64 bits or a float beyond a double's
    range: 19 digits in a row, or an exponent of three digits, where a JSON number can stand
    (after ``:``, ``,`` or ``[`` and blanks). The bytes are mapped so that the candidates are
    plain substrings (found at C speed); a candidate inside a string (a hash, a long id)
    follows a character that no number can follow, and costs no walk. It can say yes for
    nothing, never no for something."""
    mapped = body.translate(_NUMERIC_MAP)
    for needle in _CANDIDATES:
        at = mapped.find(needle)
        while at >= 0:
            i = at - 1
            while i >= 0 and body[i] in _NUMBER_PART:
                i -= 1
            while i >= 0 and body[i] in _BLANKS:
                i -= 1
            if i < 0 or body[i] in _BEFORE_NUMBER:
                return True
            end = at + len(needle)
            while end < len(mapped) and mapped[end] == mapped[at + len(needle) - 1]:
                end += 1  # the rest of this run
            at = mapped.find(needle, end)
    return False


def decode_text(text: str) -> Incoming | Refused:
    scan = _Scan()
    if nesting(text) > MAX_DEPTH + 1:
        return _too_deep(text, scan)
    try:
        value = scan.decoder.decode(text)
    except json.JSONDecodeError as exc:
        return _not_json(_byte_offset(text, exc.pos), exc.msg)
    except RecursionError:  # pragma: no cover - nesting() bounds the depth first
        return _too_deep(text, scan)
    walk = scan.found_bad or _SURROGATE_ESCAPE.search(text) is not None
    return _message(value, walk)


# -- the message ------------------------------------------------------------------------------


def _valid_id(value: object) -> bool:
    if isinstance(value, str):
        return _LONE_SURROGATE.search(value) is None
    return type(value) is int


_NOT_2_0 = 'not a JSON-RPC 2.0 message: "jsonrpc" must be "2.0"'


def _message(value: object, walk: bool) -> Incoming | Refused:
    if isinstance(value, list):
        return Refused(
            INVALID_REQUEST, "batch messages are not supported: send one at a time", None
        )
    if not isinstance(value, dict):
        return Refused(INVALID_REQUEST, "not a JSON-RPC 2.0 message: expected an object", None)
    id_ok = _valid_id(value.get("id"))
    reply_to: MsgId | None = value["id"] if id_ok else None
    if value.get("jsonrpc") != "2.0":
        return Refused(
            INVALID_REQUEST, 'not a JSON-RPC 2.0 message: "jsonrpc" must be "2.0"', reply_to
        )
    kind: Kind
    method: str | None = None
    if "method" in value:
        method = value["method"]
        if not isinstance(method, str) or _LONE_SURROGATE.search(method):
            return Refused(INVALID_REQUEST, '"method" must be a string', reply_to)
        if "id" in value and not id_ok:
            return Refused(INVALID_REQUEST, '"id" must be a string or an integer', None)
        kind = "request" if "id" in value else "notification"
        if "params" not in value:
            # JSON-RPC lets a request leave ``params`` out when the method takes none
            # (``history/list``, ``shutdown``); pygls' generic message type requires the key
            # and answered such a request -32602. Absent and null mean the same to a handler.
            value["params"] = None
    elif "result" in value or "error" in value:
        if not id_ok:
            return Refused(INVALID_REQUEST, "a response without a usable id", None, answer=False)
        kind = "response"
    else:
        return Refused(
            INVALID_REQUEST, "not a JSON-RPC 2.0 message: no method, result or error", reply_to
        )
    problem = first_problem(value) if walk else None
    if problem is not None:
        where = f"{problem[0]}: {problem[1]}"
        if kind == "response":
            # The daemon's own request is waiting for this answer: fail it, don't drop it.
            error = {"code": INVALID_PARAMS, "message": where}
            return Incoming({"jsonrpc": "2.0", "id": value["id"], "error": error}, kind)
        return Refused(
            INVALID_PARAMS,
            where,
            reply_to if kind == "request" else None,
            kind == "request",
            method,
        )
    if kind == "response" and "error" in value:
        value["error"] = _error_object(value["error"])
    return Incoming(value, kind)


def _error_object(error: object) -> dict[str, Any]:
    """A client's error answer in the shape pygls can read (it drops the answer otherwise)."""
    if not isinstance(error, dict):
        return {"code": -32603, "message": "the client answered with a malformed error"}
    code = error.get("code")
    message = error.get("message")
    out = dict(error)
    out["code"] = code if type(code) is int else -32603
    out["message"] = message if isinstance(message, str) else "the client's error has no message"
    return out


# -- naming where ------------------------------------------------------------------------------

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*")
_SHOWN_PARTS = 12


def first_problem(value: dict[str, Any]) -> tuple[str, str] | None:
    """The JSON path of the first refused value, in document order, and what is wrong."""
    stack: list[tuple[object, tuple[str | int, ...], int]] = [(value, (), 0)]
    while stack:
        item, path, depth = stack.pop()
        if isinstance(item, _Bad):
            return render_path(path), item.why
        if isinstance(item, str):
            if _LONE_SURROGATE.search(item):
                return render_path(path), _LONE_SURROGATE_WHY
            continue
        if not isinstance(item, dict | list):
            continue
        if depth > MAX_DEPTH:
            return render_path(path), _TOO_DEEP.why
        if isinstance(item, dict):
            children: list[tuple[object, tuple[str | int, ...], int]] = []
            for key, child in item.items():
                if _LONE_SURROGATE.search(key):
                    return render_path((*path, key)), "a key with " + _LONE_SURROGATE_WHY
                children.append((child, (*path, key), depth + 1))
            stack.extend(reversed(children))
        else:
            stack.extend(
                (child, (*path, n), depth + 1) for n, child in reversed(list(enumerate(item)))
            )
    return None


def render_path(path: tuple[str | int, ...]) -> str:
    """``params.entries[3].blocks[0]["x-y"]``; keys shown safely (no surrogate, bounded), and
    a very deep path by its ends."""
    if not path:
        return "message"
    parts = [_render_part(part, n == 0) for n, part in enumerate(path)]
    if len(parts) > _SHOWN_PARTS:
        hidden = len(parts) - _SHOWN_PARTS
        parts[_SHOWN_PARTS - 3 : -3] = [f"…({hidden} more)…"]
    return "".join(parts)


def _render_part(part: str | int, first: bool) -> str:
    if isinstance(part, int):
        return f"[{part}]"
    key = _LONE_SURROGATE.sub("\ufffd", part)
    if len(key) > 64:
        key = key[:64] + "…"
    if _IDENTIFIER.fullmatch(key):
        return key if first else "." + key
    return f"[{json.dumps(key)}]"


# -- depth --------------------------------------------------------------------------------------

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = b"[]{}"
_NOT_BRACKETS = bytes(b for b in range(256) if b not in _BRACKETS)
_STEPS = bytes.maketrans(_BRACKETS, b"\x02\x00\x02\x00")
"""An opening bracket becomes 2 and a closing one 0, so that ``b - 1`` is the step in depth."""


def nesting(text: str) -> int:
    """How many brackets deep the JSON text nests (the message object counts), or an upper
    bound when that is within the limit.

    Without strings (whose brackets don't count), only brackets, as steps of ±1: the running
    sum's maximum is the depth. Each step is C code (regex, translate, accumulate).
    """
    opened = text.count("[") + text.count("{")
    if opened <= MAX_DEPTH + 1:
        return opened
    skeleton = _STRING.sub("", text).encode("utf-8", "replace")
    steps = skeleton.translate(_STEPS, _NOT_BRACKETS)
    return max(accumulate(map(sub, steps, repeat(1))), default=0)


def _too_deep(text: str, scan: _Scan) -> Incoming | Refused:
    """A body nesting deeper than allowed, parsed container by container down to where it is
    too deep (the rest skipped), so that the id is found and the path named even where the
    parser could not take the value whole."""
    try:
        value, end = _partial(text, _skip_ws(text, 0), scan, 0)
    except json.JSONDecodeError as exc:
        return _not_json(_byte_offset(text, exc.pos), exc.msg)
    if _skip_ws(text, end) != len(text):
        return _not_json(_byte_offset(text, end), "Extra data")
    return _message(value, walk=True)


_WS = re.compile(r"[ \t\n\r]*")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)


def _skip_ws(text: str, at: int) -> int:
    found = _WS.match(text, at)
    return found.end() if found else at


def _partial(text: str, at: int, scan: _Scan, depth: int) -> tuple[Any, int]:
    """The value at ``at`` (``depth`` levels into the message) and where it ends: parsed
    whole where the parser can, else member by member, with ``_TOO_DEEP`` standing for a
    container nested deeper than allowed. Raises JSONDecodeError where it is not JSON."""
    try:
        return scan.decoder.raw_decode(text, at)
    except RecursionError:
        pass
    if depth > MAX_DEPTH:
        return _TOO_DEEP, _skip_value(text, at)
    if text.startswith("[", at):
        items: list[Any] = []
        at = _skip_ws(text, at + 1)
        if text.startswith("]", at):  # pragma: no cover - an empty array never recurses
            return items, at + 1
        while True:
            item, at = _partial(text, at, scan, depth + 1)
            items.append(item)
            at = _skip_ws(text, at)
            if text.startswith(",", at):
                at = _skip_ws(text, at + 1)
            elif text.startswith("]", at):
                return items, at + 1
            else:
                raise json.JSONDecodeError("Expecting ',' delimiter", text, at)
    if not text.startswith("{", at):  # pragma: no cover - only containers recurse
        raise json.JSONDecodeError("Expecting value", text, at)
    members: dict[str, Any] = {}
    at = _skip_ws(text, at + 1)
    while True:
        if not text.startswith('"', at):
            raise json.JSONDecodeError("Expecting property name", text, at)
        key, at = scan.decoder.raw_decode(text, at)  # a string: nothing to nest
        at = _skip_ws(text, at)
        if not text.startswith(":", at):
            raise json.JSONDecodeError("Expecting ':' delimiter", text, at)
        members[key], at = _partial(text, _skip_ws(text, at + 1), scan, depth + 1)
        at = _skip_ws(text, at)
        if text.startswith(",", at):
            at = _skip_ws(text, at + 1)
        elif text.startswith("}", at):
            return members, at + 1
        else:
            raise json.JSONDecodeError("Expecting ',' delimiter", text, at)


def _skip_value(text: str, at: int) -> int:
    """The end of the array or object that starts at ``at``, by its brackets."""
    depth = 0
    for token in _TOKEN.finditer(text, at):
        char = text[token.start()]
        if char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth == 0:
                return token.end()
    raise json.JSONDecodeError("Unterminated value", text, at)


# -- not JSON -----------------------------------------------------------------------------------


def _byte_offset(text: str, pos: int) -> int:
    return len(text[:pos].encode("utf-8", "surrogatepass"))


def _not_json(byte: int, why: str) -> Refused:
    return Refused(PARSE_ERROR, f"parse error at byte {byte}: {why}", None)
