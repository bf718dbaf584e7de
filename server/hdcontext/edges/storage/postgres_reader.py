"""A PostgreSQL store read without serving it: ``hdcontext sessions`` and ``stats``.

One connection, read only (``default_transaction_read_only``), beside the replicas that write:
it locks nothing and changes nothing. A database hdcontext never used holds no sessions (its
schema is not made here); one of a newer schema is refused in one line, as by the store. The
queries are the store's too (``calls_for_stats``), so both read the same figures.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict

from ...core.session.state import SessionState
from ...core.stats.calls import CallRow
from .call_rows import CALL_COLUMNS, call_row
from .location import redacted
from .postgres_pool import CONNECT_TIMEOUT_S, Connection, reason
from .postgres_schema import SCHEMA, SCHEMA_VERSION, newer, stored_version
from .records import OWNERS_TABLE, PASSED_TABLE, PassedRow, StoredSession, StoreError


def select_calls(conn: Connection, session_ids: Sequence[str] | None) -> list[CallRow]:
    """The rows of ``calls`` of these sessions (all: ``None``), by session and order."""
    if session_ids is None:
        rows = conn.execute(f"SELECT {CALL_COLUMNS} FROM calls ORDER BY session_id, seq")
    else:
        rows = conn.execute(
            f"SELECT {CALL_COLUMNS} FROM calls WHERE session_id = ANY(%s) ORDER BY session_id, seq",
            (sorted(set(session_ids)),),
        )
    return [call_row(row) for row in rows]


def select_overrides(conn: Connection) -> dict[str, dict[str, object]]:
    """Each stored session's own settings, by id (a state that cannot be read: none)."""
    out: dict[str, dict[str, object]] = {}
    for sid, state in conn.execute("SELECT id, state FROM sessions"):
        with contextlib.suppress(ValueError, KeyError, TypeError):
            out[str(sid)] = dict(SessionState.from_json(state).overrides)
    return out


def select_stored(conn: Connection, session_id: str | None = None) -> list[StoredSession]:
    """Stored sessions as ``hdcontext sessions`` shows them (one, or all, most recently
    changed first)."""
    where, args = ("WHERE s.id=%s ", (session_id,)) if session_id is not None else ("", ())
    rows = conn.execute(
        "SELECT s.id, s.created, s.updated, s.model, s.entry_count, s.total_tokens, s.state,"
        " (SELECT count(*) FROM transcript t WHERE t.session_id=s.id)"
        f" FROM sessions s {where}ORDER BY s.updated DESC, s.id",
        args,
    ).fetchall()
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


class PostgresReader:
    def __init__(self, url: str) -> None:
        self.shown = redacted(url)
        self._conn: Connection | None = None
        try:
            params: dict[str, Any] = dict(conninfo_to_dict(url))
        except psycopg.Error:
            raise StoreError(
                f"cannot use the database {self.shown}: not a URL libpq reads"
            ) from None
        params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        params.setdefault("application_name", "hdcontext-reader")
        try:
            conn = psycopg.connect(**params, autocommit=True)
            conn.execute("SET default_transaction_read_only TO on")
            conn.execute(f'SET search_path TO "{SCHEMA}"')
            version = stored_version(conn)
        except psycopg.Error as exc:
            raise StoreError(f"cannot use the database {self.shown}: {reason(exc)}") from None
        if version is None:  # hdcontext never wrote here: nothing stored
            conn.close()
            return
        if version > SCHEMA_VERSION:
            conn.close()
            raise newer(self.shown, version)
        self._conn = conn

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> PostgresReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _read(self, fn: Any, *args: Any) -> Any:
        if self._conn is None:
            return None
        try:
            return fn(self._conn, *args)
        except psycopg.Error as exc:
            raise StoreError(f"cannot read the database {self.shown}: {reason(exc)}") from None

    def sessions(self) -> list[StoredSession]:
        """Every stored session, most recently changed first."""
        return self._read(select_stored) or []

    def session(self, session_id: str) -> StoredSession | None:
        found: list[StoredSession] = self._read(select_stored, session_id) or []
        return found[0] if found else None

    def transcript(self, session_id: str) -> list[str]:
        """A session's transcript, one entry's IContent JSON each, in order."""

        def read(conn: Connection) -> list[str]:
            rows = conn.execute(
                "SELECT entry FROM transcript WHERE session_id=%s ORDER BY seq", (session_id,)
            )
            return [str(entry) for (entry,) in rows]

        return self._read(read) or []

    def calls(self, session_id: str | None = None) -> list[CallRow]:
        return self._read(select_calls, None if session_id is None else [session_id]) or []

    def owners(self) -> dict[str, str]:
        """Each owner's record (JSON) by tag; none from a database of schema 1 (no table)."""

        def read(conn: Connection) -> dict[str, str]:
            if conn.execute(f"SELECT to_regclass('{OWNERS_TABLE}')").fetchone() in (None, (None,)):
                return {}
            rows = conn.execute(f"SELECT tag, record FROM {OWNERS_TABLE}")
            return {str(tag): str(record) for tag, record in rows}

        found: dict[str, str] = self._read(read) or {}
        return found

    def passed(self, since: int | None = None) -> list[PassedRow]:
        """The requests counted in ``PASSED_TABLE`` whose latest came at ``since`` (ms) or
        later (all: ``None``), by day, most requests first."""

        def read(conn: Connection) -> list[PassedRow]:
            rows = conn.execute(
                f"SELECT day, api, outcome, reason, requests, last FROM {PASSED_TABLE} "
                "WHERE last>=%s ORDER BY day, requests DESC, reason",
                (since or 0,),
            )
            return [
                PassedRow(str(d), str(a), str(o), str(r), int(n), int(t))
                for d, a, o, r, n, t in rows
            ]

        return self._read(read) or []

    def overrides(self) -> dict[str, dict[str, object]]:
        return self._read(select_overrides) or {}

    def exported(self, session_id: str) -> Path | None:
        """None: a database's sessions export no transcript file."""
        return None
