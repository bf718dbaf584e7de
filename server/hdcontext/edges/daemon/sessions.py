"""The sessions a daemon serves: loaded on demand from the store, committed on every change.

Any request that names a stored session works, also after a restart: a session not in memory
is loaded from the store the first time a request names it. Each change to a session is one
``commit``: the change is applied in memory, saved in one transaction, and only then answered;
if anything fails on the way (a bad setting, a summarizer error, a full disk), the session is
put back exactly as it was, in memory and on disk alike. Once a change is being saved it runs
to its end even if the request is cancelled, so memory and disk never disagree. The proxy's
requests take ``commit_then_save``: answered before the write, the session's lock held until
it is done (the request goes upstream meanwhile, and its answer ends after the write).

Requests for one session are serialized by that session's lock here (first come, first
served), which wraps the whole request: settle, compact, save, answer. It is the only lock a
session has; with a store other processes share (a database), it is the database's too, and a
session held in memory that another process changed since is loaded again once the lock is
held (``session_lock.py``; each save carries the version it expects, so no change of another
process is ever written over). Requests for different sessions interleave freely, so a slow
summary for one never holds up another. And ``commit`` is the only place a failed change is
undone (``Session.snapshot``/``restore``).

File writes seen on disk wait in a per-session inbox until the session's next compaction takes
them, under its lock, so a compaction's view of the disk never changes halfway through.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, overload

from ...core.history.history import History
from ...core.history.journal import Change
from ...core.history.stored import Blob
from ...core.session.replies import Status
from ...core.session.session import Session
from ...core.settings import resolve
from ..storage.records import Loaded, SaveOp, SessionChanged, WorkingChange, WorkingRow
from ..storage.store import Store
from . import memory
from .session_lock import SessionLock
from .watcher import writes_after_reads

T = TypeVar("T")
log = logging.getLogger(__name__)


class UnknownSession(LookupError):
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"unknown session {session_id!r}")


@dataclass
class _Saved:
    """How far the store has a loaded session, to save only what changed since."""

    transcript_len: int
    revision: int  # of the history's journal at the last save (journal.py)
    version: int = 0  # of the stored session (Loaded.version), in a shared store


async def to_completion(work: Awaitable[T]) -> T:
    """Await ``work`` to its end: a cancellation of the caller is noted and ignored."""
    task = asyncio.ensure_future(work)
    while True:
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                return task.result()


class Registry:
    def __init__(
        self,
        store: Store,
        make_session: Callable[[str], Session],
        ide_settings: Callable[[], Mapping[str, object]],
    ) -> None:
        self._store = store
        self._make = make_session
        self._ide_settings = ide_settings
        self._sessions: dict[str, Session] = {}
        self._saved: dict[str, _Saved] = {}
        self._locks: dict[str, SessionLock] = {}
        self._inbox: dict[str, dict[str, int]] = {}
        self._saving: dict[str, asyncio.Future[None]] = {}  # commit_then_save's writes

    # -- lookups ------------------------------------------------------------------------------

    def lock(self, session_id: str) -> SessionLock:
        """The lock that serializes requests for ``session_id`` (hold it around each one),
        across processes when the store is shared (``session_lock.py``)."""
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = SessionLock(session_id, self._store, self._fresh)
        return lock

    @property
    def shared(self) -> bool:
        """Whether other processes change these sessions too (a shared database)."""
        return self._store.shared

    async def _fresh(self, session_id: str, version: int | None) -> None:
        """Once a shared session's lock is held (``version``: the stored session's then): a
        session held in memory that another process saved since (or deleted) is let go, to
        be loaded again as stored."""
        saved = self._saved.get(session_id)
        if saved is not None and version != saved.version:
            self._forget(session_id)

    def loaded(self) -> list[Session]:
        return list(self._sessions.values())

    def loaded_session(self, session_id: str) -> Session | None:
        """The session if it is loaded (never loads it)."""
        return self._sessions.get(session_id)

    def loaded_ids(self) -> frozenset[str]:
        return frozenset(self._sessions)

    async def find(self, session_id: str) -> Session | None:
        """The session, loaded from the store if need be; ``None`` if it is in neither."""
        return await self._load(session_id)

    async def get(self, session_id: str) -> Session:
        """The session, loaded from the store if need be; UnknownSession if it is in neither."""
        session = await self._load(session_id)
        if session is None:
            raise UnknownSession(session_id)
        return session

    async def open(
        self, session_id: str, model: str | None, overrides: Mapping[str, object]
    ) -> Session:
        """``history/open``: resume the stored session, or create and store a new one.

        ``overrides`` are set (validated; SettingError changes nothing) before the reply.
        """
        session = await self._load(session_id)
        if session is None:
            session = self._make(session_id)
            session.model = model
            for key, value in overrides.items():
                session.set_override(key, value)
            await to_completion(self._store.create(session_id, session.export_state(), model))
            self._register(session, _Saved(0, session.history.journal.revision))
            return session
        if overrides or model:

            def change() -> None:
                if model:
                    session.model = model
                for key, value in overrides.items():
                    session.set_override(key, value)

            await self.commit(session, change, model=model)
        return session

    async def _load(self, session_id: str) -> Session | None:
        session = self._sessions.get(session_id)
        if session is not None:
            return session
        stored = await self._store.load(session_id)
        if stored is None:
            return None
        if session_id in self._sessions:  # loaded meanwhile by a request not holding the lock
            return self._sessions[session_id]
        session = self._restore_loaded(stored)
        history = session.history
        saved = _Saved(len(history.transcript), history.journal.revision, stored.version)
        self._register(session, saved)
        if len(stored.transcript) >= memory.LARGE_APPEND:
            memory.release()  # validating a large session leaves free pages behind
        return session

    def _restore_loaded(self, stored: Loaded) -> Session:
        session = self._make(stored.session_id)
        session.history.restore(stored.raw, stored.counts, stored.transcript, stored.keys)
        session.import_state(stored.state)
        session.model = session.model or stored.model  # saved before the state carried it
        return session

    def _register(self, session: Session, saved: _Saved) -> None:
        self._sessions[session.session_id] = session
        self._saved[session.session_id] = saved
        self._inbox.setdefault(session.session_id, {})

    def _forget(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        self._saved.pop(session_id, None)
        self._inbox.pop(session_id, None)

    async def close(self, session_id: str) -> None:
        """Unload (it stays in the store); UnknownSession if it is nowhere."""
        if session_id not in self._sessions and not await self._store.exists(session_id):
            raise UnknownSession(session_id)
        self._forget(session_id)

    async def delete(self, session_id: str) -> None:
        found = await to_completion(self._store.delete(session_id))
        if not found and session_id not in self._sessions:
            raise UnknownSession(session_id)
        self._forget(session_id)

    async def delete_idle(self, session_id: str, idle_before: int | None) -> bool:
        """Delete a session if it has been idle since before ``idle_before`` (ms; ``None``:
        whenever it was last used); whether it went. Hold its lock."""
        deleted = await to_completion(
            self._store.delete_sessions([session_id], idle_before=idle_before)
        )
        if deleted:
            self._forget(session_id)
        return bool(deleted)

    async def statuses(self) -> list[Status]:
        """Every stored session's Status, most recently changed first, without loading any."""
        out: list[Status] = []
        settings = self._ide_settings()
        for summary in await self._store.summaries():
            live = self._sessions.get(summary.session_id)
            if live is not None:
                out.append(live.status())
                continue
            r = resolve(summary.state.overrides, settings)
            out.append(
                Status(
                    session_id=summary.session_id,
                    version=summary.state.version,
                    entry_count=summary.entry_count,
                    total_tokens=summary.total_tokens,
                    context_limit=r.values.context_limit,
                    threshold=r.threshold,
                    strategy=r.values.strategy,
                    saved_tokens=summary.state.saved_tokens,
                    pending_tokens=summary.state.cache.pending_tokens,
                    usage=summary.state.cache.usage,
                    masked_outputs=summary.state.masked_outputs,
                    masked_tokens=summary.state.masked_tokens,
                )
            )
        return out

    # -- changes ------------------------------------------------------------------------------

    @overload
    async def commit(
        self,
        session: Session,
        change: Callable[[], Awaitable[T]],
        *,
        cancellable: bool = False,
        model: str | None = None,
    ) -> T: ...

    @overload
    async def commit(
        self,
        session: Session,
        change: Callable[[], T],
        *,
        cancellable: bool = False,
        model: str | None = None,
    ) -> T: ...

    async def commit(
        self,
        session: Session,
        change: Callable[[], Any],
        *,
        cancellable: bool = False,
        model: str | None = None,
    ) -> Any:
        """Apply ``change`` (a plain or an async function) and save the session, all or
        nothing: the one place where a failed change is undone.

        With ``cancellable``, a cancellation while ``change`` runs (a compaction waiting for
        its summary) undoes it; once saving has begun, it completes regardless.
        """
        snapshot = session.snapshot()

        async def apply() -> Any:
            value = change()
            return await value if inspect.isawaitable(value) else value

        result: Any = None
        if cancellable:
            try:
                result = await apply()
            except BaseException:
                session.restore(snapshot)
                raise

        async def finish() -> Any:
            try:
                value = result if cancellable else await apply()
                await self._save(session, model)
            except BaseException:
                session.restore(snapshot)
                raise
            return value

        return await to_completion(finish())

    async def commit_then_save(
        self, session: Session, change: Callable[[], Awaitable[T]], *, model: str | None = None
    ) -> tuple[T, asyncio.Future[None]]:
        """``commit`` answered before its write: the change applied (undone if it fails or
        the caller is cancelled), what it changed taken for the store, and the write
        started; the future is done once it is on disk. A write that fails puts the session
        back as it was before the change, as ``commit`` does, and the future carries the
        error.

        For a caller whose answer does not wait for the disk (the proxy: its request goes
        upstream while the write runs). It keeps the session's lock until the future is
        done, so that nothing changes the session between the change and its write, or
        its undo."""
        snapshot = session.snapshot()
        try:
            value = await change()
            op, saved = self._save_op(session, model)
        except BaseException:
            session.restore(snapshot)
            raise

        async def write() -> None:
            try:
                saved.version = await self._store.save(op)
            except BaseException as exc:
                session.restore(snapshot)
                self._changed_elsewhere(session, exc)
                raise
            self._stored(session, saved)

        sid = session.session_id
        saving = self._saving[sid] = asyncio.ensure_future(write())
        saving.add_done_callback(lambda done: self._written(sid, done))
        return value, saving

    def _written(self, session_id: str, saving: asyncio.Future[None]) -> None:
        if self._saving.get(session_id) is saving:
            del self._saving[session_id]
        if saving.cancelled():
            return
        failed = saving.exception()
        if failed is not None:  # said here, whether or not anyone waits for it
            log.warning(
                "a session's change was not saved, and was undone: %s", type(failed).__name__
            )

    def saving(self, session_id: str) -> asyncio.Future[None] | None:
        """The write ``commit_then_save`` started for the session, while it runs."""
        return self._saving.get(session_id)

    async def settle_saves(self) -> None:
        """Wait for the writes ``commit_then_save`` started (before the store closes)."""
        while self._saving:
            await asyncio.gather(*self._saving.values(), return_exceptions=True)

    async def _save(self, session: Session, model: str | None) -> None:
        op, saved = self._save_op(session, model)
        try:
            saved.version = await self._store.save(op)
        except BaseException as exc:
            self._changed_elsewhere(session, exc)
            raise
        self._stored(session, saved)

    def _stored(self, session: Session, saved: _Saved) -> None:
        current = self._saved.get(session.session_id)
        if current is not None:  # (not when the session was unloaded meanwhile)
            current.transcript_len = saved.transcript_len
            current.revision = saved.revision
            current.version = saved.version

    def _changed_elsewhere(self, session: Session, exc: BaseException) -> None:
        """A save refused because another process saved the session since (its lock was
        lost with a broken connection): what this process holds is let go, to be loaded
        again by the next request."""
        if isinstance(exc, SessionChanged) and self._sessions.get(session.session_id) is session:
            self._forget(session.session_id)

    def _save_op(self, session: Session, model: str | None) -> tuple[SaveOp, _Saved]:
        """What the store lacks of the session, and how far it has it once that is written."""
        sid = session.session_id
        saved = self._saved[sid]
        history = session.history
        transcript = history.transcript_json
        new_transcript = [(s, transcript[s]) for s in range(saved.transcript_len, len(transcript))]
        changes = history.journal.since(saved.revision)
        if changes is None:
            working = _all_rows(history)
        else:
            working = _changed_rows(history, changes, new_transcript)
        op = SaveOp(
            session_id=sid,
            state=session.export_state(),
            entry_count=history.curated_count,
            total_tokens=history.total_tokens,
            new_transcript=new_transcript,
            working=working,
            model=model,
            calls=session.take_calls(),
            version=saved.version,
        )
        return op, _Saved(len(transcript), history.journal.revision, saved.version)

    # -- disk writes --------------------------------------------------------------------------

    def note_disk_write(self, path: str, when: int) -> None:
        """A write seen on disk or reported by the editor, for every loaded session."""
        for inbox in self._inbox.values():
            if when > inbox.get(path, -1):
                inbox[path] = when

    def take_disk_writes(self, session: Session) -> None:
        """Hand the writes seen so far to the session (call under its lock, before compact)."""
        inbox = self._inbox.get(session.session_id)
        if not inbox:
            return
        writes = list(inbox.items())
        inbox.clear()
        for path, when in writes:
            session.note_write(path, when)

    async def settle_disk(self, session: Session) -> None:
        """Give the compaction every write that happened before it (see watcher.py)."""
        self.take_disk_writes(session)
        if not session.resolved().values.watch_enabled:
            return
        reads = session.read_times()
        for path, when in await writes_after_reads(reads):
            session.note_write(path, when)


