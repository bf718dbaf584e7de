"""PROTOCOL v2 over the real transport: history/sync, history/usage, history/retrieve."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .harness import (
    Daemon,
    call_ids,
    read_pair,
    start_daemon,
    text,
    tool_call,
    tool_response,
    write_pair,
)

CONVERSATION: list[dict[str, Any]] = [
    text("human", "What does a.py print?"),
    *read_pair("r1", "/w/a.py", "print(1)\n"),
    text("ai", "It prints 1."),
]


async def _sync(d: Daemon, entries: list[dict[str, Any]], **more: Any) -> dict[str, Any]:
    result: dict[str, Any] = await d.call(
        "history/sync", {"sessionId": "chat", "entries": entries, **more}
    )
    return result


async def test_sync_appends_what_is_new_and_opens_the_session(storage: Path) -> None:
    async with start_daemon(storage) as d:
        first = await _sync(d, CONVERSATION, model="claude-sonnet-4", contextLimit=100_000)
        assert (first["appended"], first["forkedAt"]) == (4, None)
        assert first["contextLimit"] == 100_000
        again = await _sync(d, CONVERSATION)
        assert (again["appended"], again["forkedAt"]) == (0, None)
        assert again["version"] == first["version"]  # nothing held changed
        more = [*CONVERSATION, text("human", "And now?")]
        grown = await _sync(d, more)
        assert (grown["appended"], grown["forkedAt"]) == (1, None)
        got = await d.call("history/get", {"sessionId": "chat", "view": "transcript"})
        assert [e["blocks"] for e in got["entries"]] == [e["blocks"] for e in more]
        result = await d.call("history/compact", {"sessionId": "chat"})
        assert result["cache"]["pricing"] == "anthropic"


async def test_sync_forks_where_the_conversation_parts_and_the_transcript_keeps_both(
    storage: Path,
) -> None:
    async with start_daemon(storage) as d:
        await _sync(d, [*CONVERSATION, text("human", "first ask"), text("ai", "first answer")])
        edited = [*CONVERSATION, text("human", "the ask, edited"), text("ai", "a new answer")]
        fork = await _sync(d, edited)
        assert (fork["appended"], fork["forkedAt"]) == (2, 4)
        working = await d.call("history/get", {"sessionId": "chat", "view": "raw"})
        assert [e["blocks"] for e in working["entries"]] == [e["blocks"] for e in edited]
        transcript = await d.call("history/get", {"sessionId": "chat", "view": "transcript"})
        texts = json.dumps(transcript["entries"])
        assert "first ask" in texts and "the ask, edited" in texts  # nothing is lost
        shorter = await _sync(d, CONVERSATION[:2])  # a regenerate from an earlier point
        assert shorter["forkedAt"] == 2 and shorter["appended"] == 0
        working = await d.call("history/get", {"sessionId": "chat", "view": "raw"})
        assert len(working["entries"]) == 2


async def test_sync_survives_a_restart_without_appending_twice(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await _sync(d, CONVERSATION)
    async with start_daemon(storage) as d:
        again = await _sync(d, [*CONVERSATION, text("human", "next")])
        assert (again["appended"], again["forkedAt"]) == (1, None)


async def test_bad_sync_entries_append_nothing_and_name_the_path(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await _sync(d, CONVERSATION)
        bad = [*CONVERSATION, text("human", "ok"), {"speaker": "robot", "blocks": []}]
        err = await d.fails("history/sync", {"sessionId": "chat", "entries": bad})
        assert err.code == -32602 and "entries[5]" in err.message
        got = await d.call("history/get", {"sessionId": "chat", "view": "transcript"})
        assert len(got["entries"]) == len(CONVERSATION)


async def test_usage_adds_up_in_the_status_and_a_retrieve_gives_pruned_content_back(
    storage: Path,
) -> None:
    seeds = {
        "compression.density.schedule": "every-turn",
        "compression.density.keepLatestView": False,
    }
    async with start_daemon(storage, init_settings=seeds) as d:
        await _sync(d, [*CONVERSATION, *write_pair("w1", "/w/a.py", "print(2)\n")])
        result = await d.call("history/compact", {"sessionId": "chat"})
        assert "r1" not in call_ids(result["history"])  # the stale read went
        back = await d.call("history/retrieve", {"sessionId": "chat", "callId": "r1"})
        assert back["call"]["parameters"] == {"file_path": "/w/a.py"}
        assert back["response"]["result"] == "print(1)\n"
        for n in (1, 2):
            status = await d.call(
                "history/usage",
                {
                    "sessionId": "chat",
                    "inputTokens": 100 * n,
                    "cacheReadTokens": 80,
                    "cacheWriteTokens": 20,
                    "outputTokens": 7,
                },
            )
        assert status["usage"] == {
            "calls": 2,
            "inputTokens": 300,
            "cacheReadTokens": 160,
            "cacheWriteTokens": 40,
            "outputTokens": 14,
        }
        listed = await d.call("history/list", {})
        assert listed["sessions"][0]["usage"]["calls"] == 2


@pytest.mark.parametrize(
    ("method", "params", "code"),
    [
        ("history/retrieve", {"sessionId": "chat", "callId": "nope"}, -32003),
        ("history/retrieve", {"sessionId": "chat", "callId": ""}, -32602),
        ("history/usage", {"sessionId": "chat", "inputTokens": -1}, -32602),
        ("history/usage", {"sessionId": "chat", "inputTokens": 5, "cacheReadTokens": -3}, -32602),
        ("history/usage", {"sessionId": "chat"}, -32602),
        ("history/usage", {"sessionId": "other", "inputTokens": 5}, -32001),
        ("history/sync", {"sessionId": "chat", "entries": "x"}, -32602),
    ],
)
async def test_bad_requests_get_their_codes(
    storage: Path, method: str, params: dict[str, Any], code: int
) -> None:
    async with start_daemon(storage) as d:
        await _sync(d, CONVERSATION)
        before = await d.call("history/get", {"sessionId": "chat"})
        err = await d.fails(method, params)
        assert err.code == code
        if code == -32003:
            assert err.message == "unknown call 'nope' in session 'chat'"
        assert await d.call("history/get", {"sessionId": "chat"}) == before


async def test_a_client_with_a_retrieve_tool_gets_pointers_it_can_follow(storage: Path) -> None:
    settings = {
        "compression.density.recencyPruning": True,
        "compression.density.recencyRetention": 1,
    }
    options = {"retrieveTool": "hdcontext_retrieve"}
    async with start_daemon(storage, init_settings=settings, init_options=options) as d:
        # An output long enough for its pointer to save tokens.
        found = "\n".join(f"a.py:{n}: TODO handle case {n}" for n in range(12))
        grep = [
            tool_call("g1", "Grep", {"pattern": "TODO"}),
            tool_response("g1", "Grep", found),
            tool_call("g2", "Grep", {"pattern": "FIXME"}),
            tool_response("g2", "Grep", "b.py:9: FIXME"),
        ]
        await _sync(d, [text("human", "look"), *grep])
        result = await d.call("history/compact", {"sessionId": "chat"})
        results = {
            b["callId"]: b["result"]
            for e in result["history"]
            for b in e["blocks"]
            if b["type"] == "tool_response"
        }
        assert results == {
            "g1": '[Result pruned — call hdcontext_retrieve with callId "g1" to get it back]',
            "g2": "b.py:9: FIXME",
        }
        back = await d.call("history/retrieve", {"sessionId": "chat", "callId": "g1"})
        assert back["response"]["result"] == found


async def test_masked_output_comes_back_byte_for_byte(storage: Path) -> None:
    # The default masking (cold): the first compact finds the cache cold and masks the output
    # the model has answered, beyond the newest (maskRetention 1 here); the pointer names the
    # client's retrieve tool, and history/retrieve gives the output back as it was appended.
    options = {"retrieveTool": "hdcontext_retrieve"}
    settings = {"compression.density.maskRetention": 1}
    output = "".join(f"src/m{n}.py:{n}: TODO — handle the case «{n}»\t\n" for n in range(40))
    async with start_daemon(storage, init_settings=settings, init_options=options) as d:
        await _sync(
            d,
            [
                text("human", "find the TODOs"),
                tool_call("g1", "Grep", {"pattern": "TODO", "path": "src"}),
                tool_response("g1", "Grep", output),
                tool_call("g2", "Grep", {"pattern": "FIXME", "path": "src"}),
                tool_response("g2", "Grep", output.replace("TODO", "FIXME")),
                text("ai", "There are forty of each."),
            ],
        )
        result = await d.call("history/compact", {"sessionId": "chat"})
        results = {
            b["callId"]: b["result"]
            for e in result["history"]
            for b in e["blocks"]
            if b["type"] == "tool_response"
        }
        assert results["g1"] == (
            '[Output masked once read: Grep path="src" pattern="TODO" '
            f"(40 lines, {len(output)} characters) — "
            'call hdcontext_retrieve with callId "g1" to get it back]'
        )
        assert results["g2"] == output.replace("TODO", "FIXME")
        assert result["density"]["metadata"]["maskedPruned"] == 1
        assert result["status"]["maskedOutputs"] == 1 and result["status"]["maskedTokens"] > 0
        assert d.tokens[-1]["maskedOutputs"] == 1
        back = await d.call("history/retrieve", {"sessionId": "chat", "callId": "g1"})
        assert back["response"]["result"] == output
        assert back["call"]["parameters"] == {"pattern": "TODO", "path": "src"}
    async with start_daemon(storage, init_settings=settings, init_options=options) as d:
        listed = await d.call("history/list", {})  # the session is not loaded: from its state
        assert listed["sessions"][0]["maskedOutputs"] == 1
