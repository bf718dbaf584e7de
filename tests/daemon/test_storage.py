"""The storage folder: private, one daemon at a time, no links followed, and a damaged
session still opens (issue 12; PROTOCOL.md "Storage")."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from .harness import call_ids, read_pair, start_daemon, text
from .raw import SERVE, START_S, ended, stdio_daemon

DB = "hdcontext.sqlite3"


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


async def _summary(params: dict[str, Any]) -> dict[str, str]:
    return {"text": "<state_snapshot>what happened</state_snapshot>"}


async def _compress_once(storage: Path) -> None:
    """A session compressed by an LLM strategy, which exports its transcript to a file."""
    async with start_daemon(storage, summarize=_summary) as d:
        await d.call("history/open", {"sessionId": "s", "contextLimit": 400})
        await d.call(
            "history/setOverride",
            {"sessionId": "s", "key": "compression.strategy", "value": "one-shot"},
        )
        await d.call(
            "history/append",
            {
                "sessionId": "s",
                "entries": [
                    text("human" if i % 2 == 0 else "ai", f"turn {i} " + "words " * 30)
                    for i in range(12)
                ],
            },
        )
        result = await d.call("history/compact", {"sessionId": "s"})
        assert result["compression"]["transcriptPath"]


async def test_the_storage_folder_and_its_files_are_private(storage: Path) -> None:
    old_umask = os.umask(0o022)  # the daemon must not depend on the user's umask
    try:
        await _compress_once(storage)
    finally:
        os.umask(old_umask)
    assert _mode(storage) == 0o700
    files = [storage / name for name in (DB, f"{DB}-wal", f"{DB}-shm", "hdcontext.lock")]
    transcripts = storage / "transcripts"
    exported = list(transcripts.iterdir())
    assert exported and _mode(transcripts) == 0o700
    for path in [*files, *exported]:
        if path.exists():
            assert _mode(path) == 0o600, path
    assert (storage / DB).exists() and (storage / "hdcontext.lock").exists()


async def test_a_folder_left_open_by_an_older_daemon_is_narrowed(storage: Path) -> None:
    await _compress_once(storage)
    os.chmod(storage, 0o755)
    os.chmod(storage / DB, 0o644)
    os.chmod(storage / "transcripts", 0o755)
    for path in (storage / "transcripts").iterdir():
        os.chmod(path, 0o644)
    async with start_daemon(storage) as d:
        assert await d.call("history/list", {})
    assert _mode(storage) == 0o700 and _mode(storage / DB) == 0o600
    assert _mode(storage / "transcripts") == 0o700
    assert all(_mode(p) == 0o600 for p in (storage / "transcripts").iterdir())


async def test_a_link_inside_the_storage_folder_is_refused(storage: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    storage.mkdir()
    (storage / "transcripts").symlink_to(elsewhere)
    async with stdio_daemon() as d:
        error = (await d.peer.initialize(storage))["error"]
        assert error["code"] == -32004
        assert "symbolic link" in error["message"] and "transcripts" in error["message"]
    assert list(elsewhere.iterdir()) == []
    (storage / "transcripts").unlink()
    (storage / DB).symlink_to(elsewhere / "db")
    async with stdio_daemon() as d:
        error = (await d.peer.initialize(storage))["error"]
        assert error["code"] == -32004 and "symbolic link" in error["message"]
    assert list(elsewhere.iterdir()) == []


async def test_a_second_daemon_on_the_folder_is_refused_and_the_first_keeps_every_entry(
    storage: Path,
) -> None:
    async with start_daemon(storage) as first:
        await first.call("history/open", {"sessionId": "s"})
        await first.call(
            "history/append",
            {"sessionId": "s", "entries": [text("human", f"one {i}") for i in range(5)]},
        )
        async with stdio_daemon() as second:
            error = (await second.peer.initialize(storage))["error"]
            assert error["code"] == -32004
            assert str(storage) in error["message"]
            assert f"pid {first.pid}" in error["message"]
            # Not initialized: the second daemon writes nothing.
            refused = await second.peer.fails("history/append", {"sessionId": "s", "entries": []})
            assert refused["code"] == -32002
            await first.call(
                "history/append",
                {"sessionId": "s", "entries": [text("ai", f"two {i}") for i in range(5)]},
            )
        # Started by hand over TCP, a daemon on a held folder stops with exit code 3.
        proc = await asyncio.create_subprocess_exec(
            *SERVE,
            "--tcp",
            "--port",
            "0",
            "--storage-dir",
            str(storage),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        _, stderr = await asyncio.wait_for(proc.communicate(), START_S)
        assert proc.returncode == 3
        assert f"in use by another hdcontext daemon (pid {first.pid})" in stderr.decode()
        transcript = await first.call("history/get", {"sessionId": "s", "view": "transcript"})
    async with start_daemon(storage) as again:
        after = await again.call("history/get", {"sessionId": "s", "view": "transcript"})
    assert after["entries"] == transcript["entries"] and len(after["entries"]) == 10


async def test_the_lock_goes_with_the_daemon_even_when_it_is_killed(storage: Path) -> None:
    async with start_daemon(storage) as first:
        await first.call("history/open", {"sessionId": "s"})
        await first.kill()
    async with stdio_daemon() as second:
        assert "result" in await second.peer.initialize(storage)
        second.peer.notify("exit")
        assert await ended(second.proc) == 1


SPOKEN = [("human", "a"), ("ai", "b"), ("human", "c")]


def _delete_transcript_rows(storage: Path, seqs: list[int]) -> None:
    db = sqlite3.connect(storage / DB)
    with db:
        db.executemany(
            "DELETE FROM transcript WHERE session_id='s' AND seq=?", [(s,) for s in seqs]
        )
    db.close()


async def test_a_session_missing_a_transcript_row_opens_with_what_is_left(storage: Path) -> None:
    entries = [
        text("human", "look at the files"),  # 0
        *read_pair("r1", "/w/a.py", "print(1)"),  # 1, 2
        text("ai", "a.py prints 1"),  # 3
        *read_pair("r2", "/w/b.py", "print(2)"),  # 4, 5
        text("ai", "b.py prints 2"),  # 6
    ]
    async with start_daemon(storage) as d:
        await d.call("history/open", {"sessionId": "s"})
        await d.call("history/append", {"sessionId": "s", "entries": entries})
    _delete_transcript_rows(storage, [2])  # r1's response: its call must go with it

    async with start_daemon(storage) as d:
        raw = await d.call("history/get", {"sessionId": "s", "view": "raw"})
        warnings = [w for w in d.warnings() if "damaged" in w]
        assert len(warnings) == 1, d.warnings()
        assert (
            "session 's'" in warnings[0] and "1 transcript entry could not be found" in warnings[0]
        )
        texts = [e["blocks"][0].get("text") for e in raw["entries"]]
        assert texts == ["look at the files", "a.py prints 1", None, None, "b.py prints 2"]
        assert call_ids(raw["entries"]) == {"r2"}  # no call left without its response
        transcript = await d.call("history/get", {"sessionId": "s", "view": "transcript"})
        assert len(transcript["entries"]) == 6
        # The repaired session takes new entries, and they last.
        await d.call("history/append", {"sessionId": "s", "entries": [text("human", "more")]})
        compacted = await d.call("history/compact", {"sessionId": "s"})
        assert compacted["status"]["entryCount"] == 6

    async with start_daemon(storage) as d:
        raw = await d.call("history/get", {"sessionId": "s", "view": "raw"})
        assert [e["blocks"][0].get("text") for e in raw["entries"]][-1] == "more"
        transcript = await d.call("history/get", {"sessionId": "s", "view": "transcript"})
        assert len(transcript["entries"]) == 7
        assert not [w for w in d.warnings() if "damaged" in w]  # repaired once, for good


async def test_a_session_missing_its_last_transcript_rows_opens_too(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await d.call("history/open", {"sessionId": "s"})
        await d.call(
            "history/append",
            {
                "sessionId": "s",
                "entries": [text("human", "a"), text("ai", "b"), text("human", "c")],
            },
        )
    _delete_transcript_rows(storage, [2])
    async with start_daemon(storage) as d:
        raw = await d.call("history/get", {"sessionId": "s", "view": "raw"})
        assert [e["blocks"][0]["text"] for e in raw["entries"]] == ["a", "b"]
        assert any("damaged" in w for w in d.warnings())
        await d.call("history/append", {"sessionId": "s", "entries": [text("human", "d")]})
        transcript = await d.call("history/get", {"sessionId": "s", "view": "transcript"})
        assert [e["blocks"][0]["text"] for e in transcript["entries"]] == ["a", "b", "d"]


async def test_a_daemon_given_no_folder_writes_in_this_workers_own(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """tests/conftest.py gives each pytest worker its own default data folder: without it, the
    workers' daemons would share the user's (and its lock) when a test names no folder."""
    async with stdio_daemon() as d:
        answer = await d.peer.request(
            "initialize", {"processId": None, "rootUri": None, "capabilities": {}}
        )
        assert "result" in answer, answer
        d.peer.notify("initialized", {})
        await d.peer.call("history/open", {"sessionId": "here"})
        listed = await d.peer.call("history/list")
    assert [s["sessionId"] for s in listed["sessions"]] == ["here"]
    own = Path(os.environ["XDG_DATA_HOME"])
    assert own.is_relative_to(tmp_path_factory.getbasetemp())  # this worker's, popen-gwN/
    assert any((own / "hdcontext").iterdir())
