"""What a storage folder keeps, and for how long: the daemon's retention (idle sessions
deleted at start and then daily), deletion that leaves nothing of a session in the database
file (its free pages, its write-ahead log) nor its exported transcript, and
``hdcontext sessions`` (list, show, delete, prune) beside a running daemon or not."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hdcontext.cli.main import main as cli
from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.daemon.retention import DAY_MS, Retention, parse_days
from hdcontext.edges.proxy.run import _NoEditor
from hdcontext.edges.storage.folder import DB_NAME, prepare_folder
from hdcontext.edges.storage.sqlite_store import SqliteStore

from .harness import read_pair, start_daemon, text

SECRET = "the-deleted-message-text-4c1d"
KEPT = "the-kept-message-text-9a7e"


def conversation(secret: str) -> list[dict[str, Any]]:
    return [
        text("human", f"please read it: {secret}"),
        *read_pair("r1", "/w/a.py", f"print('{secret}')"),
        text("ai", f"it prints {secret}"),
    ]


async def store_session(daemon: Daemon, session_id: str, secret: str) -> None:
    """A session as a client leaves it: synced, compacted (working rows written), its
    transcript exported (what an LLM summary points at)."""
    await daemon.sync({"sessionId": session_id, "entries": conversation(secret)})
    await daemon.compact({"sessionId": session_id})
    session = await daemon.registry.get(session_id)
    await daemon.store.export_transcript(session_id, session.history.transcript_json)


@pytest.fixture
async def daemon(tmp_path: Path) -> AsyncIterator[Daemon]:
    storage = tmp_path / "storage"
    prepare_folder(storage)
    running = Daemon(_NoEditor(), storage, IdeSettings())
    await running.start()
    try:
        yield running
    finally:
        await running.shutdown()
        await running.store.close()


def on_disk(storage: Path) -> bytes:
    """Every byte of the storage folder: the database, its log, the transcripts."""
    return b"".join(p.read_bytes() for p in sorted(storage.rglob("*")) if p.is_file())


def stored_data(storage: Path) -> dict[str, bytes]:
    """What a change would change: the database file and the transcripts (not the lock file,
    which says who took it last, nor the log's index, which a reader may make)."""
    files = [storage / DB_NAME, *sorted((storage / "transcripts").glob("*"))]
    return {p.name: p.read_bytes() for p in files}


def age(storage: Path, session_id: str, days: float) -> None:
    """Make a session look last used ``days`` ago (as an idle one would be)."""
    then = time.time_ns() // 1_000_000 - int(days * DAY_MS)
    with sqlite3.connect(storage / DB_NAME) as db:
        db.execute("UPDATE sessions SET updated=? WHERE id=?", (then, session_id))
    db.close()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """``hdcontext ARGS…`` in a process of its own (the folder's lock is per process)."""
    return subprocess.run(
        [sys.executable, "-m", "hdcontext", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def test_a_deleted_session_leaves_nothing_in_the_file(daemon: Daemon) -> None:
    """Every table's rows go (a table added later with a session_id column too), freed pages
    are zeroed, the write-ahead log is truncated, the exported transcript is removed; the other
    sessions stay whole."""
    storage = daemon.storage_dir
    await store_session(daemon, "gone", SECRET)
    await store_session(daemon, "kept", KEPT)

    # A table a later version may add: covered without being listed.
    def add_table(db: sqlite3.Connection) -> None:
        db.execute("CREATE TABLE later_figures (session_id TEXT NOT NULL, note TEXT)")
        db.execute("INSERT INTO later_figures VALUES ('gone', ?), ('kept', ?)", (SECRET, KEPT))

    def calls_of(db: sqlite3.Connection) -> list[str]:
        return [str(sid) for (sid,) in db.execute("SELECT session_id FROM calls ORDER BY 1")]

    await daemon.store._run(add_table)
    assert await daemon.store._run(calls_of) == ["gone", "kept"]  # each one's model call
    transcript = daemon.store.transcript_path("gone")
    assert transcript.is_file()
    assert SECRET.encode() in on_disk(storage)
    await daemon.delete({"sessionId": "gone"})
    everything = on_disk(storage)
    assert SECRET.encode() not in everything
    assert KEPT.encode() in everything  # the search does find what is there
    assert not transcript.exists()
    assert (storage / f"{DB_NAME}-wal").stat().st_size == 0
    listed = await daemon.list({})
    assert [s["sessionId"] for s in listed["sessions"]] == ["kept"]
    assert await daemon.store._run(calls_of) == ["kept"]  # hdcontext stats' rows went too
    session = await daemon.registry.get("kept")
    assert len(session.history.transcript) == 4


async def test_a_database_written_before_scrubbing_is_rewritten_at_its_first_deletion(
    tmp_path: Path,
) -> None:
    """An older daemon deleted without zeroing: what it freed stays in the file's free pages
    until a deletion rewrites the file once (VACUUM)."""
    storage = tmp_path / "storage"
    prepare_folder(storage)
    store = SqliteStore(storage)
    await store.open()
    await store.close()
    with sqlite3.connect(storage / DB_NAME, isolation_level=None) as db:  # as schema 2 left it
        db.execute("PRAGMA secure_delete=OFF")
        db.execute("DROP TABLE meta")
        db.execute("PRAGMA user_version=2")
        db.execute("CREATE TABLE scratch (x TEXT)")
        db.executemany("INSERT INTO scratch VALUES (?)", [(SECRET * 100,)] * 200)
        db.execute("DROP TABLE scratch")  # freed, not zeroed
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    assert SECRET.encode() in on_disk(storage)
    daemon = Daemon(_NoEditor(), storage, IdeSettings())
    await daemon.start()
    try:
        await store_session(daemon, "other", KEPT)
        await daemon.delete({"sessionId": "other"})
    finally:
        await daemon.shutdown()
        await daemon.store.close()
    assert SECRET.encode() not in on_disk(storage)
    assert KEPT.encode() not in on_disk(storage)


async def _until(predicate: Any, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not await predicate():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.05)


@pytest.mark.parametrize(
    ("days", "idle", "pruned"),
    [
        (30, {"old": 31, "recent": 29}, {"old"}),
        (1, {"old": 1.5, "recent": 0.5}, {"old"}),
        (0, {"old": 0.05, "recent": 0.01}, {"old"}),  # 0: an hour idle is too long
        (None, {"old": 3650, "recent": 0}, set()),  # forever
    ],
    ids=["30-days", "1-day", "0-in-use", "forever"],
)
async def test_retention_deletes_idle_sessions_at_start(
    tmp_path: Path, days: int | None, idle: dict[str, float], pruned: set[str]
) -> None:
    storage = tmp_path / "storage"
    prepare_folder(storage)
    first = Daemon(_NoEditor(), storage, IdeSettings())
    await first.start()
    for session_id in idle:
        await store_session(first, session_id, f"{SECRET}-{session_id}")
    await first.shutdown()
    await first.store.close()
    for session_id, days_idle in idle.items():
        age(storage, session_id, days_idle)
    daemon = Daemon(_NoEditor(), storage, IdeSettings(), retention=Retention(days))
    await daemon.start()
    expected = set(idle) - pruned

    async def settled() -> bool:
        listed = await daemon.list({})
        return {s["sessionId"] for s in listed["sessions"]} == expected

    try:
        await _until(settled)
        await asyncio.sleep(0.2)  # and nothing more goes
        assert await settled()
    finally:
        await daemon.shutdown()
        await daemon.store.close()
    everything = on_disk(storage)
    for session_id in idle:
        assert (f"{SECRET}-{session_id}".encode() in everything) == (session_id in expected)


async def test_retention_zero_deletes_what_the_daemon_served_when_it_stops(
    tmp_path: Path,
) -> None:
    storage = tmp_path / "storage"
    prepare_folder(storage)
    daemon = Daemon(_NoEditor(), storage, IdeSettings(), retention=Retention(0))
    await daemon.start()
    await store_session(daemon, "in-use", SECRET)
    assert [s["sessionId"] for s in (await daemon.list({}))["sessions"]] == ["in-use"]
    await daemon.shutdown()
    await daemon.store.close()
    assert SECRET.encode() not in on_disk(storage)


async def test_pruning_spares_a_session_used_since_it_was_found_idle(daemon: Daemon) -> None:
    """The daemon lists idle sessions, then deletes each under its lock only if it is still
    idle: a request that came in between keeps it."""
    await store_session(daemon, "s", SECRET)
    age(daemon.storage_dir, "s", 40)
    cutoff = time.time_ns() // 1_000_000 - 30 * DAY_MS
    assert await daemon.store.idle(cutoff) == ["s"]
    await daemon.sync({"sessionId": "s", "entries": [*conversation(SECRET), text("human", "hi")]})
    assert await daemon.prune(cutoff) == 0
    assert await daemon.store.delete_sessions(["s"], idle_before=cutoff) == []
    age(daemon.storage_dir, "s", 40)
    assert await daemon.prune(cutoff) == 1
    assert (await daemon.list({}))["sessions"] == []
    # A conversation that comes back after its session went starts a new one.
    await daemon.sync({"sessionId": "s", "entries": conversation(SECRET)})
    assert [s["sessionId"] for s in (await daemon.list({}))["sessions"]] == ["s"]


@pytest.mark.parametrize(
    ("text_", "days"),
    [("30", 30), ("0", 0), ("forever", None), ("FOREVER", None)],
)
def test_retention_days_reads_days_or_forever(text_: str, days: int | None) -> None:
    assert parse_days(text_) == days


@pytest.mark.parametrize("bad", ["-1", "1.5", "soon", ""])
def test_retention_days_refuses_anything_else(bad: str) -> None:
    with pytest.raises(ValueError):
        parse_days(bad)
    with pytest.raises(SystemExit) as exit_:
        cli(["proxy", "--retention-days", bad])
    assert exit_.value.code == 2


# -- hdcontext sessions ---------------------------------------------------------------------


async def _stored(tmp_path: Path) -> Path:
    """A storage folder with two sessions, 'old' (40 days idle) and 'new', no daemon on it."""
    storage = tmp_path / "storage"
    prepare_folder(storage)
    daemon = Daemon(_NoEditor(), storage, IdeSettings())
    await daemon.start()
    await store_session(daemon, "old", SECRET)
    await store_session(daemon, "new", KEPT)
    await daemon.shutdown()
    await daemon.store.close()
    age(storage, "old", 40)
    return storage


async def test_sessions_list_and_show_read_a_folder_a_daemon_holds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = await _stored(tmp_path)
    daemon = Daemon(_NoEditor(), storage, IdeSettings())
    await daemon.start()  # holds the folder's lock and has the database open
    try:
        await daemon.sync({"sessionId": "new", "entries": [*conversation(KEPT), text("ai", "x")]})
        listed = await asyncio.to_thread(run_cli, "sessions", "list", "--storage-dir", str(storage))
        as_json = await asyncio.to_thread(
            run_cli, "sessions", "list", "--json", "--storage-dir", str(storage)
        )
        shown = await asyncio.to_thread(
            run_cli, "sessions", "show", "new", "--storage-dir", str(storage)
        )
        transcript = await asyncio.to_thread(
            run_cli, "sessions", "show", "old", "--transcript", "--storage-dir", str(storage)
        )
    finally:
        await daemon.shutdown()
        await daemon.store.close()
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["SESSION", "LAST", "USED", "ENTRIES", "TOKENS", "CALLS", "MODEL"]
    assert [line.split()[0] for line in lines[1:3]] == ["new", "old"]  # last used first
    assert lines[-1] == f"2 sessions in {storage}"
    rows = json.loads(as_json.stdout)
    new = next(r for r in rows if r["session_id"] == "new")
    assert new["transcript_entries"] == 5  # the commit made while it ran is seen
    assert shown.returncode == 0, shown.stderr
    assert "entries     " in shown.stdout and "5 in the transcript" in shown.stdout
    assert [json.loads(line)["speaker"] for line in transcript.stdout.splitlines()] == [
        "human",
        "ai",
        "tool",
        "ai",
    ]
    assert SECRET in transcript.stdout
    for done in (listed, shown):
        assert SECRET not in done.stdout and KEPT not in done.stdout  # figures, not content


async def test_sessions_delete_and_prune_refuse_while_a_daemon_holds_the_folder(
    tmp_path: Path,
) -> None:
    storage = await _stored(tmp_path)
    daemon = Daemon(_NoEditor(), storage, IdeSettings())
    await daemon.start()
    try:
        refused = [
            await asyncio.to_thread(run_cli, "sessions", *args, "--storage-dir", str(storage))
            for args in (("delete", "old"), ("prune", "--older-than", "7d"))
        ]
        dry = await asyncio.to_thread(
            run_cli,
            "sessions",
            "prune",
            "--older-than",
            "7d",
            "--dry-run",
            "--storage-dir",
            str(storage),
        )
    finally:
        await daemon.shutdown()
        await daemon.store.close()
    for done in refused:
        assert done.returncode == 2
        assert done.stdout == ""
        (line,) = done.stderr.splitlines()
        assert "in use by a running hdcontext daemon or proxy" in line
        assert "nothing deleted" in line
    assert dry.returncode == 0, dry.stderr
    assert dry.stdout.splitlines() == ["would delete old", "1 session idle for longer than 7d"]
    assert SECRET.encode() in on_disk(storage)
    listed = await asyncio.to_thread(run_cli, "sessions", "list", "--storage-dir", str(storage))
    assert listed.stdout.endswith(f"2 sessions in {storage}\n")


async def test_sessions_delete_and_prune(tmp_path: Path) -> None:
    storage = await _stored(tmp_path)
    pruned = await asyncio.to_thread(
        run_cli, "sessions", "prune", "--older-than", "30d", "--storage-dir", str(storage)
    )
    assert pruned.returncode == 0, pruned.stderr
    assert pruned.stdout.splitlines() == [
        "deleted old",
        "1 session idle for longer than 30d deleted",
    ]
    assert SECRET.encode() not in on_disk(storage)
    assert KEPT.encode() in on_disk(storage)
    deleted = await asyncio.to_thread(
        run_cli, "sessions", "delete", "new", "--storage-dir", str(storage)
    )
    assert (deleted.returncode, deleted.stdout) == (0, "deleted new\n"), deleted.stderr
    assert KEPT.encode() not in on_disk(storage)
    listed = await asyncio.to_thread(run_cli, "sessions", "list", "--storage-dir", str(storage))
    assert listed.stdout == f"no sessions in {storage}\n"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("delete", "old", "nope"), "no session 'nope' in"),
        (("show", "nope"), "no session 'nope' in"),
        (("prune", "--older-than", "soon"), "--older-than: not a duration: 'soon'"),
        (("prune", "--older-than=-3d"), "--older-than: not a duration: '-3d'"),
    ],
    ids=["delete-unknown", "show-unknown", "bad-duration", "negative-duration"],
)
async def test_bad_input_is_one_line_exit_2_and_nothing_changed(
    tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    storage = await _stored(tmp_path)
    before = stored_data(storage)
    done = await asyncio.to_thread(run_cli, "sessions", *args, "--storage-dir", str(storage))
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert said in line, line
    assert done.stdout == ""
    assert stored_data(storage) == before


@pytest.mark.parametrize("command", [("list",), ("delete", "x"), ("prune", "--older-than", "1")])
def test_a_missing_folder_is_one_line_exit_2(
    tmp_path: Path, command: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nowhere"
    assert cli(["sessions", *command, "--storage-dir", str(missing)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [f"hdcontext: no storage folder at {missing}"]
    assert not missing.exists()


async def test_an_editors_daemon_prunes_by_its_retention_option(tmp_path: Path) -> None:
    """``initializationOptions.retentionDays`` (over ``serve --retention-days``): the daemon
    an editor starts prunes its folder too."""
    storage = await _stored(tmp_path)
    async with start_daemon(storage, init_options={"retentionDays": 7}) as daemon:
        for _ in range(200):
            listed = await daemon.call("history/list", {})
            if [s["sessionId"] for s in listed["sessions"]] == ["new"]:
                break
            await asyncio.sleep(0.05)
        assert [s["sessionId"] for s in listed["sessions"]] == ["new"]
    assert SECRET.encode() not in on_disk(storage)
