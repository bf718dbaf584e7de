"""Persistence: every session in one SQLite database (WAL) under the storage directory.

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
import contextlib
import hashlib
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from ...core.cache.ledger import Charge
from ...core.history.stored import Blob
from ...core.session.state import SessionState
from ...core.stats.calls import (
    BilledUsage,
    CallEvent,
    CallMade,
    CallRefused,
    CallRow,
    Kind,
    UsageReported,
)
from . import storage_lock
from .recovery import Damage, unpaired
from .storage_lock import StorageLocked as StorageLockedError

T = TypeVar("T")

DB_NAME = "hdcontext.sqlite3"
TRANSCRIPTS_DIR = "transcripts"
TOKEN_NAME = "tcp-token"
"""Where ``serve --tcp`` writes the token it made up (tcp.py)."""
NOTICE_NAME = "storage-notice-shown"
"""Made when ``hdcontext proxy`` first said that it keeps conversations here (``mark_once``)."""
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
PRIVATE_UMASK = 0o077
"""Everything the daemon creates is the user's alone (the store narrows its own files too)."""
_DB_FILES = (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{DB_NAME}-journal")
_OWN_NAMES = (*_DB_FILES, TRANSCRIPTS_DIR, storage_lock.LOCK_NAME, TOKEN_NAME, NOTICE_NAME)
SCHEMA_VERSION = 3
"""2: ``working.pos`` is the entry's key, not its index (the tables are those of 1, and a
database of 1 is one of 2 as it is; a daemon that knows only 1 would write positions over
keys, so it refuses a database of 2). 3: the ``meta`` table, and every deletion scrubbed
(``secure_delete``): a daemon that knows only 2 would delete without it, so it refuses a
database of 3; a database of 2 becomes one of 3 as it is, marked unscrubbed (``SCRUBBED``)."""
SCRUBBED = "scrubbed"
"""``meta`` key: "1" once no deleted content can be left in the file's free pages (a new
database, or an older one after its first ``VACUUM``)."""
CHECKPOINT_TRIES = 20
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
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS calls (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    at INTEGER NOT NULL,
    kind TEXT NOT NULL,
    model TEXT,
    masked INTEGER,
    sent INTEGER,
    upstream INTEGER,
    est_read INTEGER,
    est_write INTEGER,
    est_write_1h INTEGER,
    est_plain INTEGER,
    off_read INTEGER,
    off_write INTEGER,
    off_write_1h INTEGER,
    off_plain INTEGER,
    billed_input INTEGER,
    billed_read INTEGER,
    billed_write INTEGER,
    billed_write_1h INTEGER,
    billed_output INTEGER,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS calls_at ON calls (at);
CREATE TABLE IF NOT EXISTS resume (
    session_id TEXT PRIMARY KEY,
    at INTEGER NOT NULL,
    api TEXT NOT NULL,
    client TEXT NOT NULL,
    body BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS passed (
    day TEXT NOT NULL,
    api TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL,
    requests INTEGER NOT NULL,
    last INTEGER NOT NULL,
    PRIMARY KEY (day, api, outcome, reason)
);
"""
CALLS_TABLE = "calls"
"""One row per model call, refresh call and retrieve of a session (``core/stats/calls.py``), for
``hdcontext stats``: counts and the model's name, never content. ``kind`` is ``model``,
``refresh`` or ``retrieve``; ``sent`` is what the agent sent (the history without hdcontext's
edits), ``upstream`` what went to the model, both in the daemon's count of the messages;
``est_*`` the daemon's charge by kind with hdcontext, ``off_*`` without it; ``billed_*`` what
the provider billed, once the client reported it (``history/usage``; ``billed_write_1h`` only
when the client knew the split). Added in schema 3 without a version change: a daemon that
does not know the table leaves it alone, and a database it wrote simply has no rows there."""
RESUME_TABLE = "resume"
"""The proxy's last request of each conversation it served in the hour before it stopped
(``Store.keep_resume``), read and deleted by its next start (``Store.take_resume``): so that
the first request after a restart is read as a turn, not as a conversation never seen. A
row goes with its session like every other (``SESSION_COLUMN``); the agent's key is never in
it (keys travel in headers). Added in schema 3 without a version change, like ``calls``."""
PASSED_TABLE = "passed"
"""The proxy's requests that hdcontext did not carry, counted by UTC day, API, outcome (``as
sent``: to the model as the agent sent them; ``not forwarded``: answered by the proxy itself;
``passed through``: a path that is no model call) and reason (kinds and indices, never
content), so that ``hdcontext stats`` shows an agent the proxy cannot carry from its first
day. Belongs to no session; rows older than the retention go with the idle sessions
(``Store.forget_passed``). Added in schema 3 without a version change, like ``calls``."""
SESSION_COLUMN = "session_id"
"""A table with this column holds rows of a session: they are deleted with it."""


class StoreError(RuntimeError):
    """The storage directory cannot be used (permissions, a newer schema, a full disk, another
    daemon holding it)."""


def prepare_folder(folder: Path) -> None:
    """Make ``folder`` a private storage folder: created 0700, or narrowed to 0700 (its files
    to 0600) when it exists; StoreError for a link inside it, OSError or ValueError for a
    folder that cannot be made."""
    if "\x00" in str(folder):
        raise ValueError("the path contains a NUL character")
    folder.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    info = folder.stat()
    if not stat.S_ISDIR(info.st_mode):  # pragma: no cover - mkdir refuses a file already
        raise NotADirectoryError(20, "Not a directory")
    _make_private(folder, info, PRIVATE_DIR)
    for name in _OWN_NAMES:
        path = folder / name
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise StoreError(
                f"{path} is a symbolic link: the daemon follows none in its storage folder"
            )
        _make_private(path, info, PRIVATE_DIR if stat.S_ISDIR(info.st_mode) else PRIVATE_FILE)
    transcripts = folder / TRANSCRIPTS_DIR
    if transcripts.is_dir():
        with os.scandir(transcripts) as found:
            for item in found:
                if item.is_file(follow_symlinks=False):
                    _make_private(Path(item.path), item.stat(follow_symlinks=False), PRIVATE_FILE)


def mark_once(folder: Path, name: str) -> bool:
    """Make the empty file ``name`` in a prepared storage folder: True if this call made it,
    False if it was there (so what it stands for was done before). Made 0600, through no
    link; a folder where it cannot be made answers True, so a notice is said, not lost."""
    try:
        fd = os.open(
            folder / name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            PRIVATE_FILE,
        )
    except FileExistsError:
        return False
    except OSError:
        return True
    os.close(fd)
    return True


def _make_private(path: Path, info: os.stat_result, mode: int) -> None:
    """Narrow what a former daemon (or a wide umask) left open to others, if it is ours."""
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & ~mode:
        os.chmod(path, stat.S_IMODE(info.st_mode) & mode)


def folder_problem(folder: Path, exc: BaseException) -> str:
    """Why a storage folder cannot be used, as a client should read it (no traceback)."""
    if isinstance(exc, FileExistsError | NotADirectoryError):
        why = "it, or a folder on its path, is a file"
    elif isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror[0].lower() + exc.strerror[1:]
    else:
        why = str(exc)
    return f"cannot use the storage folder {folder}: {why}"


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
    calls: Sequence[CallEvent] = ()
    """The session's call events since its last save (``Session.take_calls``)."""


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


@dataclass(frozen=True)
class ResumeRow:
    """A conversation's last request through the proxy, kept across a restart."""

    session_id: str
    at: int
    """When it was made (ms)."""
    api: str
    client: str
    body: bytes


@dataclass(frozen=True)
class PassedRow:
    """Requests of one day, API, outcome and reason (``PASSED_TABLE``)."""

    day: str
    """UTC, ``YYYY-MM-DD``."""
    api: str
    outcome: str
    reason: str
    requests: int
    last: int
    """When the latest of them came (ms)."""


@dataclass(frozen=True)
class StatsRows:
    """The figures' sources in a storage folder: counts and ids, never content."""

    calls: list[CallRow]
    overrides: dict[str, dict[str, object]]
    """Each session's own settings, by id (its ``cache.prices`` prices its calls)."""
    stored: list[str]
    """Every stored session's id."""


class Store:
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
            _migrate(db, version)
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
                if op.calls:
                    _write_calls(db, op.session_id, op.calls)

        await self._run(run)

    async def load(self, session_id: str) -> Loaded | None:
        def run(db: sqlite3.Connection) -> tuple[Loaded | None, Damage | None]:
            row = db.execute(
                "SELECT state, model, created FROM sessions WHERE id=?", (session_id,)
            ).fetchone()
            if row is None:
                return None, None
            transcript: list[Blob] = []
            seqs: list[int] = []
            for seq, text in db.execute(
                "SELECT seq, entry FROM transcript WHERE session_id=? ORDER BY seq", (session_id,)
            ):
                seqs.append(int(seq))
                transcript.append(str(text).encode("utf-8"))
            holes = bool(seqs) and seqs[-1] != len(seqs) - 1
            index = {seq: n for n, seq in enumerate(seqs)} if holes else None
            raw: list[Blob] = []
            counts: list[int] = []
            keys: list[int] = []
            lost: list[int] = []
            referred = -1
            for pos, seq, text, tokens in db.execute(
                "SELECT pos, seq, entry, tokens FROM working WHERE session_id=? ORDER BY pos",
                (session_id,),
            ):
                if seq is not None:
                    referred = max(referred, int(seq))
                    n = int(seq) if index is None else index.get(int(seq), -1)
                    if not 0 <= n < len(transcript):
                        lost.append(int(pos))
                        continue
                    # A reference keeps the very object of the transcript, as after an append.
                    raw.append(transcript[n])
                else:
                    raw.append(str(text).encode("utf-8"))
                counts.append(int(tokens))
                keys.append(int(pos))
            damage: Damage | None = None
            if holes or lost:
                missing = max(seqs[-1] if seqs else -1, referred) + 1 - len(seqs)
                drop = sorted(unpaired(raw))
                _repair(db, session_id, seqs, [keys[i] for i in drop] + lost)
                for i in reversed(drop):
                    del raw[i], counts[i], keys[i]
                damage = Damage(session_id, missing, len(lost), len(drop))
            loaded = Loaded(
                session_id=session_id,
                state=SessionState.from_json(row[0]),
                transcript=transcript,
                raw=raw,
                counts=counts,
                keys=keys,
                model=row[1],
                created=int(row[2]),
            )
            return loaded, damage

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
                calls=_select_calls(db, self.path, session_ids),
                overrides=_select_overrides(db, self.path),
                stored=stored,
            )

        return await self._run(run)

    def transcript_path(self, session_id: str) -> Path:
        """A file name that any session id maps to safely and uniquely."""
        return self.transcript_file(self.transcripts, session_id)

    @staticmethod
    def transcript_file(transcripts: Path, session_id: str) -> Path:
        """``transcript_path`` in the folder ``transcripts``."""
        readable = re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:48].strip("._") or "session"
        digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:16]
        return transcripts / f"{readable}-{digest}.jsonl"

    async def export_transcript(self, session_id: str, entries: Sequence[Blob]) -> str | None:
        """Write the whole transcript as JSONL (one IContent a line) and return its path.

        The LLM strategies put this path into the summary (the transcript pointer), so the
        agent can look up what the summary left out. Written whole and renamed into place:
        a reader never sees half a file. Made 0600, through no link: if the transcripts
        folder has become a link, nothing is written, the client is told, and the summary
        goes without its pointer (``None``).
        """
        path = self.transcript_path(session_id)
        snapshot = list(entries)

        def write() -> bool:
            folder = path.parent
            with contextlib.suppress(FileExistsError):
                folder.mkdir(mode=PRIVATE_DIR)
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return False
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            fd = os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600
            )
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                for entry in snapshot:
                    fh.write(_text(entry))
                    fh.write("\n")
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
            return True

        if await asyncio.to_thread(write):
            return str(path)
        self.warn(
            f"hdcontext: {path.parent} is not a folder (a symbolic link?): the daemon follows "
            "no link in its storage folder, so the transcript was not exported"
        )
        return None


