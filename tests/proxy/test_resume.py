"""A restarted proxy picks its conversations up as turns: when it stops, it keeps the last
request of each conversation of the last hour (``Compactor.keep_for_restart``); its next
start takes them in, in the background (``Compactor.resume``), so that the agent's next request
is read from the bytes it shares with that one, not whole. What goes upstream is what a proxy
that never stopped sends; the kept requests are read once, and go with their session."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hdcontext.edges.proxy import compactor as compactor_module
from hdcontext.edges.proxy.compactor import RESUME_WITHIN_MS, now_ms
from hdcontext.edges.storage.records import ResumeRow
from hdcontext.edges.storage.sqlite_store import SqliteStore

from .conftest import Running, start, stop
from .test_proxy_http import ANTHROPIC_HEADERS

SYSTEM_MARK = "resume-test-system-prompt-7f3a"


def _answer(body: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": "ok"}]


def _turn(k: int) -> list[dict[str, Any]]:
    """A read or an edit of one of three files: later reads make earlier ones stale."""
    path = f"/work/file_{(k // 2) % 3}.py"
    call = f"toolu_{k}"
    if k % 2 == 0:
        name, params = "Read", {"file_path": path}
        result = "\n".join(f"{i}\tline {i} of {path}, turn {k}" for i in range(40))
    else:
        name, params = "Edit", {"file_path": path, "old_string": "a", "new_string": "b"}
        result = f"The file {path} has been updated."
    return [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"step {k}"},
                {"type": "tool_use", "id": call, "name": name, "input": params},
            ],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call, "content": result}],
        },
    ]


def _openai_turn(k: int) -> list[dict[str, Any]]:
    """``_turn``'s read or edit as OpenAI's chat completions carry it."""
    (call, result) = _turn(k)
    use = call["content"][1]
    return [
        {
            "role": "assistant",
            "content": call["content"][0]["text"],
            "tool_calls": [
                {
                    "id": use["id"],
                    "type": "function",
                    "function": {"name": use["name"], "arguments": json.dumps(use["input"])},
                }
            ],
        },
        {"role": "tool", "tool_call_id": use["id"], "content": result["content"][0]["content"]},
    ]


def _openai_body(turns: int) -> bytes:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_MARK},
        {"role": "user", "content": "fix the files"},
    ]
    for k in range(turns):
        messages += _openai_turn(k)
    return json.dumps({"model": "gpt-4.1", "messages": messages}).encode()


def _body(turns: int) -> bytes:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix the files"}]
    for k in range(turns):
        messages += _turn(k)
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": [{"type": "text", "text": SYSTEM_MARK}],
        "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
        "messages": messages,
    }
    return json.dumps(body, separators=(",", ":")).encode()


async def _send(
    client: aiohttp.ClientSession, running: Running, turns: int, api: str = "anthropic"
) -> bytes:
    """One request of the conversation at ``turns``; the body that went upstream."""
    before = len(running.fake.api_requests)
    if api == "anthropic":
        path, data, headers = "/v1/messages", _body(turns), ANTHROPIC_HEADERS
    else:
        path, data = "/v1/chat/completions", _openai_body(turns)
        headers = {"Authorization": "Bearer sk-test", "Content-Type": "application/json"}
    async with client.post(running.url + path, data=data, headers=headers) as response:
        assert response.status == 200
        await response.read()
    assert len(running.fake.api_requests) == before + 1
    return running.fake.api_requests[-1].raw


async def _served_and_stopped(tmp_path: Path, client: aiohttp.ClientSession, turns: int) -> Running:
    """A proxy that carried the conversation at ``turns`` once, then stopped (keeping it)."""
    running, runners = await start(tmp_path, _answer)
    await _send(client, running, turns)
    await stop(running, runners)
    return running


async def _upstream_bodies(
    tmp_path: Path,
    restart_after: int | None,
    turns: int,
    settle: bool,
    settings: dict[str, Any] | None = None,
    api: str = "anthropic",
) -> tuple[list[bytes], list[int]]:
    """The bodies sent upstream for ``turns`` requests, the proxy restarted on its storage
    after request ``restart_after`` (``settle``: the next request waits until the restart's
    resuming is done; else it comes at once); and, with ``settle``, one mark per body read
    whole after the restart."""
    whole = compactor_module._take_whole
    counted: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        counted.append(1)
        return whole(*args, **kwargs)

    running, runners = await start(tmp_path, _answer, settings=settings)
    sent: list[bytes] = []
    try:
        async with aiohttp.ClientSession() as client:
            for k in range(1, turns + 1):
                sent.append(await _send(client, running, k, api))
                if k == restart_after:
                    await stop(running, runners)
                    running, runners = await start(tmp_path, _answer, settings=settings)
                    if settle:
                        task = running.proxy.state.compactor._resume_task
                        assert task is not None
                        await task
                        compactor_module._take_whole = counting  # type: ignore[assignment]
    finally:
        compactor_module._take_whole = whole  # type: ignore[assignment]
        await stop(running, runners)
    return sent, counted


@pytest.mark.parametrize("api", ["anthropic", "openai"])
@pytest.mark.parametrize("schedule", ["cache-aware", "every-turn"])
@pytest.mark.parametrize("settle", [True, False], ids=["resumed", "at-once"])
async def test_a_restarted_proxy_sends_what_one_that_never_stopped_sends(
    tmp_path: Path, settle: bool, schedule: str, api: str
) -> None:
    turns = 14
    settings = {"compression.density.schedule": schedule} if schedule == "every-turn" else None
    never, _ = await _upstream_bodies(tmp_path / "never", None, turns, settle, settings, api)
    restarted, whole_reads = await _upstream_bodies(
        tmp_path / "restarted", 8, turns, settle, settings, api
    )
    assert restarted == never
    if schedule == "every-turn":  # edits made: the bodies say something of the decisions
        sent_whole = _body(turns) if api == "anthropic" else _openai_body(turns)
        assert len(never[-1]) < len(sent_whole) - 2000
    if settle:  # the request after the restart resumed from the kept one: nothing read whole
        assert whole_reads == []


async def test_kept_requests_are_read_once_only_of_the_last_hour_and_only_of_stored_sessions(
    tmp_path: Path,
) -> None:
    running, runners = await start(tmp_path, _answer)
    try:
        async with aiohttp.ClientSession() as client:
            await _send(client, running, 1)
        (session,) = [s["sessionId"] for s in await running.statuses()]
        store: SqliteStore = running.daemon.store
        now = now_ms()
        rows = [
            ResumeRow(session, now - 10, "anthropic", "test", b"recent"),
            ResumeRow("not-stored", now, "anthropic", "test", b"nobody's"),
        ]
        assert await store.keep_resume(rows) == 1
        assert await store.take_resume(now - RESUME_WITHIN_MS) == [rows[0]]
        assert await store.take_resume(now - RESUME_WITHIN_MS) == []  # read once
        old = ResumeRow(session, now - RESUME_WITHIN_MS - 1, "anthropic", "test", b"old")
        assert await store.keep_resume([old]) == 1
        assert await store.take_resume(now - RESUME_WITHIN_MS) == []
        assert await store.take_resume(0) == []  # the old one was deleted with the read
        # A proxy stopping keeps only the requests of its last hour.
        compactor = running.proxy.state.compactor
        assert await compactor.keep_for_restart(now + RESUME_WITHIN_MS + 60_000) == 0
        assert await compactor.keep_for_restart() == 1
        (kept,) = await store.take_resume(0)
        assert kept.session_id == session and SYSTEM_MARK.encode() in kept.body
    finally:
        await stop(running, runners)


def _on_disk(storage: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(storage.rglob("*")) if p.is_file())


async def test_a_kept_request_goes_with_its_session(tmp_path: Path) -> None:
    running, runners = await start(tmp_path, _answer)
    async with aiohttp.ClientSession() as client:
        await _send(client, running, 2)
    (session,) = [s["sessionId"] for s in await running.statuses()]
    await stop(running, runners)  # keeps the request, its system prompt with it
    assert SYSTEM_MARK.encode() in _on_disk(running.storage)
    store = SqliteStore(running.storage)
    await store.open()
    try:
        assert await store.delete(session)
        assert await store.take_resume(0) == []
    finally:
        await store.close()
    assert SYSTEM_MARK.encode() not in _on_disk(running.storage)


async def test_a_failed_resume_leaves_the_next_request_to_be_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with aiohttp.ClientSession() as client:
        running = await _served_and_stopped(tmp_path, client, 3)

        async def broken(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("no")

        monkeypatch.setattr(running.daemon.__class__, "warm", broken)
        running, runners = await start(tmp_path, _answer)
        try:
            task = running.proxy.state.compactor._resume_task
            assert task is not None
            await asyncio.wait_for(task, 10)
            sent = await _send(client, running, 4)
        finally:
            await stop(running, runners)
    assert SYSTEM_MARK.encode() in sent


async def test_a_request_waits_only_for_its_own_conversation_being_taken_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with aiohttp.ClientSession() as client:
        running = await _served_and_stopped(tmp_path, client, 6)
        release = asyncio.Event()
        warm = running.daemon.__class__.warm

        async def held(self: Any, *args: Any, **kwargs: Any) -> Any:
            await release.wait()
            return await warm(self, *args, **kwargs)

        monkeypatch.setattr(running.daemon.__class__, "warm", held)
        running, runners = await start(tmp_path, _answer)
        try:
            compactor = running.proxy.state.compactor
            assert compactor._listed is not None
            await compactor._listed.wait()
            assert len(compactor._resuming) == 1  # being taken in, held
            # Another conversation of the same agent (its prompt and tools): not held up.
            other = json.loads(_body(1))
            other["messages"][0]["content"] = "another task"
            compacted = running.proxy.state.compacted

            async def post_other() -> int:
                async with client.post(
                    running.url + "/v1/messages",
                    data=json.dumps(other),
                    headers=ANTHROPIC_HEADERS,
                ) as response:
                    return response.status

            assert await asyncio.wait_for(post_other(), 5) == 200
            assert running.proxy.state.compacted == compacted + 1  # carried, not timed out
            # The conversation being taken in: its request waits for it.
            own = asyncio.ensure_future(_send(client, running, 7))
            await asyncio.sleep(0.3)
            assert not own.done()
            release.set()
            await asyncio.wait_for(own, 10)
        finally:
            release.set()
            await stop(running, runners)


async def test_a_resume_given_up_leaves_no_request_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with aiohttp.ClientSession() as client:
        running = await _served_and_stopped(tmp_path, client, 3)
        never = asyncio.Event()

        async def stuck(*args: Any, **kwargs: Any) -> Any:
            await never.wait()

        monkeypatch.setattr(SqliteStore, "take_resume", stuck)
        running, runners = await start(tmp_path, _answer)
        try:
            task = running.proxy.state.compactor._resume_task
            assert task is not None
            await asyncio.sleep(0.05)
            task.cancel()  # given up while it reads what to take in
            await asyncio.wait_for(_send(client, running, 4), 5)
            assert running.proxy.state.compacted == 1  # carried, read whole
        finally:
            await stop(running, runners)
