"""The store's promises, kept by both stores (a storage folder and a PostgreSQL database): a
session reads back exactly as it was saved, edits write and delete only their rows, the calls,
the proxy's resume rows and its counts of requests not carried are kept and read the same way,
a deleted session leaves no row in any table, a damaged one still opens, a newer schema is
refused in one line. And the two stores keep the very same figures for the same requests."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.stats.owners import owner_row, read_owners
from hdcontext.edges.storage.location import Location
from hdcontext.edges.storage.records import PassedRow, ResumeRow, StoreError, now_ms
from hdcontext.edges.storage.store import make_store, open_reader, open_store
from tests.daemon.harness import read_pair, text, write_pair

from .conftest import sql

SECRET = "the-secret-of-the-deleted-session-4f1c"
KEPT = "what-the-kept-session-says-9a2e"
EVERY_TURN = {"key": "compression.density.schedule", "value": "every-turn"}


async def converse(daemon: Daemon, sid: str, marker: str, turns: int = 6) -> None:
    """A session with reads made stale by later writes (edits to store), a compaction and
    a usage per turn: rows in every table of a session."""
    await daemon.open({"sessionId": sid, "model": "claude-sonnet-4-5"})
    await daemon.set_override({"sessionId": sid, **EVERY_TURN})
    at = 1_764_000_000_000
    for k in range(turns):
        entries = [
            text("human", f"{marker} turn {k}"),
            *read_pair(f"r{k}", f"/w/f{k % 2}.py", f"{marker} content {k}\n" * 30),
            *write_pair(f"w{k}", f"/w/f{k % 2}.py", f"{marker} new {k}"),
            text("ai", f"{marker} done {k}"),
        ]
        await daemon.append({"sessionId": sid, "entries": entries})
        await daemon.compact({"sessionId": sid, "at": at + k * 60_000, "reply": "none"})
        await daemon.usage(
            {
                "sessionId": sid,
                "inputTokens": 100 + k,
                "cacheReadTokens": 1000,
                "cacheWriteTokens": 200,
                "outputTokens": 7,
            }
        )


def _view(daemon: Daemon, sid: str) -> dict[str, Any]:
    session = daemon.registry.loaded_session(sid)
    assert session is not None
    history = session.history
    return {
        "raw": [e.to_wire() for e in history.raw],
        "keys": list(history.keys),
        "tokens": list(history.tokens),
        "transcript": [e.to_wire() for e in history.transcript],
        "state": session.export_state().to_json(),
    }


async def test_a_session_reads_back_exactly_as_it_was_saved(
    where: Location, daemon_at: Callable[[], Any]
) -> None:
    first: Daemon = await daemon_at()
    await converse(first, "s", KEPT)
    before = _view(first, "s")
    assert len(before["raw"]) < len(before["transcript"])  # edits were made and stored
    await first.store.close()

    again: Daemon = await daemon_at()
    await again.registry.get("s")
    assert _view(again, "s") == before


async def test_an_edit_writes_and_deletes_only_its_rows(
    where: Location, daemon_at: Callable[[], Any]
) -> None:
    daemon: Daemon = await daemon_at()
    await converse(daemon, "s", KEPT, turns=3)
    working = sql(where, "SELECT pos FROM working WHERE session_id=? ORDER BY pos", ("s",))
    session = daemon.registry.loaded_session("s")
    assert session is not None
    assert [p for (p,) in working] == list(session.history.keys)
    referred = sql(where, "SELECT count(*) FROM working WHERE session_id='s' AND seq IS NOT NULL")
    assert referred[0][0] > 0  # appended entries refer to their transcript row


async def test_calls_are_kept_and_read_back(where: Location, daemon_at: Callable[[], Any]) -> None:
    daemon: Daemon = await daemon_at()
    await converse(daemon, "s", KEPT, turns=3)
    read = await daemon.store.calls_for_stats(None)
    assert read.stored == ["s"]
    assert [row.kind for row in read.calls] == ["model"] * 3
    assert [row.billed.input if row.billed else None for row in read.calls] == [100, 101, 102]
    assert all(row.charge is not None and row.off is not None for row in read.calls)
    assert read.overrides["s"] == {"compression.density.schedule": "every-turn"}
    with open_reader(where) as reader:
        assert reader.calls("s") == read.calls
        (shown,) = reader.sessions()
        assert shown.session_id == "s" and shown.calls == 3
        assert shown.transcript_entries == len(reader.transcript("s")) == 3 * 6


async def test_the_proxys_resume_rows_are_kept_for_stored_sessions_and_read_once(
    where: Location,
) -> None:
    store = await open_store(where)
    try:
        now = now_ms()
        from hdcontext.core.session.session import Session

        await store.create("stored", Session("stored").export_state(), None)
        kept = await store.keep_resume(
            [
                ResumeRow("stored", now, "anthropic", "claude-cli", b'{"messages":[]}'),
                ResumeRow("deleted-meanwhile", now, "openai", "OpenAI", b"{}"),
            ]
        )
        assert kept == 1
        assert await store.take_resume(now + 1) == []  # too old: read, and gone
        await store.keep_resume([ResumeRow("stored", now, "anthropic", "c", b"\x00\xff")])
        (row,) = await store.take_resume(now - 10)
        assert row == ResumeRow("stored", now, "anthropic", "c", b"\x00\xff")
        assert await store.take_resume(0) == []
    finally:
        await store.close()


async def test_the_requests_not_carried_are_counted_and_forgotten(where: Location) -> None:
    store = await open_store(where)
    try:
        day = "2026-01-02"
        await store.add_passed([PassedRow(day, "anthropic", "as sent", "why", 2, 1000)])
        await store.add_passed(
            [
                PassedRow(day, "anthropic", "as sent", "why", 3, 900),
                PassedRow(day, "openai", "passed through", "GET /v1/models", 1, 5000),
            ]
        )
        with open_reader(where) as reader:
            counted = reader.passed()
            assert reader.passed(since=2000) == [counted[1]]
        assert counted == [
            PassedRow(day, "anthropic", "as sent", "why", 5, 1000),
            PassedRow(day, "openai", "passed through", "GET /v1/models", 1, 5000),
        ]
        await store.forget_passed(2000)
        with open_reader(where) as reader:
            assert [r.api for r in reader.passed()] == ["openai"]
    finally:
        await store.close()


async def test_an_owner_is_kept_while_it_has_a_session_or_was_seen(
    where: Location, daemon_at: Callable[[], Any]
) -> None:
    """A gateway's owners (``hdcontext stats --by user``): written by any process, the latest
    record winning and ``seen`` never going back; the daemon's pruning forgets an owner once
    none of its sessions is left and it was not seen within the retention."""
    daemon: Daemon = await daemon_at()
    store = daemon.store
    old, seen = 1000, now_ms()
    await converse(daemon, "litellm-aaaa-openai-1", KEPT, turns=1)
    await store.put_owners(
        [
            owner_row("aaaa", {"user": "alice"}, old),  # an old owner with a session
            owner_row("bbbb", {"user": "bob"}, old),  # an old owner without one
            owner_row("cccc", {"user": "carol"}, seen),  # seen lately, no session yet
        ]
    )
    await store.put_owners([owner_row("bbbb", {"user": "bob", "team": "t"}, old - 1)])
    assert read_owners(where)["bbbb"] == {"user": "bob", "team": "t"}
    assert sql(where, "SELECT seen FROM owners WHERE tag='bbbb'") == [(old,)]
    await daemon.prune(idle_before=seen - 60_000)  # no session is idle that long
    assert sorted(read_owners(where)) == ["aaaa", "cccc"]
    await daemon.prune(idle_before=seen + 60_000)  # every session idle: all go
    assert read_owners(where) == {}


async def test_a_deleted_session_leaves_no_row_in_any_table(
    where: Location, daemon_at: Callable[[], Any]
) -> None:
    daemon: Daemon = await daemon_at()
    await converse(daemon, "gone", SECRET, turns=2)
    await converse(daemon, "kept", KEPT, turns=2)
    await daemon.store.keep_resume([ResumeRow("gone", now_ms(), "anthropic", "c", b"{}")])
    tables = ["sessions", "transcript", "working", "calls", "resume"]

    def rows_of(sid: str) -> dict[str, int]:
        column = {"sessions": "id"}
        return {
            t: sql(
                where, f"SELECT count(*) FROM {t} WHERE {column.get(t, 'session_id')}=?", (sid,)
            )[0][0]
            for t in tables
        }

    assert all(rows_of("gone")[t] > 0 for t in tables)
    await daemon.delete({"sessionId": "gone"})
    assert rows_of("gone") == dict.fromkeys(tables, 0)
    assert rows_of("kept")["transcript"] == 12
    texts = sql(where, "SELECT entry FROM transcript") + sql(where, "SELECT state FROM sessions")
    assert not any(SECRET in str(value) for (value,) in texts)
    assert any(KEPT in str(value) for (value,) in texts)


async def test_only_sessions_still_idle_are_pruned(where: Location) -> None:
    store = await open_store(where)
    try:
        from hdcontext.core.session.session import Session

        for sid in ("old", "new"):
            await store.create(sid, Session(sid).export_state(), None)
        sql(where, "UPDATE sessions SET updated=? WHERE id='old'", (1000,))
        assert await store.idle(now_ms() - 60_000) == ["old"]
        assert [s.session_id for s in await store.summaries()] == ["new", "old"]
        # A request changed it since it was found idle: it stays.
        assert await store.delete_sessions(["old", "new"], idle_before=500) == []
        assert await store.delete_sessions(["old", "new"], idle_before=2000) == ["old"]
        assert await store.exists("new") and not await store.exists("old")
    finally:
        await store.close()


async def test_a_session_whose_transcript_lost_a_row_still_opens(
    where: Location, daemon_at: Callable[[], Any]
) -> None:
    daemon: Daemon = await daemon_at()
    await daemon.open({"sessionId": "s"})
    entries = [text("human" if i % 2 == 0 else "ai", f"turn {i}") for i in range(6)]
    await daemon.append({"sessionId": "s", "entries": entries})
    await daemon.store.close()
    sql(where, "DELETE FROM transcript WHERE session_id='s' AND seq=2")

    warned: list[str] = []
    again: Daemon = await daemon_at()
    again.store.warn = warned.append
    session = await again.registry.get("s")
    assert [e.blocks[0].text for e in session.history.raw] == [  # type: ignore[union-attr]
        f"turn {i}" for i in (0, 1, 3, 4, 5)
    ]
    assert len(warned) == 1 and "1 transcript entry could not be found" in warned[0]
    seqs = sql(where, "SELECT seq FROM transcript WHERE session_id='s' ORDER BY seq")
    assert [s for (s,) in seqs] == [0, 1, 2, 3, 4]  # renumbered once, for good


async def test_a_newer_schema_is_refused_in_one_line(where: Location) -> None:
    store = await open_store(where)
    await store.close()
    if where.folder is not None:
        sql(where, "PRAGMA user_version=99")
    else:
        sql(where, "UPDATE meta SET value='99' WHERE key='schema'")
    with pytest.raises(StoreError) as refused:
        await open_store(where)
    message = str(refused.value)
    assert "newer hdcontext (schema 99" in message and "\n" not in message
    with pytest.raises(StoreError, match="newer hdcontext"):
        open_reader(where)


async def test_both_stores_keep_the_same_figures_for_the_same_requests(
    tmp_path: Path, pg_url: str
) -> None:
    """The same requests on a folder and on a database: the same sessions, histories, states
    and calls (less the clocks of the writes), as ``hdcontext sessions`` and ``stats`` read
    them."""
    seen = []
    for where in (Location(folder=tmp_path / "storage"), Location(url=pg_url)):
        daemon = Daemon(_no_editor(), where, _settings())
        await daemon.start()
        try:
            await converse(daemon, "a", KEPT)
            await converse(daemon, "b", SECRET, turns=3)
            views = {sid: _view(daemon, sid) for sid in ("a", "b")}
            read = await daemon.store.calls_for_stats(None)
        finally:
            await daemon.shutdown()
            await daemon.store.close()
        with open_reader(where) as reader:
            listed = [dataclasses.replace(s, created=0, updated=0) for s in reader.sessions()]
            transcripts = {sid: reader.transcript(sid) for sid in ("a", "b")}
        calls = [dataclasses.replace(c, at=0) for c in read.calls]
        seen.append(_timeless((views, calls, read.overrides, sorted(listed, key=str), transcripts)))
    assert seen[0] == seen[1]


def _timeless(value: Any) -> Any:
    """``value`` without what the clock or chance puts in it (entries' arrival stamps, a
    session's epoch), JSON texts read: what the requests alone decide."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return _timeless(json.loads(value))
        except ValueError:
            return value
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("timestamp", "epoch")}
    if isinstance(value, list | tuple):
        return [_timeless(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _timeless(dataclasses.asdict(value))
    return value


def test_a_folder_or_a_url_makes_its_store(tmp_path: Path) -> None:
    assert type(make_store(tmp_path)).__name__ == "SqliteStore"
    assert type(make_store(str(tmp_path))).__name__ == "SqliteStore"
    assert type(make_store("postgresql://u@h/db")).__name__ == "PostgresStore"
    assert make_store("postgres://u:secret@h/db").shown == "postgres://u@h/db"


def _no_editor() -> Any:
    from hdcontext.edges.proxy.run import _NoEditor

    return _NoEditor()


def _settings() -> Any:
    from hdcontext.edges.daemon.ide_settings import IdeSettings

    return IdeSettings()