def _migrate(db: sqlite3.Connection, version: int) -> None:
    """Bring a database of ``version`` (0: new) to ``SCHEMA_VERSION``: tables only added. A
    database that had sessions before schema 3 is marked unscrubbed: its free pages may hold
    what older daemons deleted."""
    had_tables = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='sessions'"
    ).fetchone()
    db.executescript(_SCHEMA)
    if version < 3:
        scrubbed = "0" if had_tables is not None else "1"
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (SCRUBBED, scrubbed))
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")


_CALL_COLUMNS = (
    "session_id, seq, at, kind, model, masked, sent, upstream, est_read, est_write, "
    "est_write_1h, est_plain, off_read, off_write, off_write_1h, off_plain, billed_input, "
    "billed_read, billed_write, billed_write_1h, billed_output"
)
_KINDS: tuple[Kind, ...] = ("model", "refresh", "retrieve")


def _charge_columns(charge: Charge | None) -> tuple[int | None, ...]:
    if charge is None:
        return (None, None, None, None)
    return (charge.read, charge.write, charge.write_long, charge.plain)


def _billed_columns(billed: BilledUsage | None) -> tuple[int | None, ...]:
    if billed is None:
        return (None, None, None, None, None)
    return (billed.input, billed.read, billed.write, billed.write_1h, billed.output)


