"""Persistence: every session in one SQLite database (WAL) under the storage directory.

Why SQLite: an append must be on disk before its reply, and a daemon killed with SIGKILL at any
moment must come back with every acknowledged entry. One transaction per request gives exactly
that (``synchronous=FULL``: a commit has reached the disk, not only the page cache), and WAL
keeps readers from blocking the writer. The store is the only module that knows SQL.

Layout: ``transcript`` is append-only (one row per entry ever appended, never rewritten);
``working`` is the working view (``history/get view=raw``) with each entry's token count, so a
restart re-tokenizes nothing. A working row that is the very entry appended refers to its
transcript row instead of repeating the JSON; entries that density edits or compression made
are stored in full. ``sessions`` holds the rest of a session's state, and the counts that
``history/list`` shows without loading a session.

A working row's ``pos`` is the entry's key in the history (``journal.py``): it increases along
the history, and an entry keeps it when entries before it go. So a commit writes the rows of
the entries that changed (appended, edited, removed), never the rest of the view; only a
history replaced wholesale (compression, clear) rewrites it. Databases written when ``pos``
was the index (schema 1) read the same way: an index is a key too.

All database work runs on one dedicated thread, in order: the event loop never waits on the
disk, and requests for different sessions go on while one commits.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ..core.state import SessionState
from ..core.stored import Blob

T = TypeVar("T")

DB_NAME = "hdcontext.sqlite3"
TRANSCRIPTS_DIR = "transcripts"
SCHEMA_VERSION = 2
"""2: ``working.pos`` is the entry's key, not its index (the tables are those of 1, and a
database of 1 is one of 2 as it is; a daemon that knows only 1 would write positions over
keys, so it refuses a database of 2)."""
CACHE_KIB = 256

_SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created INTEGER NOT NULL,
    updated INTEGER NOT NULL,
    model TEXT,
    state TEXT NOT NULL,
    entry_count INTEGER NOT NULL,
    total_tokens INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS transcript (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS working (
    session_id TEXT NOT NULL,
    pos INTEGER NOT NULL,
    seq INTEGER,
    entry TEXT,
    tokens INTEGER NOT NULL,
    PRIMARY KEY (session_id, pos)
);
"""


class StoreError(RuntimeError):
    """The storage directory cannot be used (permissions, a newer schema, a full disk)."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def _text(blob: Blob) -> str:
    """An entry's stored JSON as the TEXT column holds it (``content.entry_json`` writes
    UTF-8; a lone surrogate it writes escaped, so every blob decodes)."""
    return blob.decode("utf-8")


# -- what goes in and comes out ---------------------------------------------------------------


@dataclass(frozen=True)
class WorkingRow:
    """One entry of the working view: a transcript reference, or the entry itself."""

    pos: int
    """The entry's key: rows are read back in its order."""
    seq: int | None
    entry: Blob | None
    tokens: int


@dataclass(frozen=True)
class WorkingChange:
    """What one commit does to the working rows of a session."""

    rewrite: bool = False
    """Delete every row first (the history was replaced wholesale)."""
    deleted: Sequence[int] = ()
    """Rows (by ``pos``) of entries that left the working view."""
    rows: Sequence[WorkingRow] = ()
    """Rows written or overwritten."""


@dataclass(frozen=True)
class SaveOp:
    """One request's changes to one session, committed in one transaction."""

    session_id: str
    state: SessionState
    entry_count: int
    total_tokens: int
    new_transcript: Sequence[tuple[int, Blob]] = ()
    working: WorkingChange = WorkingChange()
    model: str | None = None


@dataclass(frozen=True)
class Loaded:
    session_id: str
    state: SessionState
    transcript: list[Blob]
    raw: list[Blob]
    """Entries as stored, unparsed: ``History.restore`` parses (and so validates) them."""
    counts: list[int]
    keys: list[int]
    model: str | None
    created: int


@dataclass(frozen=True)
class Summary:
    """A stored session as ``history/list`` shows it, without loading its entries."""

    session_id: str
    state: SessionState
    entry_count: int
    total_tokens: int
    updated: int


