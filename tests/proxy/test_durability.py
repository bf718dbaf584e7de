"""What the proxy keeps when it is killed: every request it answered, though its commits are not
flushed to the disk (an agent sends its whole conversation again; storage/store.py)."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
from pathlib import Path

import aiohttp

from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.daemon.retention import Retention
from hdcontext.edges.proxy.run import proxy_daemon
from hdcontext.edges.storage.folder import prepare_folder
from hdcontext.edges.storage.sqlite_store import SqliteStore

from .cli_proxy import proxy_process
from .conftest import start
from .test_proxy_http import ANTHROPIC_HEADERS, anthropic_body

FULL, NORMAL = 2, 1  # PRAGMA synchronous


async def _synchronous(store: SqliteStore) -> int:
    await store.open()
    try:
        return int(await store._run(lambda db: db.execute("PRAGMA synchronous").fetchone()[0]))
    finally:
        await store.close()


async def test_the_proxy_writes_without_flushing_and_the_editor_daemon_flushes(
    tmp_path: Path,
) -> None:
    for name in ("daemon", "proxy"):
        prepare_folder(tmp_path / name)
    assert await _synchronous(SqliteStore(tmp_path / "daemon")) == FULL
    daemon = proxy_daemon(tmp_path / "proxy", IdeSettings(), Retention())
    assert daemon.store.durable is False
    assert await _synchronous(daemon.store) == NORMAL


def _sessions(storage: Path) -> list[dict[str, object]]:
    command = [sys.executable, "-m", "hdcontext", "sessions", "list", "--json"]
    done = subprocess.run(
        [*command, "--storage-dir", str(storage)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    listed: list[dict[str, object]] = json.loads(done.stdout)
    return listed


async def test_a_proxy_killed_after_its_answers_keeps_every_one(tmp_path: Path) -> None:
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "ok"}])
    await running.proxy.stop()
    await running.daemon.shutdown()
    await running.daemon.store.close()
    storage = tmp_path / "kept"
    body = anthropic_body()
    try:
        async with (
            proxy_process(storage, "--anthropic-upstream", running.fake_url) as proxy,
            aiohttp.ClientSession() as client,
        ):
            for turn in range(2):
                if turn:
                    body["messages"] += [
                        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
                        {"role": "user", "content": [{"type": "text", "text": "and then?"}]},
                    ]
                async with client.post(
                    proxy.url + "/v1/messages", data=json.dumps(body), headers=ANTHROPIC_HEADERS
                ) as response:
                    assert response.status == 200
                    await response.read()
            proxy.process.send_signal(signal.SIGKILL)
            assert await asyncio.wait_for(proxy.process.wait(), 30) == -signal.SIGKILL
    finally:
        for runner in runners:
            await runner.cleanup()
    (session,) = await asyncio.to_thread(_sessions, storage)
    # The five messages sent (the last answer, kept once its stream ended, may be there too).
    assert session["transcript_entries"] in (5, 6), session
