"""The proxy's commit is written while its request goes upstream, and its answer ends after.

A request's commit (the session synced and compacted) used to be on disk before the request
left; now the write runs beside the upstream's round trip, and the answer's end waits for it,
so an answer the client has whole still survives the proxy killed (``test_durability.py``).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hdcontext.edges.storage.records import SaveOp, StoreError

from .conftest import Running, start, stop
from .test_proxy_http import ANTHROPIC_HEADERS, SECRET_TEXT, anthropic_body

Save = Callable[[SaveOp], Awaitable[None]]


def _next_turn(body: dict[str, Any], n: int) -> None:
    body["messages"] += [
        {"role": "assistant", "content": [{"type": "text", "text": f"answer {n}"}]},
        {"role": "user", "content": [{"type": "text", "text": f"and then {n}?"}]},
    ]


async def _post(client: aiohttp.ClientSession, url: str, body: dict[str, Any]) -> bytes:
    async with client.post(
        url + "/v1/messages", data=json.dumps(body), headers=ANTHROPIC_HEADERS
    ) as response:
        assert response.status == 200
        return await response.read()


def _gate(running: Running) -> tuple[asyncio.Event, asyncio.Event]:
    """Hold the store's next writes until ``open`` is set; ``entered`` says one is held."""
    store = running.daemon.store
    real: Save = store.save
    entered, opened = asyncio.Event(), asyncio.Event()

    async def held(op: SaveOp) -> None:
        entered.set()
        await opened.wait()
        await real(op)

    store.save = held  # type: ignore[method-assign]
    return entered, opened


async def _until(seen: Callable[[], bool]) -> None:
    while not seen():
        await asyncio.sleep(0.01)


@pytest.mark.parametrize("stream", [False, True])
async def test_the_request_goes_upstream_while_its_commit_is_written(
    tmp_path: Path, stream: bool
) -> None:
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "ok"}])
    opened = asyncio.Event()
    try:
        body = anthropic_body(stream=stream)
        async with aiohttp.ClientSession() as client:
            await _post(client, running.url, body)
            session = running.daemon.registry.loaded()[0].session_id
            entered, opened = _gate(running)
            _next_turn(body, 1)
            answer = asyncio.ensure_future(_post(client, running.url, body))
            # Upstream has the request while the write is held (it waited for it before).
            await asyncio.wait_for(_until(lambda: len(running.fake.api_requests) == 2), 10)
            assert entered.is_set()
            await asyncio.sleep(0.2)
            assert not answer.done()  # the answer ends once the commit is on disk
            assert running.daemon.registry.lock(session).locked()  # nothing changes it meanwhile
            opened.set()
            await asyncio.wait_for(answer, 10)
            assert not running.daemon.registry.lock(session).locked()
            (stored,) = await running.daemon.store.summaries()
            assert stored.entry_count >= len(body["messages"])  # the held write went in
    finally:
        opened.set()
        await stop(running, runners)


async def test_a_commit_that_fails_to_be_written_is_undone_and_the_answer_still_comes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "ok"}])
    try:
        body = anthropic_body()
        async with aiohttp.ClientSession() as client:
            await _post(client, running.url, body)
            (session,) = running.daemon.registry.loaded()
            before = session.history.raw_json[:]
            store = running.daemon.store
            real: Save = store.save

            async def failing(op: SaveOp) -> None:
                raise StoreError("the disk is full")

            store.save = failing  # type: ignore[method-assign]
            _next_turn(body, 1)
            with caplog.at_level(logging.WARNING):
                answer = await _post(client, running.url, body)
            assert json.loads(answer)["content"][0]["text"] == "ok"
            warned = [r.getMessage() for r in caplog.records if "not saved" in r.getMessage()]
            assert warned == ["a session's change was not saved, and was undone: StoreError"]
            assert SECRET_TEXT not in caplog.text
            # In memory as it was before the request, as on disk.
            assert session.history.raw_json == before
            store.save = real  # type: ignore[method-assign]
            _next_turn(body, 2)
            await _post(client, running.url, body)
            assert len(session.history.raw_json) >= len(body["messages"])
    finally:
        await stop(running, runners)
