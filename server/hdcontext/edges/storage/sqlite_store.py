"""The SQLite store: every session in one SQLite database (WAL) under the storage folder.

Why SQLite: an append must be on disk before its reply, and a daemon killed with SIGKILL at any
moment must come back with every acknowledged entry. One transaction per request gives exactly
that (``synchronous=FULL``: a commit has reached the disk, not only the page cache), and WAL
keeps readers from blocking the writer. The store is the only module that knows SQL.

The proxy's store is not ``durable`` (``synchronous=NORMAL``): a commit is written to the WAL
but not flushed to the disk, so it survives the proxy killed (SIGKILL: the system has the
pages) but not the machine losing power, which may take the last commits back (never leaving
the file damaged). An agent sends its whole conversation with every request, so what a power
loss takes the next request brings again; and the two flushes of a request's two commits were
2.5-3 ms of its added latency. An editor's daemon keeps ``FULL``: its client sends an entry once.

Layout: ``transcript`` is append-only (one row per entry ever appended, never rewritten);
``working`` is the working view (``history/get view=raw``) with each entry's token count, so a
restart re-tokenizes nothing. A working row that is the very entry appended refers to its
transcript row instead of repeating the JSON; entries that density edits or compression made
are stored in full. ``sessions`` holds the rest of a session's state, and the counts that
``history/list`` shows without loading a session.

A working row's ``pos`` is the entry's key in the history (``history/journal.py``): it increases
along the history, and an entry keeps it when entries before it go. So a commit writes the rows of
the entries that changed (appended, edited, removed), never the rest of the view; only a
history replaced wholesale (compression, clear) rewrites it. Databases written when ``pos``
was the index (schema 1) read the same way: an index is a key too.

All database work runs on one dedicated thread, in order: the event loop never waits on the
disk, and requests for different sessions go on while one commits.

The folder is the user's alone: created 0700, its files 0600 (an older, wider folder is
narrowed when opened), and one daemon uses it at a time (``storage_lock.py``). Nothing in it is
followed as a symlink: a link where the database, its journals, the lock or the transcripts
belong is refused, so that nobody with a way to plant one can make the daemon write elsewhere.

Deleting a session deletes it from the file, not only from the tables: every table's rows of
it go (every table with a ``session_id`` column, found in the schema, so a table added later is
covered), SQLite overwrites what it frees with zeros (``secure_delete``), the write-ahead log is
checkpointed and truncated so that no older copy of a page stays in it, and its exported
transcript goes. A database written before ``secure_delete`` was on (schema 2 and earlier) may
hold freed content still: its first deletion rewrites the whole file once (``VACUUM``).
``ReadOnly`` reads the database without writing or locking it (``hdcontext sessions list``
while a daemon holds the folder).

A session whose transcript lost a row (a damaged file, a hand edit) still opens: its
transcript is renumbered without the hole, the working entries that were that row are dropped,
with any tool call or response that would be left without its partner, and the store says
what was lost through ``warn`` (the client's ``window/logMessage``).
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

from ...core.history.stored import Blob
from ...core.session.state import SessionState
from . import storage_lock
from .call_rows import write_calls
from .folder import (
    DB_NAME,
    PRIVATE_FILE,
    TRANSCRIPTS_DIR,
    folder_problem,
    prepare_folder,
    transcript_file,
    write_transcript,
)
from .loading import assemble, loaded_of, repair
from .records import (
    OWNERS_TABLE,
    PASSED_TABLE,
    RESUME_TABLE,
    SESSION_COLUMN,
    Loaded,
    OwnerRow,
    PassedRow,
    ResumeRow,
    SaveOp,
    StatsRows,
    StoreError,
    Summary,
    now_ms,
)
from .recovery import Damage
from .sqlite_reader import select_calls, select_overrides
from .sqlite_schema import SCHEMA_VERSION, SCRUBBED, migrate
from .storage_lock import StorageLocked as StorageLockedError

T = TypeVar("T")

CHECKPOINT_TRIES = 20
CACHE_KIB = 256


def _text(blob: Blob) -> str:
    """An entry's stored JSON as the TEXT column holds it (``content.entry_json`` writes
    UTF-8; a lone surrogate it writes escaped, so every blob decodes)."""
    return blob.decode("utf-8")


class SqliteStore:
    def __init__(self, directory: Path, *, durable: bool = True) -> None:
        self.directory = directory
        self.durable = durable
        """Every commit flushed to the disk before it returns (see the module's docstring)."""
        self.path = directory / DB_NAME
        self.transcripts = directory / TRANSCRIPTS_DIR
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hdcontext-store")
        self._db: sqlite3.Connection | None = None  # used on the store's thread only
        self._locked = False
        self._closed = False
        self.warn: Callable[[str], None] = lambda message: None
        """Where the store tells the client what it had to do (a damaged session repaired)."""
        self.shared = False
        """One process has the folder (its lock): no other changes a session behind it."""

    @property
    def shown(self) -> str:
        return str(self.directory)

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
        if self._db is not None:
            return
        try:
            prepare_folder(self.directory)
            storage_lock.acquire(self.directory)
        except StorageLockedError as exc:
            raise StoreError(str(exc)) from None
        except (OSError, ValueError) as exc:
            raise StoreError(folder_problem(self.directory, exc)) from None
        self._locked = True
        try:
            self._db = self._connect()
        except BaseException:
            self._locked = False
            storage_lock.release(self.directory)
            raise

    def _connect(self) -> sqlite3.Connection:
        try:
            # Made here, 0600 and not through a link; SQLite gives its journals the same mode.
            os.close(
                os.open(
                    self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, PRIVATE_FILE
                )
            )
            db = sqlite3.connect(self.path, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={'FULL' if self.durable else 'NORMAL'}")
            db.execute("PRAGMA busy_timeout=10000")
            # The daemon reads the database only to load a session (once, in order) and
            # writes a few pages a commit; SQLite's default 2 MB page cache would mostly keep
            # pages of a large first append, whose entries the daemon holds in memory anyway.
            db.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
            # What a deletion frees is overwritten with zeros, not left in the file.
            db.execute("PRAGMA secure_delete=ON")
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
            if version > SCHEMA_VERSION:
                db.close()
                raise StoreError(
                    f"{self.path} was written by a newer hdcontext (schema {version}, "
                    f"this daemon knows {SCHEMA_VERSION})"
                )
            migrate(db, version)
        except OSError as exc:
            raise StoreError(folder_problem(self.directory, exc)) from None
        except sqlite3.Error as exc:
            raise StoreError(f"cannot use the storage folder {self.directory}: {exc}") from None
        return db

    async def close(self) -> None:
        """Close the database and give back the folder's lock; once (later calls do nothing)."""
        if self._closed:
            return
        self._closed = True
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(self._executor, self._close)
        self._executor.shutdown(wait=True)

    def _close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
        if self._locked:
            self._locked = False
            storage_lock.release(self.directory)

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

    async def lock(self, session_id: str) -> int | None:
        """Nothing to wait for: the folder's lock keeps every other process out (and no
        version to read: ``None``)."""
        return None

    async def unlock(self, session_id: str) -> None:
        """See ``lock``."""

    async def version(self, session_id: str) -> int | None:
        """0 for a stored session (no other process saves it), ``None`` if not stored."""
        return 0 if await self.exists(session_id) else None

    async def save(self, op: SaveOp) -> int:
        """Commit one request's changes; when this returns, they survive a SIGKILL. The
        session's version after it: always 0 here (see ``version``)."""

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
                if op.calls:
                    write_calls(db, op.session_id, op.calls)

        await self._run(run)
        return 0

    async def load(self, session_id: str) -> Loaded | None:
        def run(db: sqlite3.Connection) -> tuple[Loaded | None, Damage | None]:
            row = db.execute(
                "SELECT state, model, created FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
            if row is None:
                return None, None
            read = assemble(
                session_id,
                db.execute(
                    "SELECT seq, entry FROM transcript WHERE session_id=? ORDER BY seq",
                    (session_id,),
                ),
                db.execute(
                    "SELECT pos, seq, entry, tokens FROM working WHERE session_id=? ORDER BY pos",
                    (session_id,),
                ),
            )
            if read.repair is not None:
                with _transaction(db):
                    repair(db, session_id, read.repair.seqs, read.repair.drop)
            loaded = loaded_of(session_id, read, row[0], row[1], int(row[2]))
            return loaded, read.repair.damage if read.repair is not None else None

        loaded, damage = await self._run(run)
        if damage is not None:
            self.warn(damage.message())
        return loaded

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
        """Delete a session from the file and its exported transcript; whether it was there."""
        return bool(await self.delete_sessions([session_id]))

    async def delete_sessions(
        self, session_ids: Sequence[str], idle_before: int | None = None
    ) -> list[str]:
        """Delete sessions, each in a transaction of its own, then scrub the file once (see
        the module's docstring); the ids that were there. With ``idle_before`` (ms), only
        those last changed before it: a session a request changed meanwhile stays."""

        def run(db: sqlite3.Connection) -> tuple[list[str], bool]:
            tables = _session_tables(db)
            deleted = [sid for sid in session_ids if _delete_rows(db, tables, sid, idle_before)]
            return deleted, not deleted or _scrub(db)

        deleted, scrubbed = await self._run(run)
        if not scrubbed:
            self.warn(
                f"hdcontext: the write-ahead log of {self.path} is in use by a reader: what "
                "was deleted leaves it at the next deletion or when the daemon stops"
            )
        for sid in deleted if idle_before is not None else session_ids:
            await asyncio.to_thread(self.transcript_path(sid).unlink, True)
        return deleted

    async def keep_resume(self, rows: Sequence[ResumeRow]) -> int:
        """Keep the proxy's last requests for its next start (``RESUME_TABLE``), each only
        if its session is stored (a row outlives no session: one deleted later, by hand or
        by the retention, takes its row with it); how many were kept."""

        def run(db: sqlite3.Connection) -> int:
            kept = 0
            with _transaction(db):
                for row in rows:
                    kept += db.execute(
                        f"INSERT OR REPLACE INTO {RESUME_TABLE} (session_id, at, api, client, "
                        "body) SELECT ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM sessions "
                        "WHERE id=?)",
                        (row.session_id, row.at, row.api, row.client, row.body, row.session_id),
                    ).rowcount
            return kept

        return await self._run(run)

    async def add_passed(self, rows: Sequence[PassedRow]) -> None:
        """Add ``rows``' requests to those counted already (``PASSED_TABLE``)."""

        def run(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.executemany(
                    f"INSERT INTO {PASSED_TABLE} (day, api, outcome, reason, requests, last) "
                    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (day, api, outcome, reason) DO "
                    "UPDATE SET requests=requests+excluded.requests, "
                    "last=max(last, excluded.last)",
                    [(r.day, r.api, r.outcome, r.reason, r.requests, r.last) for r in rows],
                )

        await self._run(run)

    async def forget_passed(self, before: int) -> None:
        """Delete the counts of requests none of which came at ``before`` (ms) or later."""

        def run(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.execute(f"DELETE FROM {PASSED_TABLE} WHERE last<?", (before,))

        await self._run(run)

    async def put_owners(self, rows: Sequence[OwnerRow]) -> None:
        """Write each owner's record and when it was seen (``OWNERS_TABLE``), over any before."""

        def run(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.executemany(
                    f"INSERT INTO {OWNERS_TABLE} (tag, prefix, record, seen) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (tag) DO UPDATE SET prefix=excluded.prefix, "
                    "record=excluded.record, seen=max(seen, excluded.seen)",
                    [(r.tag, r.prefix, r.record, r.seen) for r in rows],
                )

        await self._run(run)

    async def forget_owners(self, before: int) -> None:
        """Delete the owners not seen at ``before`` (ms) or later that have no session left."""

        def run(db: sqlite3.Connection) -> None:
            with _transaction(db):
                db.execute(
                    f"DELETE FROM {OWNERS_TABLE} WHERE seen<? AND NOT EXISTS (SELECT 1 FROM "
                    "sessions WHERE substr(sessions.id, 1, length(prefix))=prefix)",
                    (before,),
                )

        await self._run(run)

    async def take_resume(self, since: int) -> list[ResumeRow]:
        """The requests ``keep_resume`` kept that were made at ``since`` (ms) or later, most
        recent first; every row is deleted (each is read once, by the next start)."""

        def run(db: sqlite3.Connection) -> list[ResumeRow]:
            with _transaction(db):
                found = db.execute(
                    f"SELECT session_id, at, api, client, body FROM {RESUME_TABLE} "
                    "WHERE at>=? ORDER BY at DESC, session_id",
                    (since,),
                ).fetchall()
                db.execute(f"DELETE FROM {RESUME_TABLE}")
            return [
                ResumeRow(str(sid), int(at), str(api), str(client), bytes(body))
                for sid, at, api, client, body in found
            ]

        return await self._run(run)

    async def idle(self, before: int) -> list[str]:
        """The sessions last changed before ``before`` (ms), least recently changed first."""

        def run(db: sqlite3.Connection) -> list[str]:
            rows = db.execute(
                "SELECT id FROM sessions WHERE updated<? ORDER BY updated, id", (before,)
            )
            return [str(sid) for (sid,) in rows]

        return await self._run(run)

    # -- transcript export --------------------------------------------------------------------

    async def calls_for_stats(self, session_ids: Sequence[str] | None) -> StatsRows:
        """What ``hdcontext stats`` reads of the folder, read through this store's own
        connection (a daemon holds the folder's lock, and reads what it wrote): the calls of
        these sessions (all: ``None``), every session's own settings, every stored id."""

        def run(db: sqlite3.Connection) -> StatsRows:
            try:
                stored = [str(sid) for (sid,) in db.execute("SELECT id FROM sessions ORDER BY id")]
            except sqlite3.Error as exc:
                raise StoreError(f"cannot read {self.path}: {exc}") from None
            return StatsRows(
                calls=select_calls(db, self.path, session_ids),
                overrides=select_overrides(db, self.path),
                stored=stored,
            )

        return await self._run(run)

    def transcript_path(self, session_id: str) -> Path:
        """A file name that any session id maps to safely and uniquely."""
        return transcript_file(self.transcripts, session_id)

    async def export_transcript(self, session_id: str, entries: Sequence[Blob]) -> str | None:
        """Write the whole transcript as JSONL (one IContent a line) and return its path.

        The LLM strategies put this path into the summary (the transcript pointer), so the
        agent can look up what the summary left out. Written whole and renamed into place:
        a reader never sees half a file. Made 0600, through no link: if the transcripts
        folder has become a link, nothing is written, the client is told, and the summary
        goes without its pointer (``None``).
        """
        path = self.transcript_path(session_id)
        if await asyncio.to_thread(write_transcript, path, list(entries)):
            return str(path)
        self.warn(
            f"hdcontext: {path.parent} is not a folder (a symbolic link?): the daemon follows "
            "no link in its storage folder, so the transcript was not exported"
        )
        return None


def _scrub(db: sqlite3.Connection) -> bool:
    """Leave nothing deleted in the file: rewrite it once if it may hold content freed before
    ``secure_delete`` (an older database), then copy the write-ahead log into it and truncate
    the log, whose older frames still hold the pages as they were. False when a reader
    (``hdcontext sessions list``) kept the log from being truncated, try after try: the next
    deletion, or the daemon's last checkpoint when it closes, does it."""
    if _meta(db, SCRUBBED) != "1":
        db.execute("VACUUM")
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, '1')", (SCRUBBED,))
    for _ in range(CHECKPOINT_TRIES):
        busy, _, _ = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if not busy:
            return True
        time.sleep(0.05)
    return False


def _meta(db: sqlite3.Connection, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
    return None if row is None else str(row[0])


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _session_tables(db: sqlite3.Connection) -> list[str]:
    """Every table that holds rows of sessions (a ``session_id`` column), read from the
    schema: a table added later (per-call figures, say) goes with its session unlisted."""
    names = [
        str(name)
        for (name,) in db.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        )
    ]
    return [
        name
        for name in names
        if any(
            column[1] == SESSION_COLUMN
            for column in db.execute(f"PRAGMA table_info({_quoted(name)})")
        )
    ]


def _delete_rows(
    db: sqlite3.Connection, tables: Sequence[str], session_id: str, idle_before: int | None
) -> bool:
    """One session's rows out of every table, in one transaction; whether it was there (with
    ``idle_before``: there and idle, else nothing is deleted)."""
    with _transaction(db):
        if idle_before is not None:
            idle = db.execute(
                "SELECT 1 FROM sessions WHERE id=? AND updated<?", (session_id, idle_before)
            ).fetchone()
            if idle is None:
                return False
        found = db.execute("DELETE FROM sessions WHERE id=?", (session_id,)).rowcount > 0
        for table in tables:
            rows = db.execute(
                f"DELETE FROM {_quoted(table)} WHERE {SESSION_COLUMN}=?", (session_id,)
            ).rowcount
            found = found or rows > 0
        return found


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