def _write_calls(db: sqlite3.Connection, session_id: str, events: Sequence[CallEvent]) -> None:
    """A session's call events as rows of ``calls`` (inside the save's transaction): a call
    is a new row, a retrieve too; a usage fills in the latest call's billed figures when it
    belongs to it and that row has none yet, else is a row of its own (a call the daemon did
    not see, whose estimate is unknown); a refused call takes the latest call's row away when
    no usage filled it in."""
    (last,) = db.execute(
        "SELECT COALESCE(MAX(seq), -1) FROM calls WHERE session_id=?", (session_id,)
    ).fetchone()
    seq = int(last)
    insert = f"INSERT INTO calls ({_CALL_COLUMNS}) VALUES ({', '.join('?' * 21)})"
    for event in events:
        if isinstance(event, CallRefused):
            db.execute(
                "DELETE FROM calls WHERE session_id=? AND seq=("
                "SELECT MAX(seq) FROM calls WHERE session_id=? AND kind!='retrieve')"
                " AND billed_input IS NULL AND est_read IS NOT NULL",
                (session_id, session_id),
            )
            continue
        if isinstance(event, UsageReported):
            if event.attached:
                done = db.execute(
                    "UPDATE calls SET billed_input=?, billed_read=?, billed_write=?,"
                    " billed_write_1h=?, billed_output=? WHERE session_id=? AND seq=("
                    "SELECT MAX(seq) FROM calls WHERE session_id=? AND kind!='retrieve')"
                    " AND billed_input IS NULL AND est_read IS NOT NULL",
                    (*_billed_columns(event.billed), session_id, session_id),
                ).rowcount
                if done:
                    continue
            seq += 1
            unseen = (session_id, seq, event.at, "model", event.model, *(None,) * 11)
            db.execute(insert, unseen + _billed_columns(event.billed))
            continue
        seq += 1
        if isinstance(event, CallMade):
            bill = event.bill
            row = (
                session_id,
                seq,
                event.at,
                "refresh" if event.refresh else "model",
                event.model,
                event.masked,
                bill.off.total,
                bill.charge.total,
                *_charge_columns(bill.charge),
                *_charge_columns(bill.off),
                *_billed_columns(None),
            )
        else:
            row = (session_id, seq, event.at, "retrieve", *(None,) * 17)
        db.execute(insert, row)


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


