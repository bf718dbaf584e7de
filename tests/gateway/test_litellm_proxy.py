"""hdcontext inside LiteLLM's real proxy (1.108.7, from ``make litellm``'s environment), in front
of the scripted fake provider, driven by the real ``openai`` and ``anthropic`` clients through a
tap that keeps what each agent sent.

The scripted agent (``tests/proxy/agent_script.py``) reads ``notes.txt``, edits it, counts its
lines and reads it again: what the provider receives last has lost the stale first read, on
chat completions (GPT-5.6 with its breakpoints, GPT-4.1 with the day's retention hdcontext asks,
streamed), the Responses API and Anthropic's messages; each call's usage, as LiteLLM normalizes
it, is in the store for ``hdcontext stats``, by user and team; one user's sessions are not
another's, byte-identical conversations or not; a callback whose compactor fails leaves every
request as the agent sent it, and LiteLLM answers 200. Then LiteLLM is stopped as a platform
stops a replica (SIGTERM): hdcontext saved and closed its store first.

One LiteLLM process serves the module (and one more the failure's test), started side by side
once (about 10 s); the module's tests run on one pytest worker (``xdist_group``). Skipped, with
the reason, when ``make litellm`` has not installed LiteLLM.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest

from hdcontext.core.validity import payload_problems
from hdcontext.edges.stats.owners import read_owners, tag_of
from hdcontext.edges.stats.report import read
from hdcontext.edges.storage.sqlite_reader import ReadOnly
from hdcontext.litellm.identity import owner_of
from tests.proxy import test_openai_client, test_responses
from tests.proxy.agent_script import DONE_TEXT, notes_script, notes_workspace
from tests.proxy.fake_upstream import FakeUpstream
from tests.proxy.tap import Tap, start_tap

from . import litellm_env
from .keys import KEYS, SAID
from .litellm_proxy import CLAUDE, FakeOnAThread, Gateway, start_gateway, wait_ready

pytestmark = pytest.mark.xdist_group("litellm")

ALICE_OWNER = owner_of(type("Auth", (), {"user_id": "alice", "team_id": "team-a"})())
USAGE_WAIT_S = 15.0
"""How long a call's usage may take to be on disk (saved a second after it was told)."""


class Running:
    """The fake provider, the gateway, and the workspace the scripted agent works in."""

    def __init__(self, folder: Path, callback: str = "hdcontext.litellm.handler") -> None:
        folder.mkdir(parents=True)
        self.workspace, self.notes, _ = notes_workspace(folder)
        self.first = self.notes.read_text()
        self.upstream = FakeOnAThread(notes_script(self.workspace))
        self.gateway: Gateway = start_gateway(folder / "litellm", self.upstream.url, callback)

    @property
    def fake(self) -> FakeUpstream:
        return self.upstream.fake

    def fresh(self) -> None:
        """A new conversation: the notes as they were, nothing received yet."""
        self.notes.write_text(self.first)
        self.fake.seen.clear()

    def stop(self) -> None:
        self.gateway.stop()
        self.upstream.stop()


@pytest.fixture(scope="module")
def gateways(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Running, Running]]:
    """The gateway with hdcontext's callback, and one whose compactor fails, started side by
    side."""
    _, why = litellm_env.find()
    if why:
        pytest.skip(why)
    root = tmp_path_factory.mktemp("litellm")
    running = Running(root / "gateway")
    poisoned = Running(root / "poisoned", "tests.gateway.poisoned.handler")
    try:
        asyncio.run(_both_ready(running, poisoned))
        yield running, poisoned
    finally:
        running.stop()
        poisoned.stop()


async def _both_ready(*all: Running) -> None:
    await asyncio.gather(*(wait_ready(r.gateway) for r in all))


@pytest.fixture
def gateway(gateways: tuple[Running, Running]) -> Running:
    gateways[0].fresh()
    return gateways[0]


async def through_a_tap(running: Running) -> tuple[Tap, Any, str]:
    tap, runner, url = await start_tap(running.gateway.url)
    return tap, runner, url


def received(running: Running, path: str) -> list[dict[str, Any]]:
    return [s.body for s in running.fake.api_requests if s.path == path]


def calls_by_session(storage: Path) -> dict[str, tuple[int, int]]:
    """Each stored session's (calls, calls whose usage was told), as ``hdcontext stats`` reads
    them (none before hdcontext's first request made the folder)."""
    if not storage.exists():
        return {}
    report = read(storage).report
    return {
        sid: (s.figures.calls, s.figures.calls - s.figures.estimated_calls)
        for sid, s in report.sessions.items()
    }


