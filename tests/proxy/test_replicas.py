"""Several ``hdcontext proxy`` processes on one PostgreSQL database, as a team's gateway runs
them behind a load balancer: any of them serves any request of a conversation.

A conversation whose requests alternate between two proxies sends upstream, byte for byte,
what it sends through one (the session's whole state is the database's, read again by whichever
process serves the next turn); sixteen conversations over both at once neither cross nor lose
an entry; a proxy killed mid-request loses nothing it answered, and the conversation goes on
through the other; a database that cannot be reached is one line at start, and mid-run the
requests go on as they came, said once. The proxies are real processes (``cli_proxy.py``),
the database a throwaway cluster (``tests/postgres_cluster.py``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from tests.postgres_cluster import Cluster

from .cli_proxy import ProxyProcess, proxy_process
from .fake_upstream import FakeUpstream
from .test_proxy_http import ANTHROPIC_HEADERS

pytestmark = pytest.mark.usefixtures("postgres_cluster")

CONTEXT_LIMIT = "6000"
"""Small enough that the conversations below are compressed before their end: the state the
replicas hand each other holds a compression, waiting edits and the cache's ledger."""


def _turn(marker: str, k: int) -> list[dict[str, Any]]:
    """A read or an edit of one of three files: later reads make earlier ones stale."""
    path = f"/work/{marker}/file_{(k // 2) % 3}.py"
    call = f"toolu_{marker}_{k}"
    if k % 2 == 0:
        name, params = "Read", {"file_path": path}
        result = "\n".join(f"{i}\tline {i} of {path} ({marker}), turn {k}" for i in range(40))
    else:
        name, params = "Edit", {"file_path": path, "old_string": "a", "new_string": "b"}
        result = f"The file {path} has been updated."
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"step {k} of {marker}"},
                {"type": "tool_use", "id": call, "name": name, "input": params},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call, "content": result}],
        },
    ]


