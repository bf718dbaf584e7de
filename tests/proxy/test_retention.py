"""What the proxy keeps, said and undone, as a user meets it: ``hdcontext proxy`` says at its
first start in a folder that it keeps conversations there (where, for how long, how to change
it), once; and a conversation sent through it, deleted with ``hdcontext sessions delete``, is
gone from the database file and the folder."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import aiohttp

from .cli_proxy import proxy_process
from .conftest import start
from .test_proxy_http import ANTHROPIC_HEADERS, SECRET_TEXT, anthropic_body


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hdcontext", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _on_disk(storage: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(storage.rglob("*")) if p.is_file())


async def test_the_first_start_says_what_is_kept_and_a_deleted_conversation_is_gone(
    tmp_path: Path,
) -> None:
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "ok"}])
    await running.proxy.stop()
    await running.daemon.shutdown()
    await running.daemon.store.close()
    storage = tmp_path / "kept"
    upstream = ("--anthropic-upstream", running.fake_url)
    try:
        async with (
            proxy_process(storage, *upstream, "--retention-days", "7") as first,
            aiohttp.ClientSession() as client,
        ):
            data = json.dumps(anthropic_body()).encode()
            async with client.post(
                first.url + "/v1/messages", data=data, headers=ANTHROPIC_HEADERS
            ) as response:
                assert response.status == 200
        async with proxy_process(storage, *upstream) as second:
            pass
    finally:
        for runner in runners:
            await runner.cleanup()
    notices = [line for line in first.lines if "kept on disk" in line]
    assert len(notices) == 1, first.log
    (notice,) = notices
    assert str(storage) in notice  # where
    assert "deleted once idle for 7 days" in notice  # for how long
    assert "--retention-days N" in notice and "0: keep a conversation only while" in notice
    assert "hdcontext sessions delete ID" in notice
    assert "kept on disk" not in second.log  # once: the folder remembers it
    assert "idle ones deleted once idle for 30 days" in second.log  # the listening line
    assert SECRET_TEXT.encode() in _on_disk(storage)

    listed = await asyncio.to_thread(
        _cli, "sessions", "list", "--json", "--storage-dir", str(storage)
    )
    (session,) = json.loads(listed.stdout)
    deleted = await asyncio.to_thread(
        _cli, "sessions", "delete", session["session_id"], "--storage-dir", str(storage)
    )
    assert (deleted.returncode, deleted.stdout) == (0, f"deleted {session['session_id']}\n")
    assert SECRET_TEXT.encode() not in _on_disk(storage)