def _repair(
    db: sqlite3.Connection, session_id: str, seqs: Sequence[int], drop: Sequence[int]
) -> None:
    """Close the holes of a transcript (rows keep their order) and point the working rows at
    the new numbers; delete the working rows ``drop`` (by ``pos``). One transaction."""
    with _transaction(db):
        for new, old in enumerate(seqs):  # ascending: a new number never meets a row still there
            if new != old:
                db.execute(
                    "UPDATE transcript SET seq=? WHERE session_id=? AND seq=?",
                    (new, session_id, old),
                )
                db.execute(
                    "UPDATE working SET seq=? WHERE session_id=? AND seq=?",
                    (new, session_id, old),
                )
        db.executemany(
            "DELETE FROM working WHERE session_id=? AND pos=?", [(session_id, pos) for pos in drop]
        )


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


# -- reading without the daemon -------------------------------------------------------------


@dataclass(frozen=True)
class StoredSession:
    """A stored session as ``hdcontext sessions`` shows it: figures, never content."""

    session_id: str
    created: int
    updated: int
    model: str | None
    entry_count: int
    """Entries of the working view (what the model is sent)."""
    total_tokens: int
    transcript_entries: int
    """Entries ever appended (the transcript keeps them all)."""
    saved_tokens: int
    calls: int
    """Model calls whose usage was reported (``history/usage``)."""


