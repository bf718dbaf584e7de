"""File writes outside the history make earlier reads stale: the disk (the daemon's watcher)
and the editor's didSave. The client's workspace/didChangeWatchedFiles is neither asked for
nor counted: it reported what the watcher sees a second time."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

from lsprotocol import types

from hdcontext.edges.daemon.watcher import says_nothing_about_writes

from .conftest import now_ms
from .harness import Daemon, call_ids, read_pair, start_daemon, text, tool_call, tool_response

MINUTE_AGO = 60_000
SEEDS = {"compression.density.schedule": "every-turn", "compression.density.keepLatestView": False}
"""The seeds' rules: a read that a write made stale goes at the next compact. The tests of how
writes on disk are seen use them; the first test also checks today's default (a pointer)."""
DISK_POINTER = "[File changed on disk after this read — read it again for its current content]"


async def _read_session(d: Daemon, sid: str, path: str, call_id: str = "r1") -> None:
    """A session whose history read ``path`` a minute ago (and read b.py, which stays)."""
    await d.call("history/open", {"sessionId": sid})
    stamp = now_ms() - MINUTE_AGO
    entries = [
        text("human", f"What is in {path}?", timestamp=stamp),
        *read_pair(call_id, path, "print(1)\n", timestamp=stamp),
        *read_pair("keep", "b.py", "print('b')\n", timestamp=stamp),
        text("ai", "It prints 1.", timestamp=stamp),
    ]
    await d.call("history/append", {"sessionId": sid, "entries": entries})


async def _compact_ids(d: Daemon, sid: str) -> tuple[set[str], dict[str, Any]]:
    result = await d.call("history/compact", {"sessionId": sid})
    return call_ids(result["history"]), result


def _result_of(result: dict[str, Any], call_id: str) -> Any:
    return next(
        b["result"]
        for e in result["history"]
        for b in e["blocks"]
        if b["type"] == "tool_response" and b["callId"] == call_id
    )


async def test_a_file_edited_on_disk_turns_the_earlier_read_into_a_pointer(
    storage: Path, workspace: Path
) -> None:
    every_turn = {"compression.density.schedule": "every-turn"}
    async with start_daemon(storage, folders=[workspace], init_settings=every_turn) as d:
        await _read_session(d, "s", "a.py")
        ids, result = await _compact_ids(d, "s")
        assert _result_of(result, "r1") == "print(1)\n"
        (workspace / "a.py").write_text("print(2)\n")
        ids, result = await _compact_ids(d, "s")
        assert {"r1", "keep"} <= ids  # the call stays: the model knows it read the file
        assert _result_of(result, "r1") == DISK_POINTER
        assert _result_of(result, "keep") == "print('b')\n"


async def test_a_file_edited_on_disk_makes_the_earlier_read_stale(
    profile: str, storage: Path, workspace: Path
) -> None:
    async with start_daemon(
        storage, profile=profile, folders=[workspace], init_settings=SEEDS
    ) as d:
        await _read_session(d, "s", "a.py")  # relative: resolved against the first folder
        await _read_session(d, "off", str(workspace / "a.py"))
        await d.call(
            "history/setOverride", {"sessionId": "off", "key": "watch.enabled", "value": False}
        )
        ids, _ = await _compact_ids(d, "s")
        assert "r1" in ids  # nothing written yet

        (workspace / "a.py").write_text("print(2)\n")

        ids, result = await _compact_ids(d, "s")
        assert "r1" not in ids and "keep" in ids
        assert result["density"]["metadata"]["readWritePairsPruned"] >= 1
        transcript = await d.call("history/get", {"sessionId": "s", "view": "transcript"})
        assert "r1" in call_ids(transcript["entries"])  # lossless: the transcript keeps it

        ids, _ = await _compact_ids(d, "off")  # watch.enabled = false: disk writes don't count
        assert "r1" in ids


async def test_the_watcher_reports_a_deleted_file(storage: Path, workspace: Path) -> None:
    # A deletion leaves no file to look at when compacting: only the watcher can tell.
    async with start_daemon(storage, folders=[workspace], init_settings=SEEDS) as d:
        await _read_session(d, "s", "a.py")
        ids, _ = await _compact_ids(d, "s")
        assert "r1" in ids
        (workspace / "a.py").unlink()
        assert await _eventually_pruned(d, "s", "r1", churn=workspace / "a.py")


