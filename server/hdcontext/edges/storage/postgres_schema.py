"""The PostgreSQL store's tables, the version of their layout, and the way from an older one.

The tables are the SQLite store's, with the same names and meaning (``records.py``), in a
schema of their own, ``hdcontext``, so that they never meet another application's tables in a
database a team shares (LiteLLM's own, say). ``sessions`` has one column more, ``version``:
the count of the session's saves, which every process that serves it compares with what it
loaded (``postgres_store.py``).

The layout's version is the ``schema`` row of ``meta``. A database of a newer version is
refused in one line: a process that does not know its layout would write over what it means.
An older one is brought up to date at the first start of a newer hdcontext, in one transaction
under a lock of its own, so that replicas starting together migrate it once.
"""

from __future__ import annotations

from typing import Any

import psycopg

from .records import StoreError

SCHEMA = "hdcontext"
"""The PostgreSQL schema that holds hdcontext's tables (made at the first start)."""
SCHEMA_VERSION = 2
"""1: the SQLite store's tables of its schema 3, and ``sessions.version``. 2: ``owners``, who
a team gateway's sessions belong to (``records.OWNERS_TABLE``); a hdcontext that knows only 1
would leave an owner behind its deleted sessions, so it refuses a database of 2."""
VERSION_KEY = "schema"
"""``meta`` key: the layout's version."""
MIGRATION_LOCK = 0x6864_6378_6D69_6772  # "hdcxmigr": taken while the tables are made or changed

TABLES_1 = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    model TEXT,
    state TEXT NOT NULL,
    entry_count BIGINT NOT NULL,
    total_tokens BIGINT NOT NULL,
    version BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_updated ON sessions (updated);
CREATE TABLE IF NOT EXISTS transcript (
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    entry TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS working (
    session_id TEXT NOT NULL,
    pos BIGINT NOT NULL,
    seq BIGINT,
    entry TEXT,
    tokens BIGINT NOT NULL,
    PRIMARY KEY (session_id, pos)
);
CREATE TABLE IF NOT EXISTS calls (
    session_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    at BIGINT NOT NULL,
    kind TEXT NOT NULL,
    model TEXT,
    masked BIGINT,
    sent BIGINT,
    upstream BIGINT,
    est_read BIGINT,
    est_write BIGINT,
    est_write_1h BIGINT,
    est_plain BIGINT,
    off_read BIGINT,
    off_write BIGINT,
    off_write_1h BIGINT,
    off_plain BIGINT,
    billed_input BIGINT,
    billed_read BIGINT,
    billed_write BIGINT,
    billed_write_1h BIGINT,
    billed_output BIGINT,
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX IF NOT EXISTS calls_at ON calls (at);
CREATE TABLE IF NOT EXISTS resume (
    session_id TEXT PRIMARY KEY,
    at BIGINT NOT NULL,
    api TEXT NOT NULL,
    client TEXT NOT NULL,
    body BYTEA NOT NULL
);
CREATE TABLE IF NOT EXISTS passed (
    day TEXT NOT NULL,
    api TEXT NOT NULL,
    outcome TEXT NOT NULL,
    reason TEXT NOT NULL,
    requests BIGINT NOT NULL,
    last BIGINT NOT NULL,
    PRIMARY KEY (day, api, outcome, reason)
);
"""

TABLES_2 = """
CREATE TABLE IF NOT EXISTS owners (
    tag TEXT PRIMARY KEY,
    prefix TEXT NOT NULL,
    record TEXT NOT NULL,
    seen BIGINT NOT NULL
);
"""

STEPS: dict[int, str] = {1: TABLES_1, 2: TABLES_2}
"""The DDL that brings a database of version ``n - 1`` to ``n`` (0: none of the tables)."""


def newer(shown: str, version: int) -> StoreError:
    return StoreError(
        f"the database {shown} was written by a newer hdcontext (schema {version}, this one "
        f"knows {SCHEMA_VERSION})"
    )


def stored_version(conn: psycopg.Connection[Any]) -> int | None:
    """The layout's version of the database (``None``: no hdcontext tables in it yet). The
    connection's ``search_path`` is the schema."""
    if conn.execute("SELECT to_regclass('meta')").fetchone() in (None, (None,)):
        return None
    row = conn.execute("SELECT value FROM meta WHERE key=%s", (VERSION_KEY,)).fetchone()
    return int(row[0]) if row is not None else 0


def migrate(conn: psycopg.Connection[Any], shown: str) -> int:
    """Make the schema and its tables, or bring them up to ``SCHEMA_VERSION``; a newer one
    is refused (StoreError). The version it found (0: a new database)."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname=%s", (SCHEMA,)).fetchone()
        if found is None:
            conn.execute(f'CREATE SCHEMA "{SCHEMA}"')
        version = stored_version(conn) or 0
        if version > SCHEMA_VERSION:
            raise newer(shown, version)
        for step in range(version + 1, SCHEMA_VERSION + 1):
            conn.execute(STEPS[step])
        if version < SCHEMA_VERSION:
            conn.execute(
                "INSERT INTO meta (key, value) VALUES (%s, %s) "
                "ON CONFLICT (key) DO UPDATE SET value=excluded.value",
                (VERSION_KEY, str(SCHEMA_VERSION)),
            )
    return version
