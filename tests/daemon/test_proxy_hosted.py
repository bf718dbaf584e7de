"""The proxy served by an editor's daemon (``initializationOptions.proxy``): what an agent
sends through it shows in the editor as the daemon's ``history/tokens``, the status bar's feed.
The real daemon over stdio (pytest-lsp), a fake provider that answers one message as the
upstream (the proxy's own tests, tests/proxy/, script a whole agent)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import aiohttp
from aiohttp import web
from lsprotocol import types

from .harness import start_daemon

ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude",
    "content": [{"type": "text", "text": "hello"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 10, "cache_read_input_tokens": 100, "output_tokens": 2},
}


async def test_an_agent_through_the_daemons_proxy_shows_in_the_editor(tmp_path: Path) -> None:
    received: list[object] = []

    async def answer(request: web.Request) -> web.Response:
        received.append(await request.json())
        return web.json_response(ANSWER)

    app = web.Application()
    app.router.add_post("/v1/messages", answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    upstream = f"http://127.0.0.1:{runner.addresses[0][1]}"
    options = {"proxy": {"port": 0, "anthropicUpstream": upstream, "contextLimit": 500_000}}
    try:
        async with start_daemon(tmp_path / "storage", init_options=options) as daemon:
            said = [
                m.message
                for m in daemon.client.log_messages
                if m.type == types.MessageType.Info and "proxy listening" in m.message
            ]
            (line,) = said
            (notice,) = [
                m.message for m in daemon.client.log_messages if "kept on disk" in m.message
            ]
            assert "initializationOptions.retentionDays" in notice  # said once, the editor's way
            found = re.search(r"(http://127\.0\.0\.1:\d+)", line)
            assert found is not None
            body = {
                "model": "claude-sonnet-4-5",
                "max_tokens": 10,
                "messages": [{"role": "user", "content": "hi"}],
            }
            async with (
                aiohttp.ClientSession() as client,
                client.post(found.group(1) + "/v1/messages", json=body) as response,
            ):
                assert response.status == 200
                assert (await response.json())["content"] == [{"type": "text", "text": "hello"}]
            for _ in range(50):
                if any(t["usage"]["calls"] for t in daemon.tokens):
                    break
                await asyncio.sleep(0.05)
            proxied = [t for t in daemon.tokens if t["sessionId"].startswith("proxy-anthropic-")]
            assert proxied and proxied[-1]["usage"]["calls"] == 1
            assert proxied[-1]["contextLimit"] == 500_000
            listed = await daemon.call("history/list", {})
            assert [s["sessionId"] for s in listed["sessions"]] == [proxied[-1]["sessionId"]]
    finally:
        await runner.cleanup()
    assert len(received) == 1
