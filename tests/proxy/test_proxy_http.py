"""The proxy over real HTTP (aiohttp's client), against the scripted fake provider: what goes
through hdcontext and what goes as it came, who is refused, what the client gets back, and
what never leaves the request (API keys, content)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import stat
import threading
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp.http_writer import StreamWriter
from yarl import URL

from hdcontext.edges.proxy import compactor, upstream
from hdcontext.edges.proxy.upstream import SESSION_HEADER

from .conftest import Running, start, stop
from .fake_upstream import ANTHROPIC_USAGE

KEY = "sk-ant-secret-key-0123456789"
BEARER = "Bearer sk-openai-secret-0123456789"
SECRET_TEXT = "the-conversation-content-nobody-logs"
ANTHROPIC_HEADERS = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
CACHED = {"cache_control": {"type": "ephemeral"}}


def anthropic_body(stream: bool = False, **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "stream": stream,
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": SECRET_TEXT, "cache_control": {"type": "ephemeral"}}
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hm", "signature": "sig"},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"},
                    {"type": "text", "text": "go on", "cache_control": {"type": "ephemeral"}},
                ],
            },
        ],
        **extra,
    }


async def post(
    running: Running, path: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    async with (
        aiohttp.ClientSession() as client,
        client.post(running.url + path, data=data, headers=headers or {}) as response,
    ):
        return response.status, await response.read(), dict(response.headers)


def marks(body: dict[str, Any]) -> list[tuple[int, int]]:
    return [
        (i, j)
        for i, m in enumerate(body["messages"])
        if isinstance(m["content"], list)
        for j, b in enumerate(m["content"])
        if "cache_control" in b
    ]


async def test_a_request_goes_through_hdcontext_with_the_rest_as_sent(running: Running) -> None:
    status, data, _ = await post(running, "/v1/messages", anthropic_body(), ANTHROPIC_HEADERS)
    assert status == 200
    assert json.loads(data)["content"] == [{"type": "text", "text": "fine"}]
    (seen,) = running.fake.api_requests
    sent = anthropic_body()
    assert {k: v for k, v in seen.body.items() if k != "messages"} == {
        k: v for k, v in sent.items() if k != "messages"
    }
    # The client's message breakpoints are gone; the daemon's (the last entry) is there.
    messages = seen.body["messages"]
    assert marks(seen.body) == [(2, 1)]
    assert messages[0]["content"] == SECRET_TEXT
    assert messages[1]["content"][0] == {"type": "thinking", "thinking": "hm", "signature": "sig"}
    assert messages[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": "x = 1",
    }
    # The key went upstream, and the session holds the conversation.
    assert seen.headers["x-api-key"] == KEY
    (session,) = await running.statuses()
    assert session["entryCount"] == 4
    assert session["usage"]["calls"] == 1


async def test_a_body_of_megabytes_goes_upstream_apart_from_its_headers(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A large body is written after its headers (``upstream._Body``), not in one piece
    with them (which copies the whole conversation before Python 3.12.9): no write of the
    request to the upstream carries headers and body together. It still goes as one request
    of the length it says, not chunked, every byte of it there."""
    joined: list[int] = []
    writelines = StreamWriter._writelines
    upstream_host = f"Host: {URL(running.fake_url).host}:{URL(running.fake_url).port}".encode()

    def recorded(self: StreamWriter, chunks: Any) -> None:
        chunks = list(chunks)
        if chunks and upstream_host in bytes(chunks[0][:1024]):
            joined.append(sum(len(c) for c in chunks))
        writelines(self, chunks)

    monkeypatch.setattr(StreamWriter, "_writelines", recorded)
    body = anthropic_body()
    output = "".join(f"line {n}: {'x' * 60}\n" for n in range(40_000))  # 2.7 MB
    body["messages"][2]["content"][0]["content"] = output
    status, _, _ = await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
    assert status == 200
    assert all(size < upstream.SEPARATE_HEADERS_BYTES for size in joined), joined
    (seen,) = running.fake.api_requests
    assert len(seen.raw) > upstream.SEPARATE_HEADERS_BYTES
    assert int(seen.headers["Content-Length"]) == len(seen.raw)
    assert "Transfer-Encoding" not in seen.headers
    assert seen.body["messages"][2]["content"][0]["content"] == output


