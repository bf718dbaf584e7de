"""What a client sends comes back as it sent it, and what the wire shapes do not allow is
refused, never coerced (issue 23): pydantic's lax mode had stored a ``metadata.timestamp`` of
``"123"`` as 123 and ``true`` as 1.

Over the real stdio transport, with the bytes written as given, and the answers compared as
JSON text with sorted keys: ``1``, ``1.0`` and ``true`` are equal in Python, not on the wire.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .raw import Peer, stdio_daemon

STAMP = 1_760_000_000_000


def _wire(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _entry(timestamp: Any) -> dict[str, Any]:
    return {
        "speaker": "human",
        "blocks": [{"type": "text", "text": "hello"}],
        "metadata": {"timestamp": timestamp},
    }


# Each typed field at its edges, and unknown keys holding what a lax model would coerce.
CONVERSATION: list[dict[str, Any]] = [
    {
        "speaker": "human",
        "blocks": [
            {"type": "text", "text": "123", "cacheControl": {"type": "ephemeral"}},
            {"type": "media", "mimeType": "image/png", "data": "iVBORw0K", "encoding": "base64"},
            {"type": "code", "code": "print(1)", "language": None},
        ],
        "metadata": {
            "timestamp": STAMP,
            "id": "7",
            "flag": True,
            "count": "123",
            "ratio": 1.0,
            "nested": {"zero": 0, "no": False, "none": None},
        },
    },
    {
        "speaker": "ai",
        "blocks": [
            {"type": "thinking", "thought": "0", "signature": "c2ln"},
            {
                "type": "tool_call",
                "id": "call-1",
                "name": "search",
                "parameters": {"query": "true", "limit": 5, "exact": False, "weight": 2.0},
            },
        ],
        "metadata": {"timestamp": STAMP + 1},
    },
    {
        "speaker": "tool",
        "blocks": [
            {
                "type": "tool_response",
                "callId": "call-1",
                "toolName": "search",
                "result": {"hits": ["1", 1, 1.5, True, None], "total": "1"},
                "error": None,
            }
        ],
        "metadata": {"timestamp": STAMP + 2, "exitCode": "0"},
    },
    {"speaker": "ai", "blocks": [{"type": "text", "text": "false"}], "metadata": {"timestamp": 0}},
]


async def _open(peer: Peer, storage: Path, session: str) -> None:
    answer = await peer.initialize(storage)
    assert "result" in answer, answer
    await peer.call("history/open", {"sessionId": session})


async def _views(peer: Peer, session: str) -> dict[str, Any]:
    views = {
        view: await peer.call("history/get", {"sessionId": session, "view": view})
        for view in ("curated", "raw", "transcript")
    }
    views["list"] = await peer.call("history/list")
    return views


async def test_an_entry_comes_back_as_it_was_sent(storage: Path) -> None:
    async with stdio_daemon() as d:
        await _open(d.peer, storage, "appended")
        await d.peer.call("history/append", {"sessionId": "appended", "entries": CONVERSATION})
        await d.peer.call("history/sync", {"sessionId": "synced", "entries": CONVERSATION})
        for session in ("appended", "synced"):
            for view in ("curated", "raw", "transcript"):
                got = await d.peer.call("history/get", {"sessionId": session, "view": view})
                assert _wire(got["entries"]) == _wire(CONVERSATION), (session, view)
            compacted = await d.peer.call("history/compact", {"sessionId": session})
            assert _wire(compacted["history"]) == _wire(CONVERSATION), session
            retrieved = await d.peer.call(
                "history/retrieve", {"sessionId": session, "callId": "call-1"}
            )
            assert _wire(retrieved) == _wire(
                {"call": CONVERSATION[1]["blocks"][1], "response": CONVERSATION[2]["blocks"][0]}
            )


@pytest.mark.parametrize("timestamp", ["123", True, False, 123.0, str(STAMP), [STAMP]])
async def test_a_timestamp_that_is_not_an_integer_is_refused_and_changes_nothing(
    storage: Path, timestamp: Any
) -> None:
    async with stdio_daemon() as d:
        await _open(d.peer, storage, "s")
        await d.peer.call("history/append", {"sessionId": "s", "entries": [_entry(STAMP)]})
        before = await _views(d.peer, "s")
        later = [_entry(STAMP), _entry(STAMP + 1), _entry(timestamp)]
        for method, params, where in (
            ("history/append", {"sessionId": "s", "entries": [_entry(timestamp)]}, 0),
            ("history/sync", {"sessionId": "s", "entries": later}, 2),
            ("history/sync", {"sessionId": "new", "entries": later}, 2),
        ):
            error = await d.peer.fails(method, params)
            assert error["code"] == -32602, (method, error)
            assert error["message"] == (
                f"entries[{where}].metadata.timestamp: input should be a valid integer"
            ), (method, error)
        assert await _views(d.peer, "s") == before
        assert (await d.peer.fails("history/get", {"sessionId": "new"}))["code"] == -32001


async def test_no_typed_field_of_an_entry_takes_a_value_of_another_type(storage: Path) -> None:
    """The string fields, like the timestamp, take only their type: lax mode would turn no
    number or boolean into a string, and this holds it so."""
    bad: list[tuple[dict[str, Any], str]] = [
        ({"type": "text", "text": 5}, "blocks[0].text"),
        ({"type": "thinking", "thought": True}, "blocks[0].thought"),
        ({"type": "code", "code": "x", "language": 3}, "blocks[0].language"),
        (
            {"type": "media", "mimeType": "image/png", "data": 1, "encoding": "url"},
            "blocks[0].data",
        ),
    ]
    entries: list[dict[str, Any]] = [{"speaker": "human", "blocks": [block]} for block, _ in bad]
    entries.append(
        {"speaker": "human", "blocks": [{"type": "text", "text": "x"}], "metadata": {"id": 7}}
    )
    entries.append(
        {
            "speaker": "ai",
            "blocks": [{"type": "tool_call", "id": 1, "name": False, "parameters": {}}],
        }
    )
    entries.append(
        {
            "speaker": "tool",
            "blocks": [
                {"type": "tool_response", "callId": 1, "toolName": "t", "result": 1, "error": 2}
            ],
        }
    )
    expected = [f"entries[{i}].{where}" for i, (_, where) in enumerate(bad)] + [
        "entries[4].metadata.id",
        "entries[5].blocks[0].id",
        "entries[5].blocks[0].name",
        "entries[6].blocks[0].callId",
        "entries[6].blocks[0].error",
    ]
    async with stdio_daemon() as d:
        await _open(d.peer, storage, "s")
        error = await d.peer.fails("history/append", {"sessionId": "s", "entries": entries})
        assert error["code"] == -32602
        named = [problem.split(":")[0] for problem in error["data"]["errors"]]
        assert named == expected, error["data"]["errors"]
        assert (await d.peer.call("history/get", {"sessionId": "s"}))["entries"] == []
