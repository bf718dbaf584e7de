"""The PostgreSQL store: every session in a database that any number of processes share.

For a team's gateway: several replicas, each with its daemon, serve any request of any
conversation, so a session's whole state lives in the database (its transcript and working
view, and ``Session.export_state``: what the provider's cache holds, waiting edits, lifetimes,
the calls' ledger) and is read from it by whichever process serves the next request. The
tables are the SQLite store's (``postgres_schema.py``); what differs is who else writes:

- A session is changed by one request at a time across every process: ``lock`` takes the
  session's advisory lock in the database (``postgres_locks.py``) after the daemon's own, and
  holds it until the commit is written (the registry's ``SessionLock``).
- Each save adds one to the session's ``version`` and is refused (``SessionChanged``, nothing
  written) unless the version is the one this process loaded or last wrote: once locked, the
  registry compares ``version`` with what it holds and loads the session again when another
  process changed it (whole: a load is a few milliseconds of rows).
- A commit returns once the server has it: with ``durable`` (an editor's daemon) flushed to
  the server's disk; the proxy's (not ``durable``) with ``synchronous_commit`` off, which a
  proxy killed never loses (the server has it) and a crash of the database server may take the
  last fraction of a second of back, as a power loss does to the SQLite store's: the agent's
  next request brings it again.
- A deleted session's rows go in one transaction from every table that has a ``session_id``;
  then the tables are vacuumed, so that no dead copy of a row stays reachable in them. As far
  as PostgreSQL allows: what VACUUM does and does not wipe is in docs/team.md.

No transcript file is exported (an LLM summary goes without its pointer): a replica's disk is
not the agent's. The work runs on the store's threads, one connection each
(``postgres_pool.py``); the URL's password is never in a message.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Sequence
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ...core.history.stored import Blob
from ...core.session.state import SessionState
from .call_rows import Result, write_calls
from .loading import assemble, loaded_of, repair
from .location import redacted
from .postgres_locks import SessionLocks
from .postgres_pool import Connection, Connections, Health
from .postgres_reader import select_calls, select_overrides
from .postgres_schema import SCHEMA, migrate
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
    SessionChanged,
    StatsRows,
    StoreError,
    Summary,
    now_ms,
)
from .recovery import Damage

log = logging.getLogger(__name__)

WORKERS = 4
"""Threads (and connections) for the store's work, besides the one that holds the locks."""