class NoStorage(StoreError):
    """The folder named holds no storage (it does not exist, or is not a folder)."""


class ReadOnly:
    """The database of a storage folder, read without writing it or taking its lock: SQLite's
    read-only mode, beside a daemon that may be writing (WAL lets a reader see the last commit
    without blocking the writer). For ``hdcontext sessions list`` and ``show``.

    A folder without a database holds no sessions; a path that is not a folder is
    ``NoStorage``; a database that cannot be read is a ``StoreError`` (one line, why)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / DB_NAME
        self.transcripts = folder / TRANSCRIPTS_DIR
        self._db: sqlite3.Connection | None = None
        if not folder.is_dir():
            raise NoStorage(f"no storage folder at {folder}")
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise StoreError(folder_problem(folder, exc)) from None
        if stat.S_ISLNK(info.st_mode):
            raise StoreError(f"{self.path} is a symbolic link: hdcontext follows none there")
        try:
            db = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True)
            db.execute("PRAGMA busy_timeout=10000")
            version = int(db.execute("PRAGMA user_version").fetchone()[0])
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        if version > SCHEMA_VERSION:
            db.close()
            raise StoreError(
                f"{self.path} was written by a newer hdcontext (schema {version}, this one "
                f"knows {SCHEMA_VERSION})"
            )
        self._db = db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    def __enter__(self) -> ReadOnly:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def sessions(self) -> list[StoredSession]:
        """Every stored session, most recently changed first."""
        return self._select("")

    def session(self, session_id: str) -> StoredSession | None:
        found = self._select(" WHERE s.id=?", (session_id,))
        return found[0] if found else None

    def transcript(self, session_id: str) -> list[str]:
        """A session's transcript, one entry's IContent JSON each, in order."""
        if self._db is None:
            return []
        rows = self._db.execute(
            "SELECT entry FROM transcript WHERE session_id=? ORDER BY seq", (session_id,)
        )
        return [str(entry) for (entry,) in rows]

    def calls(self, session_id: str | None = None) -> list[CallRow]:
        """The stored calls (``CALLS_TABLE``), of one session or all, by session and order;
        none from a database no daemon that keeps them has opened."""
        if self._db is None:
            return []
        return _select_calls(self._db, self.path, None if session_id is None else [session_id])

    def passed(self, since: int | None = None) -> list[PassedRow]:
        """The requests counted in ``PASSED_TABLE`` whose latest came at ``since`` (ms) or
        later (all: ``None``), by day, most requests first; none from a database no proxy
        that counts them has opened."""
        if self._db is None:
            return []
        try:
            rows = self._db.execute(
                f"SELECT day, api, outcome, reason, requests, last FROM {PASSED_TABLE} "
                "WHERE last>=? ORDER BY day, requests DESC, reason",
                (since or 0,),
            ).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        return [
            PassedRow(str(d), str(a), str(o), str(r), int(n), int(t)) for d, a, o, r, n, t in rows
        ]

    def overrides(self) -> dict[str, dict[str, object]]:
        """Each stored session's own settings (``history/setOverride``), by id: a session's
        ``cache.prices`` prices its calls in ``hdcontext stats``. A state that cannot be read
        counts as none."""
        if self._db is None:
            return {}
        return _select_overrides(self._db, self.path)

    def exported(self, session_id: str) -> Path | None:
        """The session's exported transcript (an LLM summary's pointer), if there is one."""
        path = Store.transcript_file(self.transcripts, session_id)
        return path if path.is_file() else None

    def _select(self, where: str, args: tuple[object, ...] = ()) -> list[StoredSession]:
        if self._db is None:
            return []
        try:
            rows = self._db.execute(
                "SELECT s.id, s.created, s.updated, s.model, s.entry_count, s.total_tokens,"
                " s.state, (SELECT count(*) FROM transcript t WHERE t.session_id=s.id)"
                f" FROM sessions s{where} ORDER BY s.updated DESC, s.id",
                args,
            ).fetchall()
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        out: list[StoredSession] = []
        for sid, created, updated, model, count, tokens, state, appended in rows:
            saved = calls = 0
            with contextlib.suppress(ValueError, KeyError, TypeError):
                parsed = SessionState.from_json(state)
                saved, calls = parsed.saved_tokens, parsed.cache.usage.calls
            out.append(
                StoredSession(
                    session_id=str(sid),
                    created=int(created),
                    updated=int(updated),
                    model=None if model is None else str(model),
                    entry_count=int(count),
                    total_tokens=int(tokens),
                    transcript_entries=int(appended),
                    saved_tokens=int(saved),
                    calls=int(calls),
                )
            )
        return out


_IDS_PER_QUERY = 500


def _select_calls(
    db: sqlite3.Connection, path: Path, session_ids: Sequence[str] | None
) -> list[CallRow]:
    """The rows of ``calls`` of these sessions (all: ``None``), by session and order. Ids go
    in ranges of ``_IDS_PER_QUERY`` (an older SQLite takes 999 parameters at most), in sorted
    order, so the ranges' rows follow each other in session order."""
    if session_ids is None:
        return _calls_where(db, path, "", ())
    ids = sorted(set(session_ids))
    rows: list[CallRow] = []
    for start in range(0, len(ids), _IDS_PER_QUERY):
        part = tuple(ids[start : start + _IDS_PER_QUERY])
        rows += _calls_where(db, path, f"WHERE session_id IN ({', '.join('?' * len(part))}) ", part)
    return rows