def new_calls(storage: Path, before: dict[str, tuple[int, int]], calls: int) -> dict[str, int]:
    """The calls made since ``before`` by session, once ``calls`` of them are on disk with
    their usage (a call's usage is saved a moment after it was told)."""
    deadline = time.monotonic() + USAGE_WAIT_S
    while True:
        now = calls_by_session(storage)
        grown = {
            sid: (n - before.get(sid, (0, 0))[0], told - before.get(sid, (0, 0))[1])
            for sid, (n, told) in now.items()
        }
        grown = {sid: g for sid, g in grown.items() if g[0]}
        if sum(told for _, told in grown.values()) >= calls or time.monotonic() > deadline:
            return {sid: told for sid, (_, told) in grown.items()}
        time.sleep(0.2)


def chat_ids(body: dict[str, Any]) -> set[str]:
    return {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}


# -- chat completions, the Responses API, Anthropic's messages ----------------------------------


@pytest.mark.parametrize(("model", "stream"), [("gpt-5.6", False), ("gpt-4.1", True)])
async def test_chat_completions_through_litellm(gateway: Running, model: str, stream: bool) -> None:
    before = calls_by_session(gateway.gateway.storage)
    tap, runner, url = await through_a_tap(gateway)
    try:
        answer = await test_openai_client._agent(
            url, gateway.workspace, model, stream, api_key="sk-alice"
        )
    finally:
        await runner.cleanup()

    assert answer == DONE_TEXT
    assert gateway.notes.read_text().startswith("beta\n")
    sent = [body for path, body in tap.sent if path == "/v1/chat/completions"]
    got = received(gateway, "/v1/chat/completions")
    assert len(sent) == len(got) == 5
    for agents, body in zip(sent, got, strict=True):
        assert payload_problems("openai", body) == []
        assert body["messages"][0] == agents["messages"][0]  # the system prompt as sent
        assert body["tools"] == agents["tools"]
        if model == "gpt-5.6":
            marks = test_openai_client._marks(body)
            assert marks and marks[-1] == len(body["messages"]) - 1
        else:  # a day's retention, free on GPT-4.1, through LiteLLM's extra_body
            assert body["prompt_cache_retention"] == "24h"
    assert "toolu_step0_0" in chat_ids(sent[-1])
    assert "toolu_step0_0" not in chat_ids(got[-1])
    assert len(json.dumps(got[-1])) < len(json.dumps(sent[-1]))

    # Each call's usage told, streamed too (LiteLLM's, not read from the stream), to one
    # session of Alice's (the same conversation another time is the same session).
    (session,) = new_calls(gateway.gateway.storage, before, 5).items()
    assert session[0].startswith(f"litellm-{ALICE_OWNER.tag}-openai-")
    assert session[1] == 5


async def test_the_responses_api_through_litellm(gateway: Running) -> None:
    tap, runner, url = await through_a_tap(gateway)
    try:
        answer = await test_responses.agent(
            url, gateway.workspace, "gpt-5.6", "stream", api_key="sk-bob"
        )
    finally:
        await runner.cleanup()

    assert answer == DONE_TEXT
    sent = [body for path, body in tap.sent if path == "/v1/responses"]
    got = received(gateway, "/v1/responses")
    assert len(sent) == len(got) == 5
    for body in got:
        assert payload_problems("openai-responses", body) == []
    assert "toolu_step0_0" in test_responses._call_ids(sent[-1])
    assert "toolu_step0_0" not in test_responses._call_ids(got[-1])
    assert test_responses._marks(got[-1])[-1] == len(got[-1]["input"]) - 1


ANTHROPIC_TOOLS = [
    {
        "name": name,
        "description": f"{name} a file or run a command",
        "input_schema": {"type": "object", "properties": {}, "additionalProperties": True},
    }
    for name in ("Read", "Edit", "Bash")
]


async def anthropic_agent(base_url: str, workspace: Path, api_key: str) -> str:
    """The scripted agent on Anthropic's messages, streamed, as Claude Code calls them."""
    client = anthropic.AsyncAnthropic(base_url=base_url, api_key=api_key, max_retries=0)
    messages: list[Any] = [{"role": "user", "content": test_responses.ASK}]
    async with client:
        for _ in range(10):
            async with client.messages.stream(
                model=CLAUDE,
                max_tokens=1000,
                system=test_openai_client.SYSTEM,
                messages=messages,
                tools=ANTHROPIC_TOOLS,  # type: ignore[arg-type]
            ) as stream:
                message = await stream.get_final_message()
            content = [b.model_dump(exclude_none=True) for b in message.content]
            messages.append({"role": "assistant", "content": content})
            calls = [b for b in content if b["type"] == "tool_use"]
            if not calls:
                return "".join(b.get("text", "") for b in content)
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": call["id"],
                    "content": test_openai_client.run_tool(workspace, call["name"], call["input"]),
                }
                for call in calls
            ]
            messages.append({"role": "user", "content": results})
    raise AssertionError("the agent did not finish")


