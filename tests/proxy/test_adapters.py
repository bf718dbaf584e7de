"""The proxy's pure parts: requests rebuilt around a history, breakpoints placed, usage read
from any split of a stream, upstream URLs and the guard's rules."""

from __future__ import annotations

import dataclasses
import itertools
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from hypothesis import given
from hypothesis import strategies as st
from yarl import URL

from hdcontext.core.content import IContent
from hdcontext.core.validity import payload_problems
from hdcontext.edges.proxy import assembly
from hdcontext.edges.proxy.anthropic import AnthropicApi
from hdcontext.edges.proxy.api import Api, Unsupported
from hdcontext.edges.proxy.guard import allowed_hosts, refusal
from hdcontext.edges.proxy.openai import BREAKPOINT_KEY, OpenAiApi
from hdcontext.edges.proxy.upstream import Upstream
from hdcontext.edges.proxy.usage import Billed, StreamUsage

from .conftest import start, stop
from .fake_upstream import ANTHROPIC_USAGE, OPENAI_USAGE, anthropic_events, openai_chunks

ANTHROPIC = AnthropicApi()
OPENAI = OpenAiApi()


def conversation(api: Api, body: dict[str, Any]) -> list[IContent]:
    messages = api.messages(body)
    api.check(messages, 0)
    return api.import_messages(messages)


def rebuild(
    api: Api, body: dict[str, Any], entries: list[IContent], breakpoints: list[int]
) -> dict[str, Any]:
    """The request rebuilt around ``entries``, read whole (what the proxy writes as bytes)."""
    mode = api.export_mode(body, api.messages(body), "")
    exported = [api.export_entry(e, mode) for e in entries]
    head = body["messages"][: api.head(body["messages"])]
    return {**body, "messages": [*head, *assembly.conversation(api, body, exported, breakpoints)]}


def _anthropic(messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"model": "claude-sonnet-4-5", "max_tokens": 10, "messages": messages, **extra}


CONVERSATION = [
    {"role": "user", "content": "start"},
    {"role": "system", "content": "per-turn note", "output_config": {"effort": "low"}},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"},
            {"type": "text", "text": "and?"},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "done"},
            {"type": "thinking", "thinking": "", "signature": "s"},
        ],
    },
    {"role": "user", "content": "thanks"},
]


def _round_trip(body: dict[str, Any], breakpoints: list[int]) -> dict[str, Any]:
    entries = conversation(ANTHROPIC, body)
    return rebuild(ANTHROPIC, body, entries, breakpoints)


def _strip_marks(messages: list[Any]) -> list[Any]:
    out = []
    for m in messages:
        content = m["content"]
        if isinstance(content, list):
            content = [{k: v for k, v in b.items() if k != "cache_control"} for b in content]
            if len(content) == 1 and set(content[0]) == {"type", "text"}:
                content = content[0]["text"]
        out.append({**m, "content": content})
    return out


def test_an_anthropic_conversation_comes_back_as_it_was_sent() -> None:
    body = _anthropic(CONVERSATION)
    out = _round_trip(body, [])
    assert out["messages"] == CONVERSATION  # system message, its extras, joined results
    assert payload_problems("anthropic", out) == []


def test_a_conversation_of_today_s_claude_code_is_carried_as_it_was_sent() -> None:
    """Callers on tool calls and the ``tool_reference`` parts of a ToolSearch's result (see
    tests/core/test_tool_loading.py): carried, back as sent; another shape is not."""
    search = {"type": "tool_use", "id": "t0", "name": "ToolSearch", "input": {"query": "q"}}
    loaded = [{"type": "tool_reference", "tool_name": "WebSearch"}]
    messages = [
        {"role": "user", "content": "look it up"},
        {"role": "assistant", "content": [{**search, "caller": {"type": "direct"}}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "t0", "content": loaded}],
        },
    ]
    body = _anthropic(messages)
    assert _round_trip(body, [])["messages"] == messages
    for part in (
        {"type": "tool_reference", "tool_name": "WebSearch", "other": 1},
        {"type": "tool_reference", "tool_name": 7},
    ):
        odd = [
            *messages[:2],
            {"role": "user", "content": [{**messages[2]["content"][0], "content": [part]}]},
        ]
        with pytest.raises(Unsupported, match="tool_reference"):
            conversation(ANTHROPIC, _anthropic(odd))


def test_a_conversation_is_named_without_the_tools_it_loads_as_it_goes() -> None:
    """Claude Code adds a deferred tool to ``tools`` once ToolSearch loaded it: the same
    conversation, the same session. Another tool of its own makes another conversation."""
    tools = [{"name": "Read"}, {"name": "Placeholder", "defer_loading": True}]
    loaded = [*tools, {"name": "WebSearch", "defer_loading": True}]
    first = ANTHROPIC.start({"system": "s", "tools": tools}, [])
    assert ANTHROPIC.start({"system": "s", "tools": loaded}, []) == first
    assert ANTHROPIC.start({"system": "s", "tools": [*tools, {"name": "Bash"}]}, []) != first


