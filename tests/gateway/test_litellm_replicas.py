"""Two replicas of LiteLLM's real proxy with hdcontext's callback, on one PostgreSQL database
(``HDCONTEXT_DATABASE_URL``), as a team's gateway runs behind a load balancer: any replica
serves any request of any conversation.

Sixteen conversations of two users, their requests alternating between the replicas, all at
once: no request holds another conversation's words, every entry is stored once, each session
is its owner's, and the provider receives, byte for byte, what one replica alone sends it for
the same conversations. A replica killed (SIGKILL) while its request is with the provider
loses nothing that was answered: the agent's retry and the turns after it go through the other
replica, and the session holds every message once. The replicas are real LiteLLM processes
(``litellm_proxy.py``), the database a throwaway cluster (``tests/postgres_cluster.py``), the
provider the proxy tests' scripted fake, in this test's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from hdcontext.core.validity import payload_problems
from hdcontext.edges.stats.owners import read_owners, tag_of
from hdcontext.edges.storage.store import open_reader
from hdcontext.litellm.identity import owner_of
from tests.postgres_cluster import Cluster
from tests.proxy.fake_upstream import FakeUpstream

from . import litellm_env
from .litellm_proxy import Gateway, start_gateway, wait_ready

pytestmark = [
    pytest.mark.xdist_group("litellm-replicas"),
    pytest.mark.usefixtures("postgres_cluster"),
]

CONVERSATIONS = 16
TURNS = 40
CONTEXT_LIMIT = "6000"
"""Small enough that the conversations are compressed before their end: the state the
replicas hand each other holds a compression, waiting edits and the cache's ledger."""
USERS = ("sk-alice", "sk-bob")
TOOLS = [
    {
        "type": "function",
        "function": {"name": name, "parameters": {"type": "object", "properties": {}}},
    }
    for name in ("Read", "Edit")
]


def _owner_tag(key: str) -> str:
    user, team = {"sk-alice": ("alice", "team-a"), "sk-bob": ("bob", "team-b")}[key]
    return owner_of(type("Auth", (), {"user_id": user, "team_id": team})()).tag


def _turn(marker: str, k: int) -> list[dict[str, Any]]:
    """A read or an edit of one of three files: later reads make earlier ones stale."""
    path = f"/work/{marker}/file_{(k // 2) % 3}.py"
    call = f"call_{marker}_{k}"
    if k % 2 == 0:
        name, arguments = "Read", {"file_path": path}
        result = "\n".join(f"{i}\tline {i} of {path} ({marker}), turn {k}" for i in range(40))
    else:
        name, arguments = "Edit", {"file_path": path, "old_string": "a", "new_string": "b"}
        result = f"The file {path} has been updated."
    return [
        {
            "role": "assistant",
            "content": f"step {k} of {marker}",
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(arguments)},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": result},
    ]


def _messages(marker: str, turns: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": f"system prompt of {marker}"},
        {"role": "user", "content": f"fix the files of {marker}"},
    ]
    for k in range(turns):
        messages += _turn(marker, k)
    return messages


def _body(marker: str, turns: int) -> dict[str, Any]:
    """The conversation ``marker`` at ``turns`` turns, as an agent sends it (every other
    request streamed)."""
    return {
        "model": "gpt-5.6",
        "stream": turns % 2 == 1,
        "tools": TOOLS,
        "messages": _messages(marker, turns),
    }


def _ok(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "ok"}]


class Upstream:
    """The scripted fake provider in the test's loop, which can hold the request whose last
    message says ``hang`` until the test lets it go."""

    def __init__(self) -> None:
        self.fake = FakeUpstream(_ok)
        self.holding = asyncio.Event()
        self.release = asyncio.Event()
        self.url = ""

    @web.middleware
    async def _hold(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.method == "POST" and b"hang on" in await request.read():
            self.holding.set()
            await self.release.wait()
        response: web.StreamResponse = await handler(request)
        return response

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[Upstream]:
        app = self.fake.app()
        app.middlewares.append(self._hold)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        self.url = f"http://127.0.0.1:{runner.addresses[0][1]}"
        try:
            yield self
        finally:
            self.release.set()
            await runner.cleanup()

    def chat_bodies(self) -> list[bytes]:
        return [s.raw for s in self.fake.api_requests if s.path == "/v1/chat/completions"]


@contextlib.asynccontextmanager
async def _gateways(
    root: Path, upstream: str, databases: list[str]
) -> AsyncIterator[list[Gateway]]:
    """A LiteLLM replica with the callback on each of ``databases`` (the same URL twice: two
    replicas of one gateway), started side by side."""
    started: list[Gateway] = []
    try:
        for n, url in enumerate(databases):
            env = {"HDCONTEXT_DATABASE_URL": url, "HDCONTEXT_CONTEXT_LIMIT": CONTEXT_LIMIT}
            started.append(start_gateway(root / f"replica-{n}", upstream, more_env=env))
        await asyncio.gather(*(wait_ready(g) for g in started))
        yield started
    finally:
        for gateway in started:
            gateway.stop()


async def _send(
    client: aiohttp.ClientSession, gateway: Gateway, key: str, body: dict[str, Any]
) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    async with client.post(
        f"{gateway.url}/v1/chat/completions", json=body, headers=headers
    ) as answer:
        text = await answer.text()
        assert answer.status == 200, text[:500]
        if body.get("stream"):
            assert "[DONE]" in text


def _client() -> aiohttp.ClientSession:
    """A client that opens a connection per request: one kept open between requests may be
    closed by LiteLLM's server (uvicorn's keep-alive) as the next request is written on it,
    which an agent's SDK retries and this test would take for a failure."""
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(force_close=True),
        timeout=aiohttp.ClientTimeout(total=120),
    )