class _Qmark:
    """A connection that takes the shared SQL's ``?`` parameters (``call_rows``, ``loading``)."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn

    def execute(self, sql: str, params: Sequence[object] = (), /) -> Result:
        return self._conn.execute(sql.replace("?", "%s"), params)


class PostgresStore:
    def __init__(self, url: str, *, durable: bool = True, workers: int = WORKERS) -> None:
        self.url = url
        self.durable = durable
        self.shared = True
        self.warn: Callable[[str], None] = lambda message: None
        self._shown = redacted(url)
        self._workers = workers
        self._health = Health(self._shown)
        self._pool: Connections | None = None
        self._locks: SessionLocks | None = None
        self._lock_connections: Connections | None = None
        self._closed = False
        self._unvacuumed: set[str] = set()
        """Tables this role may not vacuum (not their owner): said once."""

    @property
    def shown(self) -> str:
        return self._shown

    # -- plumbing ---------------------------------------------------------------------------

    def _setup(self, conn: Connection) -> None:
        conn.execute(f'SET search_path TO "{SCHEMA}"')
        if not self.durable:
            conn.execute("SET synchronous_commit TO off")

    async def _run(self, fn: Callable[[Connection], Any]) -> Any:
        if self._pool is None:
            raise StoreError("the store is closed")
        return await self._pool.run(fn)

    async def open(self) -> None:
        """Connect, and make or migrate the tables: StoreError, in one line naming the
        database without its password, when it cannot be used."""
        if self._pool is not None:
            return
        try:
            conninfo_to_dict(self.url)
        except psycopg.Error:
            raise StoreError(
                f"cannot use the database {self._shown}: not a URL libpq reads"
            ) from None
        pool = Connections(self.url, workers=self._workers, setup=self._setup, health=self._health)
        locks = Connections(
            self.url, workers=1, setup=self._setup, health=self._health, name="hdcontext-locks"
        )
        try:
            await pool.run(lambda conn: migrate(conn, self._shown))
            await locks.run(lambda conn: None)
        except StoreError as exc:
            await asyncio.to_thread(pool.close)
            await asyncio.to_thread(locks.close)
            self._health.down = False  # a failed start is said by the caller, once
            raise StoreError(_at_start(self._shown, str(exc))) from None
        finally:
            self._health.quiet = False
        self._pool, self._lock_connections = pool, locks
        self._locks = SessionLocks(locks)

    async def close(self) -> None:
        """Close every connection (the server gives back any lock still held); once."""
        if self._closed:
            return
        self._closed = True
        for connections in (self._pool, self._lock_connections):
            if connections is not None:
                await asyncio.to_thread(connections.close)
        self._pool = self._lock_connections = None
        self._locks = None

    # -- locks and versions -------------------------------------------------------------------

    async def lock(self, session_id: str) -> int | None:
        """Take the session's lock; its version then (``None``: not stored)."""
        if self._locks is None:
            raise StoreError("the store is closed")
        return await self._locks.acquire(session_id, lambda conn: _version(conn, session_id))

    async def unlock(self, session_id: str) -> None:
        if self._locks is not None:
            await self._locks.release(session_id)

    async def version(self, session_id: str) -> int | None:
        result: int | None = await self._run(lambda conn: _version(conn, session_id))
        return result

    # -- sessions -----------------------------------------------------------------------------

    async def exists(self, session_id: str) -> bool:
        return await self.version(session_id) is not None

    async def create(self, session_id: str, state: SessionState, model: str | None) -> None:
        def run(conn: Connection) -> None:
            now = now_ms()
            conn.execute(
                "INSERT INTO sessions (id, created, updated, model, state, entry_count,"
                " total_tokens, version) VALUES (%s, %s, %s, %s, %s, 0, 0, 0)",
                (session_id, now, now, model, state.to_json()),
            )

        await self._run(run)

    async def save(self, op: SaveOp) -> int:
        """Commit one request's changes, if the session is still at ``op.version``; its new
        version. When this returns the server has them (see the module's docstring)."""

        def run(conn: Connection) -> int:
            sid = op.session_id
            with conn.transaction():
                # First: the session's row is locked, and its version checked, before any
                # other row is written.
                row = conn.execute(
                    "UPDATE sessions SET updated=%s, state=%s, entry_count=%s, total_tokens=%s,"
                    " model=COALESCE(%s, model), version=version+1 WHERE id=%s AND version=%s"
                    " RETURNING version",
                    (
                        now_ms(),
                        op.state.to_json(),
                        op.entry_count,
                        op.total_tokens,
                        op.model,
                        sid,
                        op.version,
                    ),
                ).fetchone()
                if row is None:
                    raise SessionChanged(
                        f"session {sid!r} was changed or deleted by another process since it "
                        "was loaded"
                    )
                cur = conn.cursor()
                if op.new_transcript:
                    cur.executemany(
                        "INSERT INTO transcript (session_id, seq, entry) VALUES (%s, %s, %s)",
                        [(sid, seq, _text(entry)) for seq, entry in op.new_transcript],
                    )
                working = op.working
                if working.rewrite:
                    conn.execute("DELETE FROM working WHERE session_id=%s", (sid,))
                if working.deleted:
                    conn.execute(
                        "DELETE FROM working WHERE session_id=%s AND pos = ANY(%s)",
                        (sid, list(working.deleted)),
                    )
                if working.rows:
                    cur.executemany(
                        "INSERT INTO working (session_id, pos, seq, entry, tokens)"
                        " VALUES (%s, %s, %s, %s, %s) ON CONFLICT (session_id, pos) DO UPDATE"
                        " SET seq=excluded.seq, entry=excluded.entry, tokens=excluded.tokens",
                        [
                            (
                                sid,
                                r.pos,
                                r.seq,
                                None if r.entry is None else _text(r.entry),
                                r.tokens,
                            )
                            for r in working.rows
                        ],
                    )
                if op.calls:
                    write_calls(_Qmark(conn), sid, op.calls)
            return int(row[0])

        version: int = await self._run(run)
        return version

    async def load(self, session_id: str) -> Loaded | None:
        def run(conn: Connection) -> tuple[Loaded | None, Damage | None]:
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY")
                row = conn.execute(
                    "SELECT state, model, created, version FROM sessions WHERE id=%s",
                    (session_id,),
                ).fetchone()
                if row is None:
                    return None, None
                read = assemble(
                    session_id,
                    conn.execute(
                        "SELECT seq, entry FROM transcript WHERE session_id=%s ORDER BY seq",
                        (session_id,),
                    ).fetchall(),
                    conn.execute(
                        "SELECT pos, seq, entry, tokens FROM working WHERE session_id=%s"
                        " ORDER BY pos",
                        (session_id,),
                    ).fetchall(),
                )
            if read.repair is not None:
                with conn.transaction():
                    repair(_Qmark(conn), session_id, read.repair.seqs, read.repair.drop)
            loaded = loaded_of(session_id, read, row[0], row[1], int(row[2]), int(row[3]))
            return loaded, None if read.repair is None else read.repair.damage

        found: tuple[Loaded | None, Damage | None] = await self._run(run)
        loaded, damage = found
        if damage is not None:
            self.warn(damage.message())
        return loaded

    async def summaries(self) -> list[Summary]:
        """Every stored session, most recently changed first."""

        def run(conn: Connection) -> list[Summary]:
            return [
                Summary(
                    session_id=str(sid),
                    state=SessionState.from_json(state),
                    entry_count=int(count),
                    total_tokens=int(tokens),
                    updated=int(updated),
                )
                for sid, state, count, tokens, updated in conn.execute(
                    "SELECT id, state, entry_count, total_tokens, updated FROM sessions"
                    " ORDER BY updated DESC, id"
                )
            ]

        result: list[Summary] = await self._run(run)
        return result

    async def idle(self, before: int) -> list[str]:
        """The sessions last changed before ``before`` (ms), least recently changed first."""

        def run(conn: Connection) -> list[str]:
            rows = conn.execute(
                "SELECT id FROM sessions WHERE updated<%s ORDER BY updated, id", (before,)
            )
            return [str(sid) for (sid,) in rows]

        result: list[str] = await self._run(run)
        return result

    # -- deleting -----------------------------------------------------------------------------

    async def delete(self, session_id: str) -> bool:
        return bool(await self.delete_sessions([session_id]))

    async def delete_sessions(
        self, session_ids: Sequence[str], idle_before: int | None = None
    ) -> list[str]:
        """Delete sessions, each in a transaction of its own (with ``idle_before``: only if
        last changed before it), then vacuum their tables; the ids that went. Hold each
        session's lock (``lock``) when other processes may serve it."""

        def run(conn: Connection) -> tuple[list[str], list[str]]:
            tables = _session_tables(conn)
            deleted = [sid for sid in session_ids if _delete_rows(conn, tables, sid, idle_before)]
            return deleted, tables

        done: tuple[list[str], list[str]] = await self._run(run)
        deleted, tables = done
        if deleted:
            await self._vacuum(["sessions", *tables])
        return deleted

    async def _vacuum(self, tables: Sequence[str]) -> None:
        """VACUUM the tables that held what was deleted: their dead rows pruned from the
        pages and the indexes, so that nothing reads them any more (see the module's
        docstring). Only an owner may: the tables this role does not own are said once and
        left to autovacuum. A failure is only said: the rows are gone already."""

        def run(conn: Connection) -> list[str]:
            owned = {
                str(name)
                for (name,) in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname=%s "
                    "AND tableowner=current_user",
                    (SCHEMA,),
                )
            }
            mine = [t for t in tables if t in owned]
            if mine:
                conn.execute("VACUUM " + ", ".join(_quoted(t) for t in mine))
            return [t for t in tables if t not in owned]

        try:
            others: list[str] = await self._run(run)
        except StoreError as exc:
            log.warning("deleted sessions' tables not vacuumed: %s", exc)
            return
        new = set(others) - self._unvacuumed
        if new:
            self._unvacuumed |= new
            log.warning(
                "the database role does not own %s: deleted rows wait for autovacuum",
                ", ".join(sorted(new)),
            )

    # -- the proxy's tables -------------------------------------------------------------------

    async def keep_resume(self, rows: Sequence[ResumeRow]) -> int:
        """Keep the proxy's last requests for a next start (``RESUME_TABLE``), each only if
        its session is stored; how many were kept."""

        def run(conn: Connection) -> int:
            kept = 0
            with conn.transaction():
                for row in rows:
                    kept += conn.execute(
                        f"INSERT INTO {RESUME_TABLE} (session_id, at, api, client, body) "
                        "SELECT %s::text, %s::bigint, %s::text, %s::text, %s::bytea "
                        "WHERE EXISTS (SELECT 1 FROM sessions WHERE id=%s) "
                        "ON CONFLICT (session_id) DO UPDATE SET at=excluded.at, "
                        "api=excluded.api, client=excluded.client, body=excluded.body",
                        (row.session_id, row.at, row.api, row.client, row.body, row.session_id),
                    ).rowcount
            return kept

        result: int = await self._run(run)
        return result

    async def take_resume(self, since: int) -> list[ResumeRow]:
        """The requests ``keep_resume`` kept at ``since`` (ms) or later, most recent first;
        every row is deleted (read once, by the first replica to start)."""

        def run(conn: Connection) -> list[ResumeRow]:
            found = conn.execute(
                f"DELETE FROM {RESUME_TABLE} RETURNING session_id, at, api, client, body"
            ).fetchall()
            rows = [
                ResumeRow(str(sid), int(at), str(api), str(client), bytes(body))
                for sid, at, api, client, body in found
                if int(at) >= since
            ]
            return sorted(rows, key=lambda r: (-r.at, r.session_id))

        result: list[ResumeRow] = await self._run(run)
        return result

    async def add_passed(self, rows: Sequence[PassedRow]) -> None:
        """Add ``rows``' requests to those counted already (``PASSED_TABLE``)."""

        def run(conn: Connection) -> None:
            with conn.transaction():
                conn.cursor().executemany(
                    f"INSERT INTO {PASSED_TABLE} (day, api, outcome, reason, requests, last) "
                    "VALUES (%s, %s, %s, %s, %s, %s) ON CONFLICT (day, api, outcome, reason) "
                    f"DO UPDATE SET requests={PASSED_TABLE}.requests+excluded.requests, "
                    f"last=GREATEST({PASSED_TABLE}.last, excluded.last)",
                    [(r.day, r.api, r.outcome, r.reason, r.requests, r.last) for r in rows],
                )

        await self._run(run)

    async def forget_passed(self, before: int) -> None:
        """Delete the counts of requests none of which came at ``before`` (ms) or later."""

        def run(conn: Connection) -> None:
            conn.execute(f"DELETE FROM {PASSED_TABLE} WHERE last<%s", (before,))

        await self._run(run)

    async def put_owners(self, rows: Sequence[OwnerRow]) -> None:
        """Write each owner's record and when it was seen (``OWNERS_TABLE``), over any before."""

        def run(conn: Connection) -> None:
            with conn.transaction():
                conn.cursor().executemany(
                    f"INSERT INTO {OWNERS_TABLE} (tag, prefix, record, seen) "
                    "VALUES (%s, %s, %s, %s) ON CONFLICT (tag) DO UPDATE SET "
                    "prefix=excluded.prefix, record=excluded.record, "
                    f"seen=GREATEST({OWNERS_TABLE}.seen, excluded.seen)",
                    [(r.tag, r.prefix, r.record, r.seen) for r in rows],
                )

        await self._run(run)

    async def forget_owners(self, before: int) -> None:
        """Delete the owners not seen at ``before`` (ms) or later that have no session left."""

        def run(conn: Connection) -> None:
            conn.execute(
                f"DELETE FROM {OWNERS_TABLE} o WHERE o.seen<%s AND NOT EXISTS (SELECT 1 FROM "
                "sessions s WHERE starts_with(s.id, o.prefix))",
                (before,),
            )

        await self._run(run)

    async def calls_for_stats(self, session_ids: Sequence[str] | None) -> StatsRows:
        """What ``hdcontext stats`` reads: the calls of these sessions (all: ``None``), every
        session's own settings, every stored id."""

        def run(conn: Connection) -> StatsRows:
            stored = [str(s) for (s,) in conn.execute("SELECT id FROM sessions ORDER BY id")]
            return StatsRows(
                calls=select_calls(conn, session_ids),
                overrides=select_overrides(conn),
                stored=stored,
            )

        result: StatsRows = await self._run(run)
        return result

    async def export_transcript(self, session_id: str, entries: Sequence[Blob]) -> str | None:
        """None: no file is made (see the module's docstring)."""
        return None