async def test_anthropic_messages_through_litellm(gateway: Running) -> None:
    tap, runner, url = await through_a_tap(gateway)
    try:
        answer = await anthropic_agent(url, gateway.workspace, "sk-bob")
    finally:
        await runner.cleanup()

    assert answer == DONE_TEXT
    sent = [body for path, body in tap.sent if path == "/v1/messages"]
    got = received(gateway, "/v1/messages")
    assert len(sent) == len(got) == 5

    def uses(body: dict[str, Any]) -> set[str]:
        return {
            b["id"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        }

    for body in got:
        assert payload_problems("anthropic", body) == []
        assert body["system"] == test_openai_client.SYSTEM
        last = body["messages"][-1]["content"]
        assert isinstance(last, list) and "cache_control" in last[-1]
    assert "toolu_step0_0" in uses(sent[-1]) and "toolu_step0_0" not in uses(got[-1])


# -- whose sessions ------------------------------------------------------------------------------


async def test_one_users_sessions_are_invisible_to_another_key(gateway: Running) -> None:
    """Alice and Bob send byte-identical conversations: two sessions, one each, each with its
    own five calls; Alice's second key is Alice's (a user's keys share the user's sessions).
    ``hdcontext stats --by user`` and ``--by team`` say who saved what."""
    storage = gateway.gateway.storage
    before = calls_by_session(storage)
    sent: dict[str, list[Any]] = {}
    for key in ("sk-alice", "sk-bob", "sk-alice-ci"):
        gateway.fresh()
        tap, runner, url = await through_a_tap(gateway)
        try:
            await test_openai_client._agent(url, gateway.workspace, "gpt-4.1", False, api_key=key)
        finally:
            await runner.cleanup()
        sent[key] = [b for p, b in tap.sent if p == "/v1/chat/completions"]
    assert sent["sk-alice"] == sent["sk-bob"] == sent["sk-alice-ci"]

    alice = owner_of(type("A", (), {"user_id": "alice", "team_id": "team-a"})())
    bob = owner_of(type("B", (), {"user_id": "bob", "team_id": "team-b"})())
    calls = new_calls(storage, before, 15)
    by_owner = {tag_of(sid): n for sid, n in calls.items()}
    assert by_owner == {alice.tag: 10, bob.tag: 5}

    owners = read_owners(storage)
    assert owners[alice.tag]["user"] == "alice" and owners[bob.tag]["team"] == "team-b"
    assert not any(key in json.dumps(owners) for key in KEYS)  # never a raw key
    with ReadOnly(storage) as db:
        stored = [s.session_id for s in db.sessions()]
    assert all(tag_of(sid) in owners for sid in stored)


# -- hdcontext failing ---------------------------------------------------------------------------


async def test_a_failure_inside_hdcontext_sends_the_request_on_unchanged(
    gateways: tuple[Running, Running],
) -> None:
    poisoned = gateways[1]
    poisoned.fresh()
    tap, runner, url = await through_a_tap(poisoned)
    try:
        answer = await test_openai_client._agent(
            url, poisoned.workspace, "gpt-5.6", False, api_key="sk-alice"
        )
    finally:
        await runner.cleanup()
    assert answer == DONE_TEXT  # every answer a 200: the client retries nothing
    sent = [body for path, body in tap.sent if path == "/v1/chat/completions"]
    got = received(poisoned, "/v1/chat/completions")
    assert [b["messages"] for b in got] == [b["messages"] for b in sent]
    log = poisoned.gateway.log.read_text(errors="replace")
    assert "hdcontext failed: RuntimeError" in log
    assert SAID not in log
    assert "sk-alice" not in log


# -- stopping ------------------------------------------------------------------------------------


def test_a_replica_stopped_saves_and_closes_its_store_first(
    gateways: tuple[Running, Running],
) -> None:
    """SIGTERM, as a platform stops a replica: hdcontext stops before LiteLLM's own shutdown
    (uvicorn raises the signal again after it, which ends the process at once): the last
    requests kept for the next start, the store closed (no write-ahead log left), the folder's
    lock given back."""
    running = gateways[0]
    running.gateway.stop()
    storage = running.gateway.storage
    assert not (storage / "hdcontext.sqlite3-wal").exists()
    with ReadOnly(storage) as db:
        assert db.sessions()
    import sqlite3

    with sqlite3.connect(f"file:{storage / 'hdcontext.sqlite3'}?mode=ro", uri=True) as db:
        (kept,) = db.execute("SELECT count(*) FROM resume").fetchone()
    assert kept >= 1