async def test_the_answer_streams_back_unchanged_and_its_usage_is_recorded(
    running: Running,
) -> None:
    status, via_proxy, headers = await post(
        running, "/v1/messages", anthropic_body(stream=True), ANTHROPIC_HEADERS
    )
    assert status == 200
    assert headers["Content-Type"].startswith("text/event-stream")
    async with (
        aiohttp.ClientSession() as client,
        client.post(running.fake_url + "/v1/messages", json=anthropic_body(stream=True)) as direct,
    ):
        straight = await direct.read()
    # The same events, byte for byte, but for the message id the fake counts up.
    assert re.sub(rb"msg_\d+", b"msg_", via_proxy) == re.sub(rb"msg_\d+", b"msg_", straight)
    (session,) = await running.statuses()
    u = ANTHROPIC_USAGE
    assert session["usage"] == {
        "calls": 1,
        "inputTokens": u["input_tokens"]
        + u["cache_read_input_tokens"]
        + u["cache_creation_input_tokens"],
        "cacheReadTokens": u["cache_read_input_tokens"],
        "cacheWriteTokens": u["cache_creation_input_tokens"],
        "outputTokens": u["output_tokens"],
    }


async def test_no_more_than_four_breakpoints(running: Running) -> None:
    body = anthropic_body()
    body["system"] = [
        {"type": "text", "text": f"part {k}", "cache_control": {"type": "ephemeral"}}
        for k in range(4)
    ]
    await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
    (seen,) = running.fake.api_requests
    assert marks(seen.body) == []  # the client's four in system leave no room
    assert seen.body["system"] == body["system"]


async def test_the_session_header_names_the_session_and_stays_here(running: Running) -> None:
    headers = {**ANTHROPIC_HEADERS, SESSION_HEADER: "my-chat"}
    await post(running, "/v1/messages", anthropic_body(), headers)
    (seen,) = running.fake.api_requests
    assert SESSION_HEADER not in {k.lower() for k in seen.headers}
    assert [s["sessionId"] for s in await running.statuses()] == ["my-chat"]


async def test_a_resent_conversation_is_one_session(running: Running) -> None:
    body = anthropic_body()
    await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
    longer = anthropic_body()
    longer["messages"] += [
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "thanks"},
    ]
    await post(running, "/v1/messages", longer, ANTHROPIC_HEADERS)
    (session,) = await running.statuses()
    assert session["entryCount"] == 6
    assert session["usage"]["calls"] == 2


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"{not json", "not JSON"),
        (b"[1, 2]", "not a JSON object"),
        (json.dumps({"model": "m"}).encode(), "no 'messages' list"),
        (
            json.dumps(
                anthropic_body(
                    messages=[
                        {"role": "user", "content": "hi"},
                        {
                            "role": "assistant",
                            "content": [{"type": "server_tool_use", "id": "s", "name": "web"}],
                        },
                        {"role": "user", "content": "more"},
                    ]
                )
            ).encode(),
            "block type 'server_tool_use'",
        ),
        (
            json.dumps(
                anthropic_body(
                    messages=[
                        {
                            "role": "user",
                            "content": [
                                {
                                    "type": "text",
                                    "text": "a",
                                    "citations": [
                                        {
                                            "type": "char_location",
                                            "cited_text": "x",
                                            "document_index": 0,
                                            "start_char_index": 0,
                                            "end_char_index": 1,
                                        }
                                    ],
                                }
                            ],
                        }
                    ]
                )
            ).encode(),
            "keys the conversion leaves out",
        ),
        (
            json.dumps(
                anthropic_body(
                    messages=[
                        {"role": "user", "content": "hi"},
                        {
                            "role": "assistant",
                            "content": [{"type": "tool_use", "id": "t", "name": "R", "input": {}}],
                        },
                        {"role": "user", "content": "no result"},
                    ]
                )
            ).encode(),
            "breaks the provider's rules",
        ),
    ],
    ids=["not-json", "not-object", "no-messages", "server-tool", "citations", "unanswered"],
)
async def test_what_hdcontext_cannot_carry_goes_as_it_came(
    running: Running, body: bytes, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hdcontext")
    status, _, _ = await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
    (seen,) = running.fake.seen
    assert seen.raw == body  # byte for byte
    assert status in (200, 400)
    assert any(why in r.getMessage() and "unchanged" in r.getMessage() for r in caplog.records)
    assert await running.statuses() == []


async def test_an_empty_citations_list_is_carried(running: Running) -> None:
    """Claude Code writes ``"citations": []`` on the text it makes up for an interrupted tool
    use: it cites nothing, so the conversation is carried (the key left out) rather than every
    later request of it going as it came."""
    interrupted = {"type": "text", "text": "[Tool use interrupted]", "citations": []}
    body = anthropic_body(
        messages=[
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [interrupted]},
            {"role": "user", "content": "go on"},
        ]
    )
    status, _, _ = await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
    assert status == 200
    (seen,) = running.fake.api_requests
    assert "citations" not in json.dumps(seen.body["messages"])
    assert "[Tool use interrupted]" in json.dumps(seen.body["messages"][1])
    assert running.proxy.state.compacted == 1 and running.proxy.state.unchanged == 0


