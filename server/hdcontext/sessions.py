"""The sessions a daemon serves: loaded on demand from the store, committed on every change.

Any request that names a stored session works, also after a restart: a session not in memory
is loaded from the store the first time a request names it. Each change to a session is one
``commit``: the change is applied in memory, saved in one transaction, and only then answered;
if anything fails on the way (a bad setting, a summarizer error, a full disk), the session is
put back exactly as it was, in memory and on disk alike. Once a change is being saved it runs
to its end even if the request is cancelled, so memory and disk never disagree.

Requests for one session are serialized by that session's lock here (first come, first
served), which wraps the whole request: settle, compact, save, answer. Requests for different
sessions interleave freely, so a slow summary for one never holds up another.

File writes seen on disk wait in a per-session inbox until the session's next compaction takes
them, under its lock, so a compaction's view of the disk never changes halfway through.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar, cast

from .content import IContent
from .session import Session, SessionState, Status
from .settings import resolve
from .store import Loaded, SaveOp, Store, WorkingRow

T = TypeVar("T")


class UnknownSession(LookupError):
    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"unknown session {session_id!r}")


@dataclass
class _Saved:
    """What the store holds of a loaded session, to save only what changed."""

    transcript_len: int
    raw: list[IContent]
    seq_of: dict[int, int]  # id() of a transcript entry -> its seq (entries stay alive)


@dataclass(frozen=True)
class _Snapshot:
    raw: list[IContent]
    counts: list[int]
    transcript: list[IContent]
    state: SessionState


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
        self._locks: dict[str, asyncio.Lock] = {}
        self._inbox: dict[str, dict[str, int]] = {}

    # -- lookups ------------------------------------------------------------------------------

    def lock(self, session_id: str) -> asyncio.Lock:
        """The lock that serializes requests for ``session_id`` (hold it around each one)."""
        lock = self._locks.get(session_id)
        if lock is None:
            lock = self._locks[session_id] = asyncio.Lock()
        return lock

    def loaded(self) -> list[Session]:
        return list(self._sessions.values())

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
            for key, value in overrides.items():
                session.set_override(key, value)
            await to_completion(self._store.create(session_id, session.export_state(), model))
            self._register(session, _Saved(0, [], {}))
            return session
        if overrides or model:

            async def change() -> None:
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
        seq_of = {id(e): i for i, e in enumerate(session.history.transcript)}
        self._register(
            session, _Saved(len(session.history.transcript), list(session.history.raw), seq_of)
        )
        return session

    def _restore_loaded(self, stored: Loaded) -> Session:
        session = self._make(stored.session_id)
        session.history.restore(stored.raw, stored.counts, stored.transcript)
        session.import_state(stored.state)
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
                    context_limit=r.context_limit,
                    threshold=r.threshold,
                    strategy=r.strategy,
                    saved_tokens=summary.state.saved_tokens,
                )
            )
        return out

    # -- changes ------------------------------------------------------------------------------

    async def commit(
        self,
        session: Session,
        change: Callable[[], Awaitable[T]],
        *,
        cancellable: bool = False,
        model: str | None = None,
    ) -> T:
        """Apply ``change`` and save the session, all or nothing.

        With ``cancellable``, a cancellation while ``change`` runs (a compaction waiting for
        its summary) undoes it; once saving has begun, it completes regardless.
        """
        snapshot = _snapshot(session)
        result: T | None = None
        if cancellable:
            try:
                result = await change()
            except BaseException:
                _restore(session, snapshot)
                raise

        async def finish() -> T:
            try:
                value = result if cancellable else await change()
                await self._save(session, model)
            except BaseException:
                _restore(session, snapshot)
                raise
            return cast(T, value)

        return await to_completion(finish())

    async def _save(self, session: Session, model: str | None) -> None:
        sid = session.session_id
        saved = self._saved[sid]
        history = session.history
        transcript = history.transcript
        new_transcript = [(s, transcript[s]) for s in range(saved.transcript_len, len(transcript))]
        added = {id(entry): seq for seq, entry in new_transcript}

        def seq_of(entry: IContent) -> int | None:
            key = id(entry)
            return saved.seq_of[key] if key in saved.seq_of else added.get(key)

        raw, counts = list(history.raw), list(history.tokens)
        same = 0
        limit = min(len(raw), len(saved.raw))
        while same < limit and raw[same] is saved.raw[same]:
            same += 1
        rows = []
        for pos in range(same, len(raw)):
            seq = seq_of(raw[pos])
            rows.append(WorkingRow(pos, seq, raw[pos] if seq is None else None, counts[pos]))
        unchanged = same == len(raw) == len(saved.raw)
        op = SaveOp(
            session_id=sid,
            state=session.export_state(),
            entry_count=history.curated_count,
            total_tokens=history.total_tokens,
            new_transcript=new_transcript,
            working_from=None if unchanged else same,
            working=rows,
            model=model,
        )
        await self._store.save(op)
        saved.seq_of.update(added)
        saved.transcript_len = len(transcript)
        saved.raw = raw

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


def _snapshot(session: Session) -> _Snapshot:
    h = session.history
    return _Snapshot(list(h.raw), list(h.tokens), list(h.transcript), session.export_state())


def _restore(session: Session, snap: _Snapshot) -> None:
    session.history.restore(snap.raw, snap.counts, snap.transcript)
    session.import_state(snap.state)
