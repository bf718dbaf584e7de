"""What the proxy keeps of each call for ``hdcontext stats`` (the daemon's charge, the billed
usage with Anthropic's one-hour writes), and its savings page on its own port: the figures,
the page's headers, and the same Host/Origin rules as its API. No content on the page."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from hdcontext.edges.storage.sqlite_reader import ReadOnly

from .conftest import Running
from .test_proxy_http import ANTHROPIC_HEADERS, SECRET_TEXT, anthropic_body, post

USAGE = {
    "input_tokens": 100,
    "cache_read_input_tokens": 1000,
    "cache_creation_input_tokens": 300,
    "cache_creation": {"ephemeral_5m_input_tokens": 200, "ephemeral_1h_input_tokens": 100},
    "output_tokens": 7,
}
CC = {"type": "ephemeral"}
# Sonnet 4.5's published prices ($ per million): input 3, output 15, cache read 0.30, 5m write
# 3.75, 1h write 6.
CALL_COST = (100 * 3 + 1000 * 0.30 + 200 * 3.75 + 100 * 6 + 7 * 15) / 1e6


async def get(running: Running, path: str, headers: dict[str, str] | None = None) -> Any:
    async with (
        aiohttp.ClientSession() as client,
        client.get(running.url + path, headers=headers or {}) as response,
    ):
        return response.status, await response.read(), dict(response.headers)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_each_call_is_kept_with_what_the_provider_billed(
    running: Running, stream: bool
) -> None:
    running.fake.anthropic_usage = dict(USAGE)
    for _ in range(2):
        body = anthropic_body(stream)
        status, _, _ = await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
        assert status == 200
    (session,) = await running.statuses()
    with ReadOnly(running.storage) as db:  # beside the running proxy
        rows = db.calls()
    # The first call's bill went to the file with the second call's commit; the last one's
    # waits for the next commit, or a while: it is in the file once saved.
    assert [r.billed is not None for r in rows] == [True, False]
    await running.proxy.state.compactor.saved()
    with ReadOnly(running.storage) as db:
        rows = db.calls()
    assert [(r.session_id, r.kind, r.model) for r in rows] == [
        (session["sessionId"], "model", "claude-sonnet-4-5")
    ] * 2
    for row in rows:
        assert row.billed is not None and row.charge is not None and row.off is not None
        assert (row.billed.input, row.billed.read, row.billed.write) == (1400, 1000, 300)
        assert (row.billed.write_1h, row.billed.output) == (100, 7)
        assert row.charge.total > 0 and row.off.total >= row.charge.total


async def test_a_growing_conversation_has_a_row_per_call_on_every_path(running: Running) -> None:
    """Its first request goes as it came while the daemon takes it in, the next ones are read
    from the previous request's bytes: each call is one row with its bill all the same."""
    running.proxy.state.compactor.pass_bytes = 1  # a conversation not seen goes as it came
    running.fake.anthropic_usage = dict(USAGE)
    body = anthropic_body(True)
    for turn in range(4):
        status, _, _ = await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
        assert status == 200
        await running.proxy.state.settled()  # the first one taken in (an agent's pause)
        body["messages"][-1]["content"][-1].pop("cache_control")
        body["messages"] += [
            {"role": "assistant", "content": [{"type": "text", "text": f"answer {turn}"}]},
            {
                "role": "user",
                "content": [{"type": "text", "text": f"go on {turn}", "cache_control": CC}],
            },
        ]
    assert (running.proxy.state.unchanged, running.proxy.state.compacted) == (1, 3)
    await running.proxy.state.compactor.saved()
    (session,) = await running.statuses()
    with ReadOnly(running.storage) as db:
        rows = db.calls()
    assert [(r.session_id, r.kind) for r in rows] == [(session["sessionId"], "model")] * 4
    for row in rows:
        assert row.billed is not None and row.charge is not None
        assert (row.billed.input, row.billed.write_1h) == (1400, 100)


async def test_a_calls_bill_reaches_the_file_without_another_request(running: Running) -> None:
    """The proxy saves a call's usage with the next commit; when none comes, on its own a
    moment later (here at once), so ``hdcontext stats`` in another process sees it."""
    running.proxy.state.compactor.saving.after_s = 0.0
    running.fake.anthropic_usage = dict(USAGE)
    status, _, _ = await post(running, "/v1/messages", anthropic_body(), ANTHROPIC_HEADERS)
    assert status == 200
    for _ in range(200):  # a bound, not a timing: the save is one small commit
        with ReadOnly(running.storage) as db:
            rows = db.calls()
        if rows and rows[0].billed is not None:
            break
        await asyncio.sleep(0.05)
    assert len(rows) == 1 and rows[0].billed is not None
    assert (rows[0].billed.input, rows[0].billed.write_1h) == (1400, 100)


async def test_the_page_on_the_proxys_port_shows_its_sessions(running: Running) -> None:
    running.fake.anthropic_usage = dict(USAGE)
    await post(running, "/v1/messages", anthropic_body(), ANTHROPIC_HEADERS)
    (session,) = await running.statuses()
    status, body, headers = await get(running, "/hdcontext/stats.json")
    assert status == 200
    figures = json.loads(body)
    assert figures["totals"]["calls"] == 1
    assert abs(figures["totals"]["cost"] - CALL_COST) < 1e-6
    assert figures["sessions"][0]["sessionId"] == session["sessionId"]
    status, page, headers = await get(running, "/")
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert headers["Cache-Control"] == "no-store"
    assert session["sessionId"].encode() in page
    assert SECRET_TEXT.encode() not in page and SECRET_TEXT.encode() not in body
    assert running.fake.seen[-1].path == "/v1/messages"  # the page went nowhere upstream


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://127.0.0.1:{port}"},
        {"Origin": "null"},
        {"Host": "evil.example:{port}"},
    ],
    ids=["page", "null-origin", "rebinding"],
)
async def test_the_page_keeps_the_apis_rules(running: Running, headers: dict[str, str]) -> None:
    port = running.proxy.port
    filled = {k: v.format(port=port) for k, v in headers.items()}
    for path in ("/", "/hdcontext/stats.json"):
        status, body, _ = await get(running, path, filled)
        assert status == 403
        assert b"calls" not in body
    assert running.fake.seen == []


async def test_the_page_says_which_requests_went_as_they_came(running: Running) -> None:
    """A request the proxy cannot carry saves nothing and leaves no row: the page says how
    many went so since the proxy started, and why (kinds, never content)."""
    body = anthropic_body()
    body["messages"][1]["content"].append({"type": "server_tool_use", "id": "s", "name": "x"})
    for _ in range(2):
        await post(running, "/v1/messages", body, ANTHROPIC_HEADERS)
    assert running.fake.api_requests[-1].body == body  # as it came
    status, raw, _ = await get(running, "/hdcontext/stats.json")
    assert status == 200
    figures = json.loads(raw)
    assert figures["totals"]["calls"] == 0
    assert figures["proxy"] == {
        "asSent": 2,
        "reasons": [
            {
                "why": "anthropic not carried: messages[1].content[2] has block type "
                "'server_tool_use'",
                "requests": 2,
            }
        ],
        "notForwarded": 0,
        "notForwardedReasons": [],
        "passedThrough": 0,
        "passedThroughReasons": [],
    }
    assert SECRET_TEXT.encode() not in raw