async def test_a_conversation_that_cannot_be_carried_is_warned_of_once(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    """Every request of a conversation hdcontext cannot carry goes as it came, for the same
    reason each time: a warning the first time, a debug line for the same reason after, and a
    warning again for another reason."""
    caplog.set_level(logging.DEBUG, logger="hdcontext")
    server = {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {}}
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [server]},
        {"role": "user", "content": "more"},
    ]
    for turn in range(3):
        grown = messages + [
            m
            for k in range(turn)
            for m in (
                {"role": "assistant", "content": f"answer {k}"},
                {"role": "user", "content": f"again {k}"},
            )
        ]
        status, _, _ = await post(
            running, "/v1/messages", anthropic_body(messages=grown), ANTHROPIC_HEADERS
        )
        assert status == 200
    await post(running, "/v1/messages", b"{not json", ANTHROPIC_HEADERS)
    said = [r for r in caplog.records if "forwarded unchanged" in r.getMessage()]
    assert [r.levelname for r in said] == ["WARNING", "DEBUG", "DEBUG", "WARNING"]
    assert "server_tool_use" in said[1].getMessage() and "again" in said[1].getMessage()
    assert running.proxy.state.unchanged == 4


async def test_hdcontext_too_slow_sends_the_request_as_it_came(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hdcontext")
    running, runners = await start(
        tmp_path, lambda body: [{"type": "text", "text": "ok"}], bound_s=0
    )
    try:
        raw = json.dumps(anthropic_body()).encode()
        status, _, _ = await post(running, "/v1/messages", raw, ANTHROPIC_HEADERS)
    finally:
        await stop(running, runners)
    assert status == 200
    (seen,) = running.fake.api_requests
    assert seen.raw == raw  # as it came: the client's breakpoints and all
    assert any("longer than" in r.getMessage() for r in caplog.records)


async def test_a_client_gone_while_hdcontext_works_gets_no_call_made(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client that leaves while hdcontext compacts its request (an agent stopped) would
    have made no call without the proxy: none is made for it (fails without the check)."""
    compactor = running.proxy.state.compactor
    compact = compactor.compact

    async def slow(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0.5)
        return await compact(*args, **kwargs)

    monkeypatch.setattr(compactor, "compact", slow)
    call = asyncio.ensure_future(post(running, "/v1/messages", anthropic_body(), ANTHROPIC_HEADERS))
    await asyncio.sleep(0.1)
    call.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await call
    await asyncio.sleep(1.0)
    assert running.fake.api_requests == []


async def test_a_failure_of_hdcontext_sends_the_request_as_it_came(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hdcontext")
    headers = {**ANTHROPIC_HEADERS, SESSION_HEADER: "x" * 600}  # the daemon refuses the id
    raw = json.dumps(anthropic_body()).encode()
    status, _, _ = await post(running, "/v1/messages", raw, headers)
    assert status == 200
    (seen,) = running.fake.api_requests
    assert seen.raw == raw
    assert any("hdcontext failed: WireError" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("path", ["/v1/messages", "/v1/chat/completions"])
async def test_an_upstream_refusal_reaches_the_client_as_it_was(
    running: Running, path: str
) -> None:
    refusal = {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    running.fake.refuse = (429, refusal)
    body: Any = anthropic_body()
    headers = ANTHROPIC_HEADERS
    if path.endswith("completions"):
        body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
        headers = {"Authorization": BEARER}
    status, data, _ = await post(running, path, body, headers)
    assert (status, json.loads(data)) == (429, refusal)
    (session,) = await running.statuses()
    assert session["usage"]["calls"] == 0  # nothing billed, nothing recorded


@pytest.mark.parametrize(
    ("path", "name"), [("/v1/messages", "anthropic"), ("/v1/chat/completions", "openai")]
)
async def test_an_upstream_that_is_down_is_a_502_naming_it(
    tmp_path: Path, path: str, name: str
) -> None:
    running, runners = await start(tmp_path, lambda body: [])
    await runners[0].cleanup()  # the fake upstream stops: its port answers nothing
    try:
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
        headers = ANTHROPIC_HEADERS if name == "anthropic" else {"Authorization": BEARER}
        status, data, _ = await post(running, path, body, headers)
    finally:
        await stop(running, [])
    assert status == 502
    message = json.dumps(json.loads(data))
    assert f"the {name} upstream ({running.fake_url}" in message


@pytest.mark.parametrize(
    ("headers", "allowed"),
    [
        ({}, True),
        ({"Host": "localhost:{port}"}, True),
        ({"Host": "evil.example:{port}"}, False),  # DNS rebinding: a name that is not ours
        ({"Host": "127.0.0.1:1"}, False),
        ({"Origin": "http://127.0.0.1:{port}"}, False),  # a web page
        ({"Origin": "null"}, False),
    ],
    ids=["loopback", "localhost", "rebinding", "other-port", "page", "null-origin"],
)
async def test_only_local_programs_may_call(
    running: Running, headers: dict[str, str], allowed: bool
) -> None:
    port = running.proxy.port
    filled = {k: v.format(port=port) for k, v in headers.items()}
    status, data, _ = await post(
        running, "/v1/messages", anthropic_body(), {**ANTHROPIC_HEADERS, **filled}
    )
    if allowed:
        assert status == 200
        assert len(running.fake.seen) == 1
    else:
        assert status == 403
        assert b"hdcontext proxy" in data
        assert running.fake.seen == []
        assert await running.statuses() == []


async def test_other_paths_pass_through_to_the_upstream_they_belong_to(running: Running) -> None:
    async with aiohttp.ClientSession() as client:
        async with client.get(
            running.url + "/v1/models?limit=3", headers={"Authorization": BEARER}
        ) as response:
            assert response.status == 404  # the fake's answer, as it was
            assert await response.json() == {"path": "/v1/models", "fake": True}
        async with client.post(
            running.url + "/v1/messages/count_tokens?beta=true",
            json={"messages": []},
            headers=ANTHROPIC_HEADERS,
        ) as response:
            assert response.status == 404
    models, count = running.fake.seen
    assert (models.method, models.path) == ("GET", "/v1/models?limit=3")  # no second /v1
    assert models.headers["Authorization"] == BEARER
    assert (count.path, count.body) == ("/v1/messages/count_tokens?beta=true", {"messages": []})
    assert await running.statuses() == []


async def test_keys_and_content_stay_out_of_logs_and_storage(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    for stream in (False, True):
        await post(running, "/v1/messages", anthropic_body(stream), ANTHROPIC_HEADERS)
    openai_body = {"model": "gpt-4.1", "messages": [{"role": "user", "content": SECRET_TEXT}]}
    await post(running, "/v1/chat/completions", openai_body, {"Authorization": BEARER})
    await post(running, "/v1/messages", b"{broken " + SECRET_TEXT.encode(), ANTHROPIC_HEADERS)
    assert [
        s.headers.get("x-api-key") or s.headers.get("Authorization") for s in running.fake.seen
    ] == [
        KEY,
        KEY,
        BEARER,
        KEY,
    ]
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "unchanged" in logged and "entries in" in logged  # it did log
    for secret in (KEY, BEARER.split()[1], SECRET_TEXT):
        assert secret not in logged
    # Storage: private, and no key in it (the conversation is, as for the daemon).
    assert stat.S_IMODE(running.storage.stat().st_mode) == 0o700
    stored = b"".join(p.read_bytes() for p in running.storage.rglob("*") if p.is_file())
    assert KEY.encode() not in stored and BEARER.split()[1].encode() not in stored


async def _taken_in(running: Running) -> None:
    """Wait for the conversations being taken in."""
    await running.proxy.state.settled()


async def test_a_large_new_conversation_goes_as_it_came_and_is_taken_in(tmp_path: Path) -> None:
    """A conversation the daemon does not know, past ``pass_bytes``, is not held up while it
    is counted and stored: it goes upstream byte for byte as the client sent it, with its
    usage recorded, and the daemon takes it in meanwhile; the next request finds it held
    and is compacted (the daemon's breakpoint, not the client's). A restarted proxy (the
    daemon knows the session) compacts the first request it gets."""
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "fine"}])
    running.proxy.state.compactor.pass_bytes = 0
    first = json.dumps(anthropic_body()).encode()
    try:
        status, _, _ = await post(running, "/v1/messages", first, ANTHROPIC_HEADERS)
        assert status == 200
        await _taken_in(running)
        (passed,) = running.fake.api_requests
        assert passed.raw == first
        (session,) = await running.statuses()
        assert session["entryCount"] == 4
        assert session["usage"]["calls"] == 1
        grown = anthropic_body()
        grown["messages"] += [
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            {"role": "user", "content": [{"type": "text", "text": "next", **CACHED}]},
        ]
        status, _, _ = await post(running, "/v1/messages", grown, ANTHROPIC_HEADERS)
        assert status == 200
        compacted = running.fake.api_requests[1]
        assert marks(compacted.body) == [(4, 0)]  # the daemon's, on the last entry
        (session,) = await running.statuses()
        assert session["entryCount"] == 6
        assert session["usage"]["calls"] == 2
    finally:
        await stop(running, runners)
    again, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "fine"}])
    again.proxy.state.compactor.pass_bytes = 0
    try:
        status, _, _ = await post(again, "/v1/messages", grown, ANTHROPIC_HEADERS)
        assert status == 200
        (seen,) = again.fake.api_requests
        assert marks(seen.body) == [(4, 0)]
        assert not again.proxy.state.compactor._ingests
    finally:
        await stop(again, runners)


async def test_a_new_conversation_goes_on_at_once_while_it_is_taken_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Taking a large conversation in holds the interpreter for seconds (a real session ten
    times over: 1.4 to 2.3 s of the client's wait, when the answer waited for it). Here it is
    held until the test lets it go: the first request's answer, in one body, comes back all
    the same, and so does the next request's, at once, as it came; once the conversation is
    taken in, each call has its row and the next request is compacted."""
    release = threading.Event()
    started = threading.Event()
    real = compactor._take_whole

    def held(*args: Any) -> Any:
        started.set()
        release.wait(30)
        return real(*args)

    monkeypatch.setattr(compactor, "_take_whole", held)
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "fine"}])
    running.proxy.state.compactor.pass_bytes = 0
    body = anthropic_body()
    try:
        status, _, _ = await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
        assert status == 200  # answered while its conversation is being taken in
        assert await asyncio.to_thread(started.wait, 10) and not release.is_set()
        body["messages"] += [
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
            {"role": "user", "content": [{"type": "text", "text": "next"}]},
        ]
        status, _, _ = await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
        assert status == 200  # at once, as it came: nothing waited for the taking in
        assert [s.body for s in running.fake.api_requests][-1] == body
        release.set()
        await running.proxy.state.settled()
        body["messages"] += [
            {"role": "assistant", "content": [{"type": "text", "text": "done again"}]},
            {"role": "user", "content": [{"type": "text", "text": "and next"}]},
        ]
        status, _, _ = await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
        assert status == 200
        (session,) = await running.statuses()
    finally:
        release.set()
        await stop(running, runners)
    assert (running.proxy.state.unchanged, running.proxy.state.compacted) == (2, 1)
    assert session["usage"]["calls"] == 3
    assert session["entryCount"] == 8