def test_breakpoints_go_on_the_last_block_that_may_carry_one() -> None:
    body = _anthropic(CONVERSATION)
    entries = conversation(ANTHROPIC, body)
    # Entries: user, system, ai, tool, human, ai (thinking last), human.
    assert [e.speaker for e in entries] == ["human", "human", "ai", "tool", "human", "ai", "human"]
    out = rebuild(ANTHROPIC, body, entries, [1, 5, 6])
    messages = out["messages"]
    # A string becomes one text block to carry the mark.
    assert messages[5]["content"] == [
        {"type": "text", "text": "thanks", "cache_control": {"type": "ephemeral"}}
    ]
    # Thinking cannot carry one: the text before it does.
    assert messages[4]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in messages[4]["content"][1]
    assert messages[1]["content"][0]["cache_control"] == {"type": "ephemeral"}
    assert messages[1]["output_config"] == {"effort": "low"}
    assert _strip_marks(messages) == CONVERSATION


def test_the_clients_own_breakpoints_leave_less_room() -> None:
    system = [{"type": "text", "text": "s", "cache_control": {"type": "ephemeral"}}]
    tools = [
        {"name": f"T{k}", "input_schema": {}, "cache_control": {"type": "ephemeral"}}
        for k in range(2)
    ]
    body = _anthropic(CONVERSATION, system=system, tools=tools)
    out = _round_trip(body, [0, 2, 6])
    placed = [
        i
        for i, m in enumerate(out["messages"])
        if isinstance(m["content"], list) and any("cache_control" in b for b in m["content"])
    ]
    assert placed == [5]  # one left of four: the latest
    assert out["system"] == system and out["tools"] == tools