def _version(conn: Connection, session_id: str) -> int | None:
    found = conn.execute("SELECT version FROM sessions WHERE id=%s", (session_id,)).fetchone()
    return None if found is None else int(found[0])


def _text(blob: Blob) -> str:
    return blob.decode("utf-8")


def _at_start(shown: str, message: str) -> str:
    """Why the database cannot be used at start, in one line that names it: a newer schema
    as the schema says it, anything else as ``cannot use the database URL: why``."""
    if "newer hdcontext" in message:
        return message
    head, sep, why = message.partition(": ")
    if not (sep and head.startswith("the database")):
        why = message
    return f"cannot use the database {shown}: {why}"


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _session_tables(conn: Connection) -> list[str]:
    """Every table of the schema with a ``session_id`` column: a table added later goes with
    its session unlisted."""
    rows = conn.execute(
        "SELECT table_name FROM information_schema.columns WHERE table_schema=%s "
        "AND column_name=%s ORDER BY table_name",
        (SCHEMA, SESSION_COLUMN),
    )
    return [str(name) for (name,) in rows]


def _delete_rows(
    conn: Connection, tables: Sequence[str], session_id: str, idle_before: int | None
) -> bool:
    """One session's rows out of every table, in one transaction; whether it was there (with
    ``idle_before``: there and idle, else nothing is deleted)."""
    with conn.transaction():
        if idle_before is not None:
            idle = conn.execute(
                "SELECT 1 FROM sessions WHERE id=%s AND updated<%s FOR UPDATE",
                (session_id, idle_before),
            ).fetchone()
            if idle is None:
                return False
        found = conn.execute("DELETE FROM sessions WHERE id=%s", (session_id,)).rowcount > 0
        for table in tables:
            rows = conn.execute(
                f"DELETE FROM {_quoted(table)} WHERE {SESSION_COLUMN}=%s", (session_id,)
            ).rowcount
            found = found or rows > 0
        return found
