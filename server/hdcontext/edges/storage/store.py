"""The sessions' storage: what a store does, whichever keeps them, and opening one by where.

Two stores do it. ``SqliteStore`` (``sqlite_store.py``), the default: one SQLite file in a
private storage folder that one process uses at a time (``storage_lock.py``). ``PostgresStore``
(``postgres_store.py``): a PostgreSQL database that any number of processes share, a gateway's
replicas among them; each session is locked by the database while a request changes it, and a
process notices another's change by the session's version. Both make the same promises: a
change is committed before its reply, nothing acknowledged is lost when a process is killed,
a deleted session leaves no rows, and a database of a newer schema is refused.

What a caller needs, for a folder or a URL alike::

    store = make_store("postgresql://hdc@db/hdc")   # or a folder: make_store(Path(...))
    await store.open()        # StoreError: one line, the URL without its password
    ...                       # create, load, save, delete_sessions… (``Store`` below)
    await store.close()

and to read one without serving it (``hdcontext sessions``, ``stats``): ``open_reader(where)``.
The PostgreSQL modules import psycopg only when a URL is opened: a folder needs nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from ...core.history.stored import Blob
from ...core.session.state import SessionState
from ...core.stats.calls import CallRow
from .location import Location, as_location
from .records import (
    Loaded,
    OwnerRow,
    PassedRow,
    ResumeRow,
    SaveOp,
    StatsRows,
    StoredSession,
    Summary,
)
from .sqlite_reader import ReadOnly
from .sqlite_store import SqliteStore


class Store(Protocol):
    """Where a daemon keeps its sessions. Every method may raise ``StoreError`` (one line,
    no conversation content); ``StoreUnavailable`` when a database cannot be reached."""

    warn: Callable[[str], None]
    """Where the store tells the client what it had to do (a damaged session repaired)."""

    @property
    def shared(self) -> bool:
        """Whether other processes change the same sessions (a database): a session's lock is
        then taken in the database too (``lock``), and a session held in memory is checked
        against its stored ``version`` once locked."""
        ...

    @property
    def shown(self) -> str:
        """The folder, or the database's URL without its password."""
        ...

    async def open(self) -> None: ...

    async def close(self) -> None:
        """Give back what it holds (the folder's lock, the connections); once."""
        ...

    async def lock(self, session_id: str) -> int | None:
        """Wait until no other process changes the session, and keep it so until ``unlock``
        (a database's lock; nothing to wait for in a folder); the session's version once
        locked, ``None`` when it is not stored (or, in a folder, not read)."""
        ...

    async def unlock(self, session_id: str) -> None: ...

    async def version(self, session_id: str) -> int | None:
        """The session's version (``Loaded.version``), ``None`` when it is not stored."""
        ...

    async def exists(self, session_id: str) -> bool: ...

    async def create(self, session_id: str, state: SessionState, model: str | None) -> None: ...

    async def save(self, op: SaveOp) -> int:
        """Commit one request's changes; its version after (``SessionChanged`` when another
        process saved it since ``op.version``: nothing is written)."""
        ...

    async def load(self, session_id: str) -> Loaded | None: ...

    async def summaries(self) -> list[Summary]: ...

    async def delete(self, session_id: str) -> bool: ...

    async def delete_sessions(
        self, session_ids: Sequence[str], idle_before: int | None = None
    ) -> list[str]: ...

    async def idle(self, before: int) -> list[str]: ...

    async def keep_resume(self, rows: Sequence[ResumeRow]) -> int: ...

    async def take_resume(self, since: int) -> list[ResumeRow]: ...

    async def add_passed(self, rows: Sequence[PassedRow]) -> None: ...

    async def forget_passed(self, before: int) -> None: ...

    async def put_owners(self, rows: Sequence[OwnerRow]) -> None: ...

    async def forget_owners(self, before: int) -> None:
        """Delete the owners not seen since ``before`` (ms) whose sessions are all gone."""
        ...

    async def calls_for_stats(self, session_ids: Sequence[str] | None) -> StatsRows: ...

    async def export_transcript(self, session_id: str, entries: Sequence[Blob]) -> str | None:
        """The transcript as a file an LLM summary can point to, or ``None`` (none is made
        for a database: its replicas' disks are not the agent's)."""
        ...


class Reader(Protocol):
    """A storage read without serving it, beside whatever process serves it: figures and
    ids, never written. A context manager (closed at its end)."""

    def __enter__(self) -> Reader: ...

    def __exit__(self, *exc: object) -> None: ...

    def close(self) -> None: ...

    def sessions(self) -> list[StoredSession]: ...

    def session(self, session_id: str) -> StoredSession | None: ...

    def transcript(self, session_id: str) -> list[str]: ...

    def calls(self, session_id: str | None = None) -> list[CallRow]: ...

    def passed(self, since: int | None = None) -> list[PassedRow]: ...

    def overrides(self) -> dict[str, dict[str, object]]: ...

    def owners(self) -> dict[str, str]:
        """Each owner's record (JSON) by tag (``records.OWNERS_TABLE``)."""
        ...

    def exported(self, session_id: str) -> Path | None: ...


def make_store(where: Location | Path | str, *, durable: bool = True) -> Store:
    """The store of ``where`` (a ``Location``, a folder, or a ``postgresql://`` URL), not yet
    open. ``durable``: every commit flushed to the disk before it returns (an editor's
    daemon); the proxy's commits survive its own death but may be taken back by the
    machine's (or the database server's) crash, see each store."""
    place = as_location(where)
    if place.url is not None:
        from .postgres_store import PostgresStore

        return PostgresStore(place.url, durable=durable)
    assert place.folder is not None
    return SqliteStore(place.folder, durable=durable)


async def open_store(where: Location | Path | str, *, durable: bool = True) -> Store:
    """``make_store``, opened (``StoreError`` when it cannot be)."""
    store = make_store(where, durable=durable)
    try:
        await store.open()
    except BaseException:
        await store.close()
        raise
    return store


def open_reader(where: Location | Path | str) -> Reader:
    """A reader of ``where`` (``NoStorage`` for a folder that is not there, ``StoreError`` for
    a database that cannot be read)."""
    place = as_location(where)
    if place.url is not None:
        from .postgres_reader import PostgresReader

        return PostgresReader(place.url)
    assert place.folder is not None
    return ReadOnly(place.folder)