def _openai_messages() -> list[dict[str, Any]]:
    return [
        {
            "role": "system",
            "content": [{"type": "text", "text": "sys", BREAKPOINT_KEY: {"mode": "explicit"}}],
        },
        {"role": "user", "content": "start"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x = 1"},
        {"role": "assistant", "content": "done"},
    ]


@pytest.mark.parametrize("model", ["gpt-5.6", "gpt-6", "gpt-4.1", "o3"])
def test_openai_breakpoints_only_where_the_model_caches_at_them(model: str) -> None:
    body = {"model": model, "messages": _openai_messages()}
    entries = conversation(OPENAI, body)
    assert [e.speaker for e in entries] == ["human", "ai", "tool", "ai"]
    out = rebuild(OPENAI, body, entries, [1, 3])
    messages = out["messages"]
    assert messages[0] == body["messages"][0]  # the client's system prompt as sent
    marked = [
        i
        for i, m in enumerate(messages)
        if isinstance(m.get("content"), list) and any(BREAKPOINT_KEY in p for p in m["content"])
    ]
    if model in ("gpt-5.6", "gpt-6"):
        # Assistant output cannot carry one: entry 3 (ai) goes back to the tool message,
        # entry 1 (ai) to the user message before it. The client's own counts: room for 2.
        assert marked == [0, 1, 3]
        assert messages[3]["content"] == [
            {"type": "text", "text": "x = 1", BREAKPOINT_KEY: {"mode": "explicit"}}
        ]
    else:
        assert marked == [0]
    assert payload_problems("openai", out) == []


def test_an_openai_request_the_conversion_would_rewrite_is_not_carried() -> None:
    for message in (
        {"role": "user", "content": "hi", "name": "bob"},
        {"role": "assistant", "content": None, "function_call": {"name": "f", "arguments": "{}"}},
        {"role": "user", "content": [{"type": "file", "file": {"file_id": "f-1"}}]},
        {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
        {"role": "assistant", "content": "see", "annotations": [{"type": "url_citation"}]},
        {"role": "assistant", "content": None, "audio": {"id": "a-1"}},
        {"role": "user", "content": "hi", "annotations": []},
    ):
        with pytest.raises(Unsupported):
            conversation(OPENAI, {"model": "gpt-4.1", "messages": [message]})
    # An answer sent back as the client got it, its empty keys too, is carried without them.
    answered = {"role": "assistant", "content": "ok", "refusal": None, "annotations": []}
    whole = {**answered, "audio": None, "function_call": None}
    for message in (answered, whole):
        (entry,) = conversation(OPENAI, {"model": "gpt-4.1", "messages": [message]})
        assert OPENAI.export_entry(entry, "") == [{"role": "assistant", "content": "ok"}]


def _stream(events: list[tuple[str | None, Any]]) -> bytes:
    return b"".join(
        (f"event: {n}\n" if n else "").encode()
        + b"data: "
        + (d if isinstance(d, str) else json.dumps(d)).encode()
        + b"\n\n"
        for n, d in events
    )


ANTHROPIC_STREAM = _stream(
    anthropic_events(
        {
            "id": "m",
            "type": "message",
            "role": "assistant",
            "model": "c",
            "content": [{"type": "text", "text": 'text with "usage" in it\nand a newline'}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": ANTHROPIC_USAGE,
        }
    )
)
OPENAI_STREAM = _stream(
    openai_chunks(
        "c", {"model": "gpt"}, {"role": "assistant", "content": "hi"}, "stop", OPENAI_USAGE
    )
)


@given(st.lists(st.integers(min_value=0, max_value=len(ANTHROPIC_STREAM)), max_size=12))
def test_usage_is_read_from_a_stream_however_it_is_split(cuts: list[int]) -> None:
    for provider, stream, expected in (
        ("anthropic", ANTHROPIC_STREAM, Billed(1300, 1000, 200, 7)),
        ("openai", OPENAI_STREAM, Billed(1300, 1000, 0, 9)),
    ):
        reader = StreamUsage(provider)
        points = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
        for a, b in itertools.pairwise(points):
            reader.feed(stream[a:b])
        assert reader.billed == expected


@pytest.mark.parametrize(
    ("base", "path", "url"),
    [
        (
            "https://api.anthropic.com",
            "/v1/messages?beta=true",
            "https://api.anthropic.com/v1/messages?beta=true",
        ),
        (
            "https://api.openai.com/v1",
            "/v1/chat/completions",
            "https://api.openai.com/v1/chat/completions",
        ),
        ("https://openrouter.ai/api/v1/", "/v1/models", "https://openrouter.ai/api/v1/models"),
        (
            "http://127.0.0.1:9000",
            "/v1/chat/completions",
            "http://127.0.0.1:9000/v1/chat/completions",
        ),
        (
            "https://gw.example/anthropic",
            "/v1/messages",
            "https://gw.example/anthropic/v1/messages",
        ),
    ],
)
def test_upstream_urls(base: str, path: str, url: str) -> None:
    assert str(Upstream("x", URL(base)).url(path)) == url


def test_the_guard() -> None:
    allowed = allowed_hosts("127.0.0.1", 8787)
    assert refusal("127.0.0.1:8787", None, allowed) is None
    assert refusal("LOCALHOST:8787", None, allowed) is None
    assert refusal("[::1]:8787", None, allowed) is None
    assert refusal("127.0.0.1", None, allowed) is not None
    assert refusal("attacker.example:8787", None, allowed) is not None
    assert refusal(None, None, allowed) is not None
    assert refusal("127.0.0.1:8787", "http://localhost:8787", allowed) is not None
    assert "[::1]:9" in allowed_hosts("::1", 9)


async def test_the_daemons_breakpoints_are_where_the_request_carries_them(tmp_path: Path) -> None:
    """``cache.breakpoints`` of the compact result, when the daemon names them, are the
    entries whose last block gets ``cache_control`` (PROTOCOL.md)."""
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "ok"}])

    real = running.daemon.sync_compact

    async def naming(raw: object, at: int | None = None, overrides: Any = None, **kw: Any) -> Any:
        result = await real(raw, at, overrides, **kw)
        cache = result.cache.model_copy(update={"breakpoints": [0, 3]})
        return dataclasses.replace(result, cache=cache)

    running.daemon.sync_compact = naming  # type: ignore[method-assign]
    try:
        async with aiohttp.ClientSession() as client:
            body = _anthropic(CONVERSATION)
            async with client.post(running.url + "/v1/messages", json=body) as response:
                assert response.status == 200
    finally:
        await stop(running, runners)
    (seen,) = running.fake.api_requests
    messages = seen.body["messages"]
    marked = [
        (i, j)
        for i, m in enumerate(messages)
        if isinstance(m["content"], list)
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]
    # Entry 0 is the first message; entry 3 (the tool results) shares message 3 with the
    # text the client sent after them, whose last block carries it.
    assert marked == [(0, 0), (3, 1)]


def test_entries_are_plain_icontent() -> None:
    entries = conversation(ANTHROPIC, _anthropic(CONVERSATION))
    assert all(isinstance(e, IContent) for e in entries)


async def test_the_proxys_sessions_name_no_retrieve_tool(tmp_path: Path) -> None:
    """The editor's daemon names its retrieve tool in pointers; the agents behind the proxy
    it also serves have no such tool, so their sessions' pointers do not name it."""
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "ok"}])
    running.daemon.retrieve_tool = "hdcontext_retrieve"
    try:
        async with (
            aiohttp.ClientSession() as client,
            client.post(
                running.url + "/v1/messages",
                json=_anthropic(CONVERSATION),
                headers={"x-hdcontext-session": "agent"},
            ) as response,
        ):
            assert response.status == 200
        proxied = await running.daemon.registry.get("agent")
        assert proxied.density_config(proxied.resolved()).retrieve_tool is None
        await running.daemon.open({"sessionId": "editor"})
        editor = await running.daemon.registry.get("editor")
        assert editor.density_config(editor.resolved()).retrieve_tool == "hdcontext_retrieve"
    finally:
        await stop(running, runners)