def _body(marker: str, turns: int) -> bytes:
    """The conversation ``marker`` at ``turns`` turns, as an agent sends it (every other
    request streamed)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"fix the files of {marker}"}]
    for k in range(turns):
        messages += _turn(marker, k)
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "stream": turns % 2 == 1,
        "system": [{"type": "text", "text": f"system prompt of {marker}"}],
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
        "messages": messages,
    }
    return json.dumps(body, separators=(",", ":")).encode()


def _ok(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "ok"}]


@contextlib.asynccontextmanager
async def _upstream(fake: FakeUpstream) -> AsyncIterator[str]:
    runner = web.AppRunner(fake.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@contextlib.asynccontextmanager
async def _proxies(storage: str, upstream: str, n: int) -> AsyncIterator[list[ProxyProcess]]:
    args = ("--anthropic-upstream", upstream, "--context-limit", CONTEXT_LIMIT)
    async with contextlib.AsyncExitStack() as stack:
        started = await asyncio.gather(
            *(stack.enter_async_context(proxy_process(storage, *args)) for _ in range(n))
        )
        yield list(started)


async def _send(client: aiohttp.ClientSession, proxy: ProxyProcess, data: bytes) -> None:
    async with client.post(proxy.url + "/v1/messages", data=data, headers=ANTHROPIC_HEADERS) as r:
        assert r.status == 200, await r.text()
        await r.read()


async def _conversation(storage: str, replicas: int, turns: int) -> list[bytes]:
    """The bodies that went upstream for one conversation of ``turns`` requests, through
    ``replicas`` proxies taken in turn."""
    fake = FakeUpstream(_ok)
    async with (
        _upstream(fake) as upstream,
        _proxies(storage, upstream, replicas) as proxies,
        aiohttp.ClientSession() as client,
    ):
        for k in range(1, turns + 1):
            await _send(client, proxies[k % replicas], _body("solo", k))
    assert len(fake.api_requests) == turns
    return [seen.raw for seen in fake.api_requests]


def _sessions(storage: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "hdcontext", "sessions", "list", "--json", "--storage", storage],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed: list[dict[str, Any]] = json.loads(done.stdout)
    return listed


async def test_a_conversation_alternating_between_two_proxies_sends_what_one_sends(
    postgres_cluster: Cluster, tmp_path: Any
) -> None:
    turns = 20
    started = time.monotonic()
    one = await _conversation(postgres_cluster.new_database(), 1, turns)
    two = await _conversation(postgres_cluster.new_database(), 2, turns)
    folder = await _conversation(str(tmp_path / "storage"), 1, turns)
    assert two == one
    assert folder == one  # and what a proxy on its own storage folder sends
    assert len(one[-1]) < len(_body("solo", turns)) - 4000  # compacted: edits and compression
    print(f"3 x {turns} turns in {time.monotonic() - started:.1f} s")


async def test_sixteen_conversations_over_two_proxies_at_once_neither_cross_nor_lose(
    postgres_cluster: Cluster,
) -> None:
    storage = postgres_cluster.new_database()
    markers = [f"conv{c:02d}" for c in range(16)]
    turns = 12
    fake = FakeUpstream(_ok)
    async with (
        _upstream(fake) as upstream,
        _proxies(storage, upstream, 2) as proxies,
        aiohttp.ClientSession() as client,
    ):

        async def converse(c: int, marker: str) -> None:
            for k in range(1, turns + 1):
                await _send(client, proxies[(c + k) % 2], _body(marker, k))

        started = time.monotonic()
        await asyncio.gather(*(converse(c, m) for c, m in enumerate(markers)))
        took = time.monotonic() - started
    assert len(fake.api_requests) == 16 * turns
    for seen in fake.api_requests:
        text = seen.raw.decode()
        (own,) = [m for m in markers if f"system prompt of {m}" in text]
        assert all(other not in text for other in markers if other != own)  # no crossing
    listed = await asyncio.to_thread(_sessions, storage)
    assert len(listed) == 16
    # Every entry of every request is stored: the first message and two a turn.
    assert sorted(s["transcript_entries"] for s in listed) == [1 + 2 * turns] * 16
    print(f"16 x {turns} turns over two proxies in {took:.1f} s")


class _Hanging:
    """An upstream that answers at once, but holds the request whose last message says
    ``hang`` until the test lets it go (the proxy serving it is killed meanwhile)."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    def app(self) -> web.Application:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        return app

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        self.bodies.append(raw)
        body = json.loads(raw)
        if "hang" in json.dumps(body["messages"][-1]):
            self.holding.set()
            await self.release.wait()
        message = {
            "id": f"msg_{len(self.bodies)}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": "ok"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        return web.json_response(message)


def _hanging_body(turns: int) -> bytes:
    body = json.loads(_body("killed", turns))
    body["stream"] = False
    body["messages"].append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    body["messages"].append({"role": "user", "content": "hang on"})
    return json.dumps(body).encode()


async def test_a_proxy_killed_mid_request_loses_nothing_it_answered(
    postgres_cluster: Cluster,
) -> None:
    storage = postgres_cluster.new_database()
    upstream = _Hanging()
    runner = web.AppRunner(upstream.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    url = f"http://127.0.0.1:{runner.addresses[0][1]}"
    try:
        async with (
            proxy_process(storage, "--anthropic-upstream", url) as doomed,
            proxy_process(storage, "--anthropic-upstream", url) as survivor,
            aiohttp.ClientSession() as client,
        ):
            for k in range(1, 7):
                await _send(client, (doomed, survivor)[k % 2], _body("killed", k))
            pending = asyncio.ensure_future(_send(client, doomed, _hanging_body(6)))
            await asyncio.wait_for(upstream.holding.wait(), 30)
            doomed.process.send_signal(signal.SIGKILL)
            assert await asyncio.wait_for(doomed.process.wait(), 30) == -signal.SIGKILL
            with pytest.raises(aiohttp.ClientError):
                await pending
            upstream.release.set()
            # The agent retries on the other proxy, then goes on there.
            await _send(client, survivor, _hanging_body(6))
            body = json.loads(_hanging_body(6))
            for k in range(2):
                body["messages"].append(
                    {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
                )
                body["messages"].append({"role": "user", "content": f"and then {k}?"})
                await _send(client, survivor, json.dumps(body).encode())
    finally:
        await runner.cleanup()
    (session,) = await asyncio.to_thread(_sessions, storage)
    # Every message of the last request: nothing answered was lost, nothing twice.
    assert session["transcript_entries"] == len(body["messages"])
    assert b"and then 1?" in upstream.bodies[-1]


async def test_an_unreachable_database_at_start_is_one_line_without_its_password() -> None:
    url = "postgresql://hdc:s3cret-pw@127.0.0.1:1/sessions?connect_timeout=2"
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "hdcontext", "proxy", "--port", "0", "--storage", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        "hdcontext proxy: cannot use the database postgresql://hdc@127.0.0.1:1/sessions"
    )
    assert "s3cret" not in done.stderr


async def test_a_database_lost_mid_run_sends_requests_as_they_came_and_says_so_once(
    postgres_cluster: Cluster,
) -> None:
    from tests.storage.test_postgres import _forwarder

    database = postgres_cluster.new_database().split("?")[0].rsplit("/", 1)[1]
    fake = FakeUpstream(_ok)
    async with (
        _forwarder(postgres_cluster) as (port, (cut, restore)),
        _upstream(fake) as upstream,
        aiohttp.ClientSession() as client,
    ):
        storage = f"postgresql://hdc:pw@127.0.0.1:{port}/{database}"
        async with proxy_process(storage, "--anthropic-upstream", upstream) as proxy:
            for k in range(1, 4):
                await _send(client, proxy, _body("lost", k))
            await cut()
            for k in range(4, 8):
                await _send(client, proxy, _body("lost", k))
                assert fake.api_requests[-1].raw == _body("lost", k)  # as it came
            await restore()
            await asyncio.sleep(1.2)
            await _send(client, proxy, _body("lost", 8))
            await _send(client, proxy, _body("lost", 9))
        log = proxy.log
    assert log.count("cannot be reached") == 1, log
    assert log.count("answers again") == 1, log
    assert fake.api_requests[-1].raw != _body("lost", 9)  # carried again
    assert ":pw@" not in log