def _row(key: int, entry: Blob, tokens: int, seq: int | None) -> WorkingRow:
    return WorkingRow(key, seq, entry if seq is None else None, tokens)


def _all_rows(history: History) -> WorkingChange:
    """Every working row anew (the history was replaced, or the journal lost track)."""
    seq_of = {id(e): seq for seq, e in enumerate(history.transcript_json)}
    rows = [
        _row(key, entry, tokens, seq_of.get(id(entry)))
        for key, entry, tokens in zip(history.keys, history.raw_json, history.tokens, strict=True)
    ]
    return WorkingChange(rewrite=True, rows=rows)


def _changed_rows(
    history: History, changes: Sequence[Change], appended: Sequence[tuple[int, Blob]]
) -> WorkingChange:
    """The rows of the entries the changes touched: written if still there, else deleted.

    An entry appended in this commit refers to its transcript row; an edited one is stored
    in full (edits make new entries; none of them is a transcript entry).
    """
    seq_of = {id(entry): seq for seq, entry in appended}
    touched = sorted({key for c in changes for key, _ in (*c.removed, *c.added)})
    deleted: list[int] = []
    rows: list[WorkingRow] = []
    for key in touched:
        index = history.position(key)
        if index is None:
            deleted.append(key)
        else:
            entry = history.raw_json[index]
            rows.append(_row(key, entry, history.tokens[index], seq_of.get(id(entry))))
    return WorkingChange(deleted=deleted, rows=rows)
