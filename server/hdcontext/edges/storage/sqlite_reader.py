"""A storage folder's database read without its daemon: ``hdcontext sessions`` and ``stats``.

SQLite's read-only mode, without the folder's lock, beside a daemon that may be writing (WAL
lets a reader see the last commit without blocking the writer).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
from collections.abc import Sequence
from pathlib import Path

from ...core.session.state import SessionState
from ...core.stats.calls import CallRow
from .call_rows import CALL_COLUMNS, call_row
from .folder import DB_NAME, TRANSCRIPTS_DIR, folder_problem, transcript_file
from .records import OWNERS_TABLE, PASSED_TABLE, NoStorage, PassedRow, StoredSession, StoreError
from .sqlite_schema import SCHEMA_VERSION


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
        return select_calls(self._db, self.path, None if session_id is None else [session_id])

    def owners(self) -> dict[str, str]:
        """Each owner's record (JSON) by tag; none from a database no gateway has written."""
        if self._db is None:
            return {}
        try:
            rows = self._db.execute(f"SELECT tag, record FROM {OWNERS_TABLE}").fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return {}
            raise StoreError(f"cannot read {self.path}: {exc}") from None
        return {str(tag): str(record) for tag, record in rows}

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
        return select_overrides(self._db, self.path)

    def exported(self, session_id: str) -> Path | None:
        """The session's exported transcript (an LLM summary's pointer), if there is one."""
        path = transcript_file(self.transcripts, session_id)
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


def select_calls(
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
            f"SELECT {CALL_COLUMNS} FROM calls {where}ORDER BY session_id, seq", args
        ).fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return []
        raise StoreError(f"cannot read {path}: {exc}") from None
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {exc}") from None
    return [call_row(row) for row in rows]


def select_overrides(db: sqlite3.Connection, path: Path) -> dict[str, dict[str, object]]:
    out: dict[str, dict[str, object]] = {}
    try:
        rows = db.execute("SELECT id, state FROM sessions").fetchall()
    except sqlite3.Error as exc:
        raise StoreError(f"cannot read {path}: {exc}") from None
    for sid, state in rows:
        with contextlib.suppress(ValueError, KeyError, TypeError):
            out[str(sid)] = dict(SessionState.from_json(state).overrides)
    return out
