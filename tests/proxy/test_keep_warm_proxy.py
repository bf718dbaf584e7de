"""``hdcontext proxy --keep-warm`` against a fake upstream: the refresh call goes out when the
daemon named it, with the key of the session's last request and what the provider holds,
asks one token, and its usage is counted; one the upstream refused is taken back; a deleted
session gets none."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hdcontext.edges.proxy.compactor import now_ms
from hdcontext.edges.proxy.keepwarm import REFRESH_TEXT
from hdcontext.edges.storage.folder import DB_NAME

from .conftest import Running, start, stop


@dataclass
class _Clock:
    """The proxy's time for its timers: real time plus what the test let pass."""

    offset: int = 0
    gate: asyncio.Event = field(default_factory=asyncio.Event)

    def now(self) -> int:
        return now_ms() + self.offset

    async def sleep(self, seconds: float) -> None:
        await self.gate.wait()
        self.offset += round(seconds * 1000)


def _agent_turns(n: int) -> list[list[dict[str, Any]]]:
    """A tool loop that reads one long file again and again: every answer calls a tool (the
    agent comes back at once, the pause is the tool's). The reads a later one made stale go
    before the provider caches them, which is what the session has saved, and a refresh
    call is paid from savings only."""
    text = "".join(f"{i:6}\tsome words of the project's code, line {i}\n" for i in range(2500))
    conversation: list[dict[str, Any]] = [{"role": "user", "content": "read the project"}]
    out = []
    for k in range(n):
        call = f"toolu_{k}"
        conversation.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"reading it again ({k})"},
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Read",
                        "input": {"file_path": "/w/big.py"},
                    },
                ],
            }
        )
        conversation.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call, "content": text}],
            }
        )
        out.append([dict(m) for m in conversation])
    return out[3:]


async def _run(tmp_path: Path, clock: _Clock) -> tuple[Running, list[Any]]:
    return await start(
        tmp_path,
        lambda body: [{"type": "tool_use", "id": "toolu_next", "name": "Read", "input": {}}],
        settings={"cache": {"refresh": True}},
        proxy_options={"keep_warm": True, "clock": clock.now, "sleep": clock.sleep},
    )


async def _agent(running: Running) -> None:
    # A provider that caches (one whose usage shows no cache at all is not refreshed).
    running.fake.anthropic_usage = {
        "input_tokens": 20,
        "cache_read_input_tokens": 20_000,
        "cache_creation_input_tokens": 30_000,
        "output_tokens": 12,
    }
    async with aiohttp.ClientSession() as client:
        for k, messages in enumerate(_agent_turns(7)):
            body = {"model": "claude-sonnet-4-6", "max_tokens": 500, "messages": messages}
            headers = {"x-api-key": f"sk-ant-key-{k}", "anthropic-version": "2023-06-01"}
            async with client.post(running.url + "/v1/messages", json=body, headers=headers) as r:
                assert r.status == 200
            # The tool's moment: the conversation, new to the proxy, is taken in meanwhile.
            await running.proxy.state.settled()


async def _until(condition: Any, seconds: float = 10.0) -> bool:
    for _ in range(int(seconds / 0.05)):
        if condition():
            return True
        await asyncio.sleep(0.05)
    return condition()


async def test_a_refresh_call_goes_out_with_the_last_key_and_is_counted(tmp_path: Path) -> None:
    clock = _Clock()
    running, runners = await _run(tmp_path, clock)
    try:
        await _agent(running)
        warm = running.proxy.state.keep_warm
        assert warm is not None and any(warm.pending().values())
        agent_calls = len(running.fake.api_requests)
        calls_before = (await running.statuses())[0]["usage"]["calls"]
        clock.gate.set()  # time passes: the pause goes on
        assert await _until(lambda: len(running.fake.api_requests) > agent_calls)
        assert await _until(lambda: warm.made >= 1)
        await asyncio.sleep(0.2)
        status = (await running.statuses())[0]
    finally:
        await stop(running, runners)
    refresh = running.fake.api_requests[agent_calls]
    last = running.fake.api_requests[agent_calls - 1]
    assert refresh.headers["x-api-key"] == "sk-ant-key-3"
    assert refresh.body["max_tokens"] == 1
    assert refresh.body["model"] == "claude-sonnet-4-6"
    sent = refresh.body["messages"]
    assert sent[-1]["role"] == "user" and sent[-1]["content"][-1]["text"] == REFRESH_TEXT

    # What the provider holds comes first, as the last call sent it (marks aside).
    def plain(m: dict[str, Any]) -> Any:
        content = m["content"]
        if isinstance(content, str):
            return [{"type": "text", "text": content}]
        return [{k: v for k, v in b.items() if k != "cache_control"} for b in content]

    assert [plain(m) for m in sent[:-1]] == [plain(m) for m in last.body["messages"][:-1]]
    assert any(
        "cache_control" in b for m in sent if isinstance(m["content"], list) for b in m["content"]
    )
    assert status["usage"]["calls"] >= calls_before + 1


async def test_a_deleted_session_gets_no_refresh_call(tmp_path: Path) -> None:
    clock = _Clock()
    running, runners = await _run(tmp_path, clock)
    try:
        await _agent(running)
        warm = running.proxy.state.keep_warm
        assert warm is not None and any(warm.pending().values())
        agent_calls = len(running.fake.api_requests)
        (status,) = await running.statuses()
        await running.daemon.delete({"sessionId": status["sessionId"]})
        clock.gate.set()
        await _until(lambda: not any(warm.pending().values()), 5.0)
        await asyncio.sleep(0.2)
    finally:
        await stop(running, runners)
    assert len(running.fake.api_requests) == agent_calls
    assert warm.made == 0


@pytest.mark.parametrize("upstream", ["refuses", "gone"])
async def test_a_refresh_call_the_upstream_refused_is_taken_back(
    tmp_path: Path, upstream: str
) -> None:
    """Answered with an error, or not let in at all: nothing of it was billed or refreshed.
    ``hdcontext stats`` has no row of it, and the daemon's cache is as the agent's last call
    left it (``Session.call_refused``)."""
    clock = _Clock()
    running, runners = await _run(tmp_path, clock)
    try:
        await _agent(running)
        warm = running.proxy.state.keep_warm
        assert warm is not None
        sid = (await running.statuses())[0]["sessionId"]
        session = await running.daemon.registry.get(sid)
        before = session.export_state().cache
        agent_calls = len(running.fake.api_requests)
        if upstream == "refuses":
            running.fake.refuse = (529, {"type": "error", "error": {"type": "overloaded_error"}})
        else:
            await runners.pop().cleanup()  # nothing listens there any more
        clock.gate.set()
        if upstream == "refuses":
            assert await _until(lambda: len(running.fake.api_requests) > agent_calls)
        assert await _until(lambda: not any(warm.pending().values()))  # tried, and stopped
        assert await _until(lambda: session.export_state().cache.prompt == before.prompt)
        await asyncio.sleep(0.2)
        assert session.export_state().cache.reply == before.reply
    finally:
        await stop(running, runners)
    with sqlite3.connect(running.storage / DB_NAME) as db:
        kinds = [str(kind) for (kind,) in db.execute("SELECT kind FROM calls ORDER BY seq")]
    assert kinds == ["model"] * agent_calls
