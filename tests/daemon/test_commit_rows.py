"""What a commit writes: the rows of the entries that changed, never the rest of the view.

A read at the start of a long session that a late write makes stale is pruned from the middle
of the working view; the commit must delete that read's rows and write the new turn's, and a
restart must bring back exactly the working view the session had.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from hdcontext.core.content import IContent, parse_entries
from hdcontext.core.session.session import Session
from hdcontext.edges.daemon.sessions import Registry
from hdcontext.edges.storage.records import SaveOp
from hdcontext.edges.storage.sqlite_schema import SCHEMA_VERSION
from hdcontext.edges.storage.sqlite_store import SqliteStore

from .harness import read_pair, text, write_pair


class RecordingStore(SqliteStore):
    def __init__(self, directory: Path) -> None:
        super().__init__(directory)
        self.ops: list[SaveOp] = []

    async def save(self, op: SaveOp) -> None:
        self.ops.append(op)
        await super().save(op)


SEEDS_SETTINGS: dict[str, object] = {
    "compression.density.schedule": "every-turn",
    "compression.density.keepLatestView": False,
}


def registry(store: SqliteStore) -> Registry:
    """Sessions with the seeds' schedule: every compact applies what it finds, so each commit
    below has rows to write."""
    return Registry(
        store,
        lambda sid: Session(sid, workspace_root=lambda: "/w", settings=lambda: SEEDS_SETTINGS),
        dict,
    )


def wire(entries: Any) -> list[dict[str, Any]]:
    return [e.to_wire() for e in entries]


def entries(*raw: list[dict[str, Any]] | dict[str, Any]) -> list[IContent]:
    flat: list[dict[str, Any]] = []
    for item in raw:
        flat.extend(item if isinstance(item, list) else [item])
    return parse_entries(flat)


async def test_a_prune_in_the_middle_writes_the_changed_rows_only(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "storage")
    await store.open()
    reg = registry(store)
    session = await reg.open("s", None, {})
    first = entries(read_pair("r0", "/w/a.py", "old a"))
    body = entries(*[text("human" if i % 2 else "ai", f"turn {i}") for i in range(40)])
    await reg.commit(session, lambda: session.append([*first, *body]))
    await reg.commit(session, session.compact)
    kept = len(session.history.raw)
    assert kept == 42  # nothing was stale yet

    store.ops.clear()
    await reg.commit(session, lambda: session.append(entries(write_pair("w1", "/w/a.py", "new"))))
    await reg.commit(session, session.compact)
    assert [e.blocks[0].type for e in session.history.raw[:1]] == ["text"]  # the read went
    appended, compacted = store.ops
    assert not appended.working.rewrite and not appended.working.deleted
    assert len(appended.working.rows) == 2  # the write and its response
    assert not compacted.working.rewrite
    assert len(compacted.working.deleted) == 2  # the read and its response
    assert not compacted.working.rows  # nothing else moved

    raw = wire(session.history.raw)
    keys = list(session.history.keys)
    await store.close()

    again = SqliteStore(tmp_path / "storage")
    await again.open()
    restored = await registry(again).get("s")
    assert wire(restored.history.raw) == raw
    assert list(restored.history.keys) == keys
    await again.close()


async def test_a_history_replaced_wholesale_is_rewritten(tmp_path: Path) -> None:
    store = RecordingStore(tmp_path / "storage")
    await store.open()
    reg = registry(store)
    session = await reg.open("s", None, {})
    await reg.commit(session, lambda: session.append(entries(text("human", "hello"))))
    store.ops.clear()
    await reg.commit(session, session.clear)
    (op,) = store.ops
    assert op.working.rewrite and not op.working.rows
    await reg.commit(session, lambda: session.append(entries(text("human", "again"))))
    await store.close()

    again = SqliteStore(tmp_path / "storage")
    await again.open()
    restored = await registry(again).get("s")
    assert wire(restored.history.raw) == wire(session.history.raw)
    assert len(restored.history.transcript) == 2
    await again.close()


async def test_a_schema_1_database_goes_on_where_it_was(tmp_path: Path) -> None:
    """Schema 1 stored indices as ``pos``: they read back as keys, and edits go on."""
    directory = tmp_path / "storage"
    store = SqliteStore(directory)
    await store.open()
    reg = registry(store)
    session = await reg.open("s", None, {})
    first = entries(
        read_pair("r0", "/w/a.py", "a"), text("ai", "x"), read_pair("r1", "/w/b.py", "b")
    )
    await reg.commit(session, lambda: session.append(first))
    await reg.commit(session, lambda: session.append(entries(write_pair("w0", "/w/a.py", "A"))))
    await reg.commit(session, session.compact)
    assert list(session.history.keys) == [2, 3, 4, 5, 6]  # the first read went
    await store.close()
    with sqlite3.connect(directory / "hdcontext.sqlite3") as db:  # as schema 1 wrote it
        rows = db.execute("SELECT * FROM working ORDER BY pos").fetchall()
        db.execute("DELETE FROM working")
        db.executemany(
            "INSERT INTO working VALUES (?, ?, ?, ?, ?)",
            [
                (sid, index, seq, entry, tokens)
                for index, (sid, _, seq, entry, tokens) in enumerate(rows)
            ],
        )
        db.execute("PRAGMA user_version=1")
    db.close()

    store = SqliteStore(directory)
    await store.open()
    reg = registry(store)
    session = await reg.get("s")
    assert list(session.history.keys) == [0, 1, 2, 3, 4]
    await reg.commit(session, lambda: session.append(entries(write_pair("w1", "/w/b.py", "B"))))
    await reg.commit(session, session.compact)
    assert list(session.history.keys) == [0, 3, 4, 5, 6]  # the second read went
    raw = wire(session.history.raw)
    await store.close()

    again = SqliteStore(directory)
    await again.open()
    assert wire((await registry(again).get("s")).history.raw) == raw
    await again.close()
    with sqlite3.connect(directory / "hdcontext.sqlite3") as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()


async def test_entries_packed_after_their_commit_are_stored_and_read_back_as_json(
    tmp_path: Path,
) -> None:
    """What a compaction let go of is packed in memory after its commit (``pack_left``, as
    the daemon does once the session is idle); the store holds every entry's JSON all the
    same, and a restart reads each back as it was appended."""
    store = SqliteStore(tmp_path / "storage")
    await store.open()
    reg = registry(store)
    session = await reg.open("s", None, {})
    long = "".join(f"line {i} of the old a.py\n" for i in range(200))
    appended = entries(
        read_pair("r0", "/w/a.py", long), text("ai", "ok"), write_pair("w1", "/w/a.py", "new")
    )
    await reg.commit(session, lambda: session.append(appended) or session.compact())
    assert session.pack_left() > 0
    await reg.commit(session, lambda: session.append(entries(text("human", "more"))))
    assert session.history._transcript[1][:1] == b"x"  # packed in memory
    transcript = [json.loads(b) for b in session.history.transcript_json]
    await store.close()
    with sqlite3.connect(tmp_path / "storage" / "hdcontext.sqlite3") as db:
        rows = [json.loads(e) for (e,) in db.execute("SELECT entry FROM transcript ORDER BY seq")]
    assert rows == transcript and rows[1]["blocks"][0]["result"] == long

    again = SqliteStore(tmp_path / "storage")
    await again.open()
    restored = await registry(again).get("s")
    assert [json.loads(b) for b in restored.history.transcript_json] == transcript
    assert restored.pack_left() > 0  # what its view does not hold
    await again.close()
