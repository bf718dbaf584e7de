"""What goes in and out of a store, whichever keeps the sessions (SQLite or PostgreSQL).

Both stores take and give these same values, so the daemon, the proxy and the commands never
know which one they use; the tables' names and meaning, the same in both, are said here once.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from ...core.history.stored import Blob
from ...core.session.state import SessionState
from ...core.stats.calls import CallEvent, CallRow

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
OWNERS_TABLE = "owners"
"""Who the owners of a team gateway's sessions are (``hdcontext.litellm``: a session is named
within the caller LiteLLM authenticated), for ``hdcontext stats --by user|team``: one row per
owner, its tag, the start every one of its session ids has (``prefix``), its record as JSON
(ids and aliases, the key's hash shortened, never a key) and when a request of it was last
seen. Belongs to no session: a row goes with the retention once none of its sessions is left
and the owner has not been seen since (``Store.forget_owners``). A table and not a file beside
the store, so that every replica on a database writes and reads the same owners. Added without
a version change in SQLite, like ``calls``; in PostgreSQL, its schema 2."""
SESSION_COLUMN = "session_id"
"""A table with this column holds rows of a session: they are deleted with it."""


class StoreError(RuntimeError):
    """The storage cannot be used (permissions, a newer schema, a full disk, another daemon
    holding the folder, a database that cannot be reached)."""


class NoStorage(StoreError):
    """The folder named holds no storage (it does not exist, or is not a folder)."""


class StoreUnavailable(StoreError):
    """The database cannot be reached now (it went away mid-run): the request goes on without
    hdcontext, and the store says so in the log once, not every caller."""


class SessionChanged(StoreError):
    """A save found the session changed (or deleted) by another process since this one loaded
    it: nothing was written, and the session is to be loaded again."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


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
    version: int = 0
    """The session's version this process loaded or last saved (``Loaded.version``): a
    shared database refuses the save when another process saved the session since."""


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
    version: int = 0
    """The session's count of saves in a shared database (what another process's save
    changes); always 0 in a storage folder, which one process has to itself."""


@dataclass(frozen=True)
class Summary:
    """A stored session as ``history/list`` shows it, without loading its entries."""

    session_id: str
    state: SessionState
    entry_count: int
    total_tokens: int
    updated: int


@dataclass(frozen=True)
class OwnerRow:
    """An owner of sessions (``OWNERS_TABLE``)."""

    tag: str
    prefix: str
    """Every session id of the owner starts with it."""
    record: str
    """Who the owner is, as JSON."""
    seen: int
    """When a request of the owner was last noted (ms)."""


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