class Store:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.path = directory / DB_NAME
        self.transcripts = directory / TRANSCRIPTS_DIR
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hdcontext-store")
        self._db: sqlite3.Connection | None = None  # used on the store's thread only

    # -- plumbing ---------------------------------------------------------------------------

    async def _run(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self._call, fn)

    def _call(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        db = self._db
        if db is None:
            raise StoreError("the store is closed")
        return fn(db)

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._open)

    def _open(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA busy_timeout=10000")
            # The daemon reads the database only to load a session (once, in order) and
            # writes a few pages a commit; SQLite's default 2 MB page cache would mostly keep
            # pages of a large first append, whose entries the daemon holds in memory anyway.
            db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                db.close()
                raise StoreError(
                    f"{self.path} was written by a newer hdcontext (schema {version}, "
                    f"this daemon knows {SCHEMA_VERSION})"
                )
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
        except (OSError, sqlite3.Error) as exc:
            raise StoreError(f"cannot use the storage directory {self.directory}: {exc}") from exc
        self._db = db

    async def close(self) -> None:
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # -- sessions -----------------------------------------------------------------------------

    async def exists(self, session_id: str) -> bool:
        def run(db: sqlite3.Connection) -> bool:
            row = db.execute("SELECT 1 FROM sessions WHERE id=?", (session_id,)).fetchone()
            return row is not None

        return await self._run(run)

    async def create(self, session_id: str, state: SessionState, model: str | None) -> None:
        def run(db: sqlite3.Connection) -> None:
            now = now_ms()
            with _transaction(db):
                db.execute(
                    "INSERT INTO sessions (id, created, updated, model, state, entry_count,"
                    " total_tokens) VALUES (?, ?, ?, ?, ?, 0, 0)",
                    (session_id, now, now, model, state.to_json()),
                )

        await self._run(run)

    async def save(self, op: SaveOp) -> None:
        """Commit one request's changes; when this returns, they survive a SIGKILL."""

        def run(db: sqlite3.Connection) -> None:
            transcript_rows = [(op.session_id, seq, _text(e)) for seq, e in op.new_transcript]
            working = op.working
            working_rows = [
                (
                    op.session_id,
                    row.pos,
                    row.seq,
                    _text(row.entry) if row.entry is not None else None,
                    row.tokens,
                )
                for row in working.rows
            ]
            with _transaction(db):
                if transcript_rows:
                    db.executemany(
                        "INSERT INTO transcript (session_id, seq, entry) VALUES (?, ?, ?)",
                        transcript_rows,
                    )
                if working.rewrite:
                    db.execute("DELETE FROM working WHERE session_id=?", (op.session_id,))
                if working.deleted:
                    db.executemany(
                        "DELETE FROM working WHERE session_id=? AND pos=?",
                        [(op.session_id, pos) for pos in working.deleted],
                    )
                if working_rows:
                    db.executemany(
                        "INSERT OR REPLACE INTO working (session_id, pos, seq, entry, tokens)"
                        " VALUES (?, ?, ?, ?, ?)",
                        working_rows,
                    )
                cur = db.execute(
                    "UPDATE sessions SET updated=?, state=?, entry_count=?, total_tokens=?,"
                    " model=COALESCE(?, model) WHERE id=?",
                    (
                        now_ms(),
                        op.state.to_json(),
                        op.entry_count,
                        op.total_tokens,
                        op.model,
                        op.session_id,
                    ),
                )
                if cur.rowcount != 1:
                    raise StoreError(f"session {op.session_id!r} is not in the store")

        await self._run(run)

    async def load(self, session_id: str) -> Loaded | None:
        def run(db: sqlite3.Connection) -> Loaded | None:
            row = db.execute(
                "SELECT state, model, created FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
            if row is None:
                return None
            transcript = [
                str(text).encode("utf-8")
                for (text,) in db.execute(
                    "SELECT entry FROM transcript WHERE session_id=? ORDER BY seq", (session_id,)
                )
            ]
            raw: list[Blob] = []
            counts: list[int] = []
            keys: list[int] = []
            for pos, seq, text, tokens in db.execute(
                "SELECT pos, seq, entry, tokens FROM working WHERE session_id=? ORDER BY pos",
                (session_id,),
            ):
                # A reference keeps the very object of the transcript, as after an append.
                raw.append(transcript[seq] if seq is not None else str(text).encode("utf-8"))
                counts.append(int(tokens))
                keys.append(int(pos))
            return Loaded(
                session_id=session_id,
                state=SessionState.from_json(row[0]),
                transcript=transcript,
                raw=raw,
                counts=counts,
                keys=keys,
                model=row[1],
                created=int(row[2]),
            )

        return await self._run(run)

    async def summaries(self) -> list[Summary]:
        """Every stored session, most recently changed first."""

        def run(db: sqlite3.Connection) -> list[Summary]:
            return [
                Summary(
                    session_id=sid,
                    state=SessionState.from_json(state),
                    entry_count=int(count),
                    total_tokens=int(tokens),
                    updated=int(updated),
                )
                for sid, state, count, tokens, updated in db.execute(
                    "SELECT id, state, entry_count, total_tokens, updated FROM sessions"
                    " ORDER BY updated DESC, id"
                )
            ]

        return await self._run(run)

    async def delete(self, session_id: str) -> bool:
        def run(db: sqlite3.Connection) -> bool:
            with _transaction(db):
                db.execute("DELETE FROM transcript WHERE session_id=?", (session_id,))
                db.execute("DELETE FROM working WHERE session_id=?", (session_id,))
                cur = db.execute("DELETE FROM sessions WHERE id=?", (session_id,))
                return cur.rowcount > 0

        found = await self._run(run)
        path = self.transcript_path(session_id)
        await asyncio.to_thread(path.unlink, True)
        return found

    # -- transcript export --------------------------------------------------------------------

    def transcript_path(self, session_id: str) -> Path:
        """A file name that any session id maps to safely and uniquely."""
        readable = re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:48].strip("._") or "session"
        digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:16]
        return self.transcripts / f"{readable}-{digest}.jsonl"

    async def export_transcript(self, session_id: str, entries: Sequence[Blob]) -> str:
        """Write the whole transcript as JSONL (one IContent a line) and return its path.

        The LLM strategies put this path into the summary (the transcript pointer), so the
        agent can look up what the summary left out. Written whole and renamed into place:
        a reader never sees half a file.
        """
        path = self.transcript_path(session_id)
        snapshot = list(entries)

        def write() -> None:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            with tmp.open("w", encoding="utf-8") as fh:
                for entry in snapshot:
                    fh.write(_text(entry))
                    fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)

        await asyncio.to_thread(write)
        return str(path)


class _transaction:
    """BEGIN IMMEDIATE … COMMIT, or ROLLBACK on any error (autocommit connection)."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> None:
        self.db.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.db.execute("COMMIT")
        else:
            self.db.execute("ROLLBACK")
