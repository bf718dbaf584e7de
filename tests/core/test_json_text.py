"""Replies with a history already encoded read back as the same JSON."""

from __future__ import annotations

import json

from hdcontext.core.content import dump_entries, entries_json, entry_json, parse_entries
from hdcontext.core.history.stored import Entries
from hdcontext.edges.daemon.json_text import JsonText, encode, holds_text

ENTRIES = parse_entries(
    [
        {"speaker": "human", "blocks": [{"type": "text", "text": "héllo 😀\n\u2028"}]},
        {
            "speaker": "ai",
            "blocks": [{"type": "tool_call", "id": "c1", "name": "read", "parameters": None}],
            "metadata": {"timestamp": 1, "cwd": "/w", "x-extra": [1, 2.5, None]},
        },
        {
            "speaker": "tool",
            "blocks": [
                {"type": "tool_response", "callId": "c1", "toolName": "read", "result": {"a": 1}}
            ],
        },
    ]
)


def test_entries_json_is_dump_entries() -> None:
    assert json.loads(entries_json(ENTRIES)) == dump_entries(ENTRIES)


def test_text_that_is_not_utf8_goes_the_escaped_way() -> None:
    odd = parse_entries([{"speaker": "human", "blocks": [{"type": "text", "text": "a\ud800"}]}])
    assert json.loads(entries_json(odd)) == dump_entries(odd)


def test_a_reply_with_text_reads_back_as_the_plain_reply() -> None:
    reply = {
        "entries": JsonText(entries_json(ENTRIES)),
        "status": {"sessionId": "s\ud800é", "percent": 12.5, "list": [1, "x"], "none": None},
    }
    assert holds_text(reply) and not holds_text({"a": 1}) and not holds_text([JsonText(b"1")])
    plain = {**reply, "entries": dump_entries(ENTRIES)}
    data = b"".join(encode(reply))
    assert json.loads(data) == json.loads(json.dumps(plain))


def test_text_in_pieces_reads_back_as_the_whole() -> None:
    """A stored history goes into a reply as its pieces (stored.Entries.json_parts)."""
    view = Entries([entry_json(e) for e in ENTRIES])
    whole = b"".join(encode({"entries": JsonText(entries_json(ENTRIES))}))
    pieces = b"".join(encode({"entries": JsonText(view.json_parts())}))
    assert json.loads(pieces) == json.loads(whole)
    assert b"".join(encode({"entries": JsonText(Entries([]).json_parts())})) == b'{"entries":[]}'