async def test_the_watcher_follows_workspace_folder_changes(
    storage: Path, workspace: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "c.py").write_text("c = 1\n")
    ignored = other / "node_modules" / "pkg"
    ignored.mkdir(parents=True)
    (ignored / "index.js").write_text("x\n")
    async with start_daemon(storage, folders=[workspace], init_settings=SEEDS) as d:
        await _read_session(d, "s", str(other / "c.py"), call_id="c")
        await d.call(
            "history/append",
            {
                "sessionId": "s",
                "entries": read_pair(
                    "nm", str(ignored / "index.js"), "x\n", timestamp=now_ms() - MINUTE_AGO
                ),
            },
        )
        d.client.workspace_did_change_workspace_folders(
            types.DidChangeWorkspaceFoldersParams(
                event=types.WorkspaceFoldersChangeEvent(
                    added=[types.WorkspaceFolder(uri=other.as_uri(), name="other")], removed=[]
                )
            )
        )
        await d.call("history/list", {})  # the folder change has been handled
        ignored_file = ignored / "index.js"
        ignored_file.unlink()  # in node_modules: never counts
        # The new folder's watch starts in the background: write and delete c.py until the
        # watcher reports it (c.py is absent at each compaction, so only an event can count).
        churn = other / "c.py"
        assert await _eventually_pruned(d, "s", "c", churn=churn)
        ids, _ = await _compact_ids(d, "s")
        assert "nm" in ids


async def _eventually_pruned(d: Daemon, sid: str, call_id: str, churn: Path | None = None) -> bool:
    """Compact until the read is gone: the watcher reports after its debounce. Bounded, so a
    watcher that never reports fails the test instead of hanging it."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if churn is not None:
            churn.write_text("again\n")
            churn.unlink()
        ids, _ = await _compact_ids(d, sid)
        if call_id not in ids:
            return True
        await asyncio.sleep(0.1)
    return False


async def test_did_save_counts_as_a_write_and_watched_file_events_do_not(
    profile: str, storage: Path, workspace: Path
) -> None:
    # Files that are not on disk: only the editor's notifications could make these reads stale.
    async with start_daemon(
        storage, profile=profile, folders=[workspace], init_settings=SEEDS
    ) as d:
        await _read_session(d, "s", "unsaved.py", call_id="saved")
        stamp = now_ms() - MINUTE_AGO
        await d.call(
            "history/append",
            {
                "sessionId": "s",
                "entries": [
                    *read_pair("deleted", "gone.py", "x", timestamp=stamp),
                    *read_pair("other", "other.py", "y", timestamp=stamp),
                ],
            },
        )
        d.client.text_document_did_save(
            types.DidSaveTextDocumentParams(
                text_document=types.TextDocumentIdentifier(uri=(workspace / "unsaved.py").as_uri())
            )
        )
        d.client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(
                        uri=(workspace / "gone.py").as_uri(), type=types.FileChangeType.Deleted
                    )
                ]
            )
        )
        ids, _ = await _compact_ids(d, "s")
        assert "saved" not in ids
        assert {"deleted", "other", "keep"} <= ids  # the watcher is the one source on disk
        registered = [r.method for r in d.registrations]
        assert types.WORKSPACE_DID_CHANGE_WATCHED_FILES not in registered


async def test_pseudo_filesystems_say_nothing_about_writes(
    storage: Path, workspace: Path, tmp_path: Path
) -> None:
    """A procfs file's modification time is when the kernel made its entry (about now): the
    check at compact took ``cat /proc/version`` for a read of a file written since, where the
    seeds keep it (issue 23). A real file outside the workspace is still checked."""
    outside = tmp_path / "outside.txt"
    outside.write_text("changed since it was read\n")
    # Read a day before the kernel made the entries (as in a log replayed from before the
    # machine booted): their times come after the read, and say nothing all the same.
    made = min(os.stat(p).st_mtime_ns // 1_000_000 for p in ("/proc/version", "/proc/cpuinfo"))
    stamp = made - 86_400_000
    async with start_daemon(storage, folders=[workspace], init_settings=SEEDS) as d:
        await d.call("history/open", {"sessionId": "s"})
        entries = [
            text("human", "Which kernel is this?", timestamp=stamp),
            *read_pair("proc", "/proc/version", "Linux version 6.1\n", timestamp=stamp),
            tool_call("cat", "Bash", {"command": "cat /proc/cpuinfo"}, timestamp=stamp),
            tool_response("cat", "Bash", "processor\t: 0\n", timestamp=stamp),
            *read_pair("outside", str(outside), "as it was\n", timestamp=stamp),
            text("ai", "Linux 6.1.", timestamp=stamp),
        ]
        await d.call("history/append", {"sessionId": "s", "entries": entries})
        ids, _ = await _compact_ids(d, "s")
        assert {"proc", "cat"} <= ids
        assert "outside" not in ids


def test_which_paths_are_pseudo_files() -> None:
    for path in ("/proc/version", "/proc/self/status", "/sys/class/net/lo/mtu", "/dev/null"):
        assert says_nothing_about_writes(path)
    for path in ("/procedures.md", "/devices/a.py", "/home/u/proc/a.py", "/system/x", "/"):
        assert not says_nothing_about_writes(path)