def _calls_where(
    db: sqlite3.Connection, path: Path, where: str, args: tuple[str, ...]
) -> list[CallRow]:
    try:
        rows = db.execute(
            f"SELECT {_CALL_COLUMNS} FROM calls {where}ORDER BY session_id, seq", args
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise StoreError(f"cannot read {path}: {exc}") from None
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {exc}") from None
    return [_call_row(row) for row in rows]


def _select_overrides(db: sqlite3.Connection, path: Path) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    try:
        rows = db.execute("SELECT id, state FROM sessions").fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {exc}") from None
    for sid, state in rows:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            out[str(sid)] = dict(SessionState.from_json(state).overrides)
    return out


def _count(value: object) -> int | None:
    """A count column: an integer, or ``None`` (NULL, or anything a hand edit left there)."""
    return value if isinstance(value, int) else None


def _charge_of(values: Sequence[object]) -> Charge | None:
    read, write, write_long, plain = (_count(v) for v in values)
    if read is None or write is None or write_long is None or plain is None:
        return None
    return Charge(read=read, write=write, write_long=write_long, plain=plain)


def _call_row(row: Sequence[object]) -> CallRow:
    """One row of ``calls`` (in ``_CALL_COLUMNS``' order) as the core reads it."""
    kind: Kind = next((k for k in _KINDS if k == row[3]), "model")
    billed_input = _count(row[16])
    billed = None
    if billed_input is not None:
        billed = BilledUsage(
            input=billed_input,
            read=_count(row[17]) or 0,
            write=_count(row[18]) or 0,
            write_1h=_count(row[19]),
            output=_count(row[20]) or 0,
        )
    return CallRow(
        session_id=str(row[0]),
        seq=_count(row[1]) or 0,
        at=_count(row[2]) or 0,
        kind=kind,
        model=None if row[4] is None else str(row[4]),
        masked=_count(row[5]),
        charge=_charge_of(row[8:12]),
        off=_charge_of(row[12:16]),
        billed=billed,
    )
