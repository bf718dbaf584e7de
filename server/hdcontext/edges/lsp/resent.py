"""A conversation resent whole: the part a client sent before is not parsed again.

``history/sync`` clients resend the whole conversation on every call. Parsing, checking and
digesting every entry of it each time made a sync of a 3 MB conversation 7× as slow as one of
0.3 MB, though only the last turn was new. A client that resends writes the same bytes for the
same entries, so each connection keeps, for the sessions it synced last, the bytes of the
entries array it sent (from ``[`` through the last entry) and the digest of each of those
entries. When a new body holds those bytes where its entries array starts, they are cut out
before parsing: the body that is decoded holds only the rest of the message and the new
entries, and the known part costs one comparison of bytes.

It cannot be fooled into taking other entries for known ones. The cut bytes are replaced by a
marker object holding a random nonce that the connection never sends; the body counts as a
resend only when, decoded, its ``params.entries`` begins with that marker. The known bytes
then stood at the start of that array, and as JSON parses the same bytes from the same start
the same way, the entries they stand for are exactly the ones the record holds. Anything else
(the marker elsewhere, a refused body) is decoded whole, as if nothing had been kept, and says
what is wrong with the whole array. A record is kept only after its sync succeeded, and only
after checking that the bytes it keeps parse to exactly the entries it holds the digests of.
"""

from __future__ import annotations

import json
import re
import secrets
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

from pydantic_core import from_json

from ..daemon.conversation import Conversation, Record
from .decode import Incoming, Refused, decode

MIN_BYTES = 64 * 1024
"""Smaller bodies are decoded whole: that is already fast, and not worth a record."""
MAX_RECORDS = 8
"""Sessions a connection keeps a record for (the ones it synced last)."""
MAX_RECORD_BYTES = 256 * 1024 * 1024
"""All records of a connection together; the oldest go first."""
_TRIES = 3
"""``"entries"`` keys looked at in a body (the first is the one, unless an entry's content
holds such a key and comes first)."""

_SYNC = b'"history/sync"'
_KEY = b'"entries"'
_BLANKS = b" \t\r\n"
_BLANK_TEXT = re.compile(r"[ \t\r\n]*")


class Resends:
    """One connection's records, by session, and the decoding that uses them."""

    def __init__(self) -> None:
        self._records: OrderedDict[str, Record] = OrderedDict()
        nonce = secrets.token_hex(16)
        self._marker = {"\u0000hdcontext-known": nonce}
        self._marker_bytes = b"[" + json.dumps(self._marker).encode("ascii")

    def decode(self, body: bytearray) -> Incoming | Refused:
        """``decode.decode`` of one body; a ``history/sync`` request's ``params.entries``
        becomes a ``Conversation``. The body is cleared, as there, unless a record may keep
        it."""
        if len(body) < MIN_BYTES or body.find(_SYNC) < 0:
            return decode(body)
        for session_id, record in reversed(self._records.items()):
            known = self._known(body, record)
            if known is not None:
                self._records.move_to_end(session_id)
                return known
        whole = bytes(body)
        item = decode(body)
        if _is_sync(item):
            assert isinstance(item, Incoming)
            self._wrap_whole(item, whole)
        return item

    def _known(self, body: bytearray, record: Record) -> Incoming | None:
        """The body decoded with ``record``'s entries cut out, if it starts its entries with
        them; else None. The body is kept (not cleared): it is the next record's."""
        head = record.head
        start = _array_start(body, head)
        if start is None:
            return None
        stop = start + len(head)
        cut = bytearray(body[:start])
        cut += self._marker_bytes
        cut += body[stop:]
        item = decode(cut)
        if not _is_sync(item):
            return None
        assert isinstance(item, Incoming)
        params = item.message["params"]
        entries = params["entries"]
        if not entries or type(entries[0]) is not dict or entries[0] != self._marker:
            return None
        close = _array_close(bytes(body[stop:]))
        span = None
        if close is not None:
            end = len(bytes(body[stop : stop + close]).rstrip(_BLANKS))
            span = (body, start, stop + end)
        params["entries"] = Conversation(
            entries[1:], record, span, self._keeper(params.get("sessionId"))
        )
        return item

    def _wrap_whole(self, item: Incoming, whole: bytes) -> None:
        params = item.message["params"]
        entries = params["entries"]
        span = _entries_span(whole, entries)
        params["entries"] = Conversation(entries, None, span, self._keeper(params.get("sessionId")))

    def _keeper(self, session_id: object) -> Callable[[Record], None] | None:
        if not isinstance(session_id, str):
            return None

        def keep(record: Record) -> None:
            self._records.pop(session_id, None)
            self._records[session_id] = record
            total = sum(len(r.body) for r in self._records.values())
            while len(self._records) > MAX_RECORDS or total > MAX_RECORD_BYTES:
                _, dropped = self._records.popitem(last=False)
                total -= len(dropped.body)

        return keep


