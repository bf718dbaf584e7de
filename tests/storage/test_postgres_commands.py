"""The commands on a database: ``hdcontext serve --storage URL`` (two editors' daemons sharing
it, whatever folder ``initialize`` names), and ``hdcontext sessions`` and ``stats`` reading
and deleting what they keep there, ``HDCONTEXT_DATABASE_URL`` standing for ``--storage``."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from hdcontext.edges.storage.location import DATABASE_URL_ENV
from tests.daemon.harness import read_pair, text
from tests.daemon.raw import stdio_daemon


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "hdcontext", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, **(env or {})},
    )


async def test_two_editors_daemons_share_the_database_and_the_commands_read_it(
    pg_url: str, tmp_path: Path
) -> None:
    async with (
        stdio_daemon("--storage", pg_url) as one,
        stdio_daemon(env={DATABASE_URL_ENV: pg_url}) as two,
    ):
        for daemon in (one, two):
            answer = await daemon.peer.initialize(tmp_path / "a-folder-not-used")
            assert "result" in answer, answer
        await one.peer.call("history/open", {"sessionId": "chat", "model": "claude-sonnet-4-5"})
        entries: list[dict[str, Any]] = [text("human", "what does a.py print?")]
        entries += read_pair("r1", "/w/a.py", "print(1)\n" * 40)
        await one.peer.call("history/append", {"sessionId": "chat", "entries": entries})
        await one.peer.call("history/compact", {"sessionId": "chat", "at": 1_764_000_000_000})
        usage = {"sessionId": "chat", "inputTokens": 2000, "cacheReadTokens": 0, "outputTokens": 5}
        await one.peer.call("history/usage", usage)
        got = await two.peer.call("history/get", {"sessionId": "chat", "view": "raw"})
        assert len(got["entries"]) == 3
        await two.peer.call(
            "history/append", {"sessionId": "chat", "entries": [text("ai", "it prints 1")]}
        )
        got = await one.peer.call("history/get", {"sessionId": "chat", "view": "raw"})
        assert got["entries"][-1]["blocks"][0]["text"] == "it prints 1"
    assert not (tmp_path / "a-folder-not-used").exists()

    listed = await asyncio.to_thread(_cli, "sessions", "list", "--json", "--storage", pg_url)
    assert listed.returncode == 0, listed.stderr
    (session,) = json.loads(listed.stdout)
    assert session["session_id"] == "chat" and session["transcript_entries"] == 4
    shown = await asyncio.to_thread(
        _cli, "sessions", "show", "chat", "--transcript", env={DATABASE_URL_ENV: pg_url}
    )
    assert [json.loads(line)["speaker"] for line in shown.stdout.splitlines()] == [
        "human",
        "ai",
        "tool",
        "ai",
    ]
    stats = await asyncio.to_thread(_cli, "stats", "--json", "--storage", pg_url)
    assert stats.returncode == 0, stats.stderr
    figures = json.loads(stats.stdout)
    assert figures["totals"]["calls"] == 1
    assert figures["storageDir"] == pg_url
    deleted = await asyncio.to_thread(_cli, "sessions", "delete", "chat", "--storage", pg_url)
    assert deleted.returncode == 0 and deleted.stdout.strip() == "deleted chat", deleted.stderr
    listed = await asyncio.to_thread(_cli, "sessions", "list", "--storage", pg_url)
    assert listed.stdout.startswith("no sessions in postgresql://")


async def test_a_database_with_nothing_of_hdcontext_lists_no_session(pg_url: str) -> None:
    listed = await asyncio.to_thread(_cli, "sessions", "list", "--json", "--storage", pg_url)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    url = "postgresql://hdc:s3cret@127.0.0.1:1/x?connect_timeout=2"
    failed = await asyncio.to_thread(_cli, "stats", "--storage", url)
    assert failed.returncode == 2
    assert failed.stderr.startswith("hdcontext: cannot use the database postgresql://hdc@127.0.0.1")
    assert "s3cret" not in failed.stderr and failed.stderr.count("\n") == 1
