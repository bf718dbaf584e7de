"""The SQLite store's tables, the version of their layout, and the way from an older one.

The version is SQLite's own ``user_version``; a database of a newer version is refused (a
daemon that does not know its layout would write over what it means), an older one is brought
up to date when opened, tables only added.
"""

from __future__ import annotations

import sqlite3

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

SCHEMA = """
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
CREATE TABLE IF NOT EXISTS owners (
    tag TEXT PRIMARY KEY,
    prefix TEXT NOT NULL,
    record TEXT NOT NULL,
    seen INTEGER NOT NULL
);
"""


def migrate(db: sqlite3.Connection, version: int) -> None:
    """Bring a database of ``version`` (0: new) to ``SCHEMA_VERSION``: tables only added. A
    database that had sessions before schema 3 is marked unscrubbed: its free pages may hold
    what older daemons deleted."""
    had_tables = db.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='sessions'"
    ).fetchone()
    db.executescript(SCHEMA)
    if version < 3:
        scrubbed = "0" if had_tables is not None else "1"
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES (?, ?)", (SCRUBBED, scrubbed))
    db.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