def _is_sync(item: Incoming | Refused) -> bool:
    if not isinstance(item, Incoming) or item.kind != "request":
        return False
    params = item.message.get("params")
    return (
        item.method == "history/sync"
        and isinstance(params, dict)
        and isinstance(params.get("entries"), list)
    )


def _skip_blanks(data: bytes | bytearray, at: int) -> int:
    while at < len(data) and data[at] in _BLANKS:
        at += 1
    return at


def _entries_values(data: bytes | bytearray) -> Iterator[int]:
    """Where the value of each of the first ``"entries"`` keys of a body starts."""
    at = data.find(_KEY)
    for _ in range(_TRIES):
        if at < 0:
            return
        colon = _skip_blanks(data, at + len(_KEY))
        if colon < len(data) and data[colon] == ord(":"):
            yield _skip_blanks(data, colon + 1)
        at = data.find(_KEY, at + 1)


def _array_start(body: bytearray, head: memoryview) -> int | None:
    """Where ``head`` stands in ``body`` as the value of an ``"entries"`` key, followed by
    another entry or the array's end."""
    for start in _entries_values(body):
        if body.startswith(head, start):
            after = _skip_blanks(body, start + len(head))
            if after < len(body) and body[after] in b",]":
                return start
    return None


def _array_close(rest: bytes) -> int | None:
    """Byte offset in ``rest`` of the ``]`` closing an array that ``rest`` continues right
    after one of its elements. None when that cannot be read (the record is then not
    renewed)."""
    try:
        text = rest.decode("utf-8")
    except UnicodeDecodeError:
        return None
    decoder = json.JSONDecoder()
    at = _blanks_end(text, 0)
    try:
        while at < len(text):
            if text[at] == "]":
                return len(text[:at].encode("utf-8"))
            if text[at] != ",":
                return None
            _, at = decoder.raw_decode(text, _blanks_end(text, at + 1))
            at = _blanks_end(text, at)
    except (ValueError, RecursionError):
        return None
    return None


def _blanks_end(text: str, at: int) -> int:
    match = _BLANK_TEXT.match(text, at)
    return at if match is None else match.end()


def _entries_span(whole: bytes, entries: list[Any]) -> tuple[bytes, int, int] | None:
    """Where a decoded sync's entries array stands in its body, through its last entry, once
    it is certain that those bytes parse to exactly these entries (which is what a record
    promises: its bytes are the entries it holds the digests of). The array is looked for
    after an ``"entries"`` key, and its end from the end of the body (the last parameter, as
    clients write it); a body laid out otherwise is just not recorded."""
    if not entries:
        return None
    for start in _entries_values(whole):
        if start >= len(whole) or whole[start] != ord("["):
            continue
        close = whole.rfind(b"]")
        for _ in range(_TRIES):
            if close <= start:
                break
            try:
                parsed = from_json(whole[start : close + 1])
            except ValueError:
                parsed = None
            if parsed == entries:
                return whole, start, start + len(whole[start:close].rstrip(_BLANKS))
            close = whole.rfind(b"]", start, close)
    return None