def _stored(url: str) -> dict[str, int]:
    """Each stored session's count of transcript entries."""
    with open_reader(url) as reader:
        return {s.session_id: s.transcript_entries for s in reader.sessions()}


@pytest.fixture(scope="module")
def litellm() -> Iterator[None]:
    _, why = litellm_env.find()
    if why:
        pytest.skip(why)
    yield


async def _converse_all(gateways: list[Gateway], markers: list[str], turns: int) -> float:
    """Every conversation at once, conversation ``c``'s request ``k`` through replica
    ``(c + k) % len(gateways)``, user ``c % 2``'s key; how long it took."""
    async with _client() as client:

        async def converse(c: int, marker: str) -> None:
            for k in range(1, turns + 1):
                gateway = gateways[(c + k) % len(gateways)]
                await _send(client, gateway, USERS[c % 2], _body(marker, k))

        started = time.monotonic()
        await asyncio.gather(*(converse(c, m) for c, m in enumerate(markers)))
        return time.monotonic() - started


@pytest.mark.usefixtures("litellm")
async def test_sixteen_conversations_over_two_replicas_as_through_one(
    postgres_cluster: Cluster, tmp_path: Path
) -> None:
    shared, alone = postgres_cluster.new_database(), postgres_cluster.new_database()
    markers = [f"conv{c:02d}" for c in range(CONVERSATIONS)]
    two, one = Upstream(), Upstream()
    async with (
        two.serving(),
        one.serving(),
        _gateways(tmp_path / "two", two.url, [shared, shared]) as replicas,
        _gateways(tmp_path / "one", one.url, [alone]) as single,
    ):
        took_two = await _converse_all(replicas, markers, TURNS)
        took_one = await _converse_all(single, markers, TURNS)
        logs = [g.log.read_text(errors="replace") for g in (*replicas, *single)]
    print(
        f"{CONVERSATIONS} x {TURNS} turns through LiteLLM: two replicas alternating "
        f"{took_two:.1f} s, one replica {took_one:.1f} s"
    )
    assert not any("hdcontext: off" in log for log in logs), logs[0][-2000:]

    sent_two, sent_one = two.chat_bodies(), one.chat_bodies()
    assert len(sent_two) == len(sent_one) == CONVERSATIONS * TURNS
    by_marker: dict[str, list[bytes]] = {m: [] for m in markers}
    for raw in sent_two:
        text = raw.decode()
        (own,) = [m for m in markers if f"system prompt of {m}" in text]
        assert all(other not in text for other in markers if other != own)  # no crossing
        assert payload_problems("openai", json.loads(raw)) == []
        by_marker[own].append(raw)
    alone_by_marker: dict[str, list[bytes]] = {m: [] for m in markers}
    for raw in sent_one:
        (own,) = [m for m in markers if f"system prompt of {m}" in raw.decode()]
        alone_by_marker[own].append(raw)
    assert by_marker == alone_by_marker  # byte for byte what one replica sends
    last = json.loads(by_marker[markers[0]][-1])
    assert len(last["messages"]) < len(_messages(markers[0], TURNS))  # compacted

    # Every entry of every request stored once, in its owner's session.
    stored = _stored(shared)
    assert len(stored) == CONVERSATIONS
    assert sorted(stored.values()) == [1 + 2 * TURNS] * CONVERSATIONS  # the system prompt apart
    tags = {tag_of(sid) for sid in stored}
    assert tags == {_owner_tag(key) for key in USERS}
    assert sum(tag_of(sid) == _owner_tag("sk-alice") for sid in stored) == CONVERSATIONS // 2
    owners = read_owners(shared)
    assert {owners[t]["user"] for t in tags} == {"alice", "bob"}


@pytest.mark.usefixtures("litellm")
async def test_a_replica_killed_mid_request_loses_nothing_answered(
    postgres_cluster: Cluster, tmp_path: Path
) -> None:
    shared = postgres_cluster.new_database()
    upstream = Upstream()
    marker = "killed"
    async with (
        upstream.serving(),
        _gateways(tmp_path, upstream.url, [shared, shared]) as (doomed, survivor),
        _client() as client,
    ):
        for k in range(1, 7):
            await _send(client, (doomed, survivor)[k % 2], "sk-alice", _body(marker, k))
        body = _body(marker, 6)
        body["stream"] = False
        body["messages"] += [
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "hang on"},
        ]
        pending = asyncio.ensure_future(_send(client, doomed, "sk-alice", body))
        await asyncio.wait_for(upstream.holding.wait(), 60)
        doomed.process.send_signal(signal.SIGKILL)
        assert await asyncio.to_thread(doomed.process.wait, 30) == -signal.SIGKILL
        with pytest.raises(aiohttp.ClientError):
            await pending
        upstream.release.set()
        # The agent retries on the other replica, then goes on there.
        await _send(client, survivor, "sk-alice", body)
        for k in range(2):
            body["messages"] += [
                {"role": "assistant", "content": "ok"},
                {"role": "user", "content": f"and then {k}?"},
            ]
            await _send(client, survivor, "sk-alice", body)
    (entries,) = _stored(shared).values()
    assert entries == len(body["messages"]) - 1  # every message once (the system prompt apart)
    assert b"and then 1?" in upstream.chat_bodies()[-1]
