"""A resent conversation taken in, under its session's lock: ``history/sync``'s entries, and
the proxy's bulk paths, a sync and what follows it in one commit.

A sync sends the whole conversation again: the session says how many of its entries it holds
(by their digests), and only the others are parsed and counted. The proxy does a sync and a
compaction (or the call told to the session as passed on as it came) as one request: one lock,
one commit (one write to the disk where the two make two), all or nothing like each of them.
What is small is done on the event loop: the digests a ``Conversation`` holds made already, a
handful of new entries counted (a hand-off to a thread costs more).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence

from ...core.compression.types import CompressionError, SummarizerError
from ...core.content import IContent
from ...core.history.history import Prepared
from ...core.session.replies import Status
from ...core.session.reply import CompactResult
from ...core.session.session import Session, SyncOutcome
from ...core.settings import SettingError
from . import memory
from .conversation import Conversation
from .conversation import conversation as resent_conversation
from .decided import decided
from .sessions import Registry, UnknownSession
from .wire import SyncParams, invalid_params, parse_entries_from, parse_params, summarizer_failed

log = logging.getLogger(__name__)

INLINE_ENTRIES = 16
"""``sync_compact`` digests and counts up to this many new entries on the event loop."""


async def open_session(
    registry: Registry, session_id: str, model: str | None, limit: int | None
) -> Session:
    """``history/open``'s session (``Registry.open``), its context limit an override."""
    overrides: dict[str, object] = {} if limit is None else {"contextLimit": limit}
    try:
        return await registry.open(session_id, model, overrides)
    except SettingError as err:
        raise invalid_params([f"contextLimit: {err}"]) from None


class Syncs:
    def __init__(
        self,
        registry: Registry,
        synced: Callable[[str, Session, Status], None],
        watch: Callable[[], Awaitable[None]],
    ) -> None:
        self._registry = registry
        self._synced = synced
        """Told of each sync and what followed it, once committed, under the lock."""
        self._watch = watch
        """Brings the disk watcher up to date with the sessions loaded."""

    async def then(
        self,
        raw: object,
        then: Callable[[Session], Awaitable[CompactResult]],
        overrides: Mapping[str, object] | None = None,
        save_later: bool = False,
    ) -> CompactResult:
        """A sync and ``then`` in one commit (``Daemon.sync_compact`` says what
        ``overrides`` and ``save_later`` do)."""
        conversation = resent_conversation(raw)
        p = parse_params(SyncParams, raw)
        if len(conversation) <= INLINE_ENTRIES:
            digests = conversation.digests()
        else:
            digests = await asyncio.to_thread(conversation.digests)
        lock = self._registry.lock(p.session_id)
        await lock.acquire()
        saving: asyncio.Future[None] | None = None
        try:
            taken = await self.entries(p.session_id, conversation, digests)
            session, held, new, prepared = taken

            outcome: list[SyncOutcome] = []  # for the DEBUG line

            async def change() -> CompactResult:
                if p.model:
                    session.model = p.model
                if p.context_limit is not None:
                    session.set_override("contextLimit", p.context_limit)
                for key, value in (overrides or {}).items():
                    if session.overrides.get(key) != value:
                        session.set_override(key, value)
                outcome.append(session.sync(held, digests, prepared))
                # After the sync: the reads it appended are settled too, as a compact's are.
                await self._registry.settle_disk(session)
                return await then(session)

            try:
                if save_later:
                    result, saving = await self._registry.commit_then_save(
                        session, change, model=p.model
                    )
                else:
                    result = await self._registry.commit(
                        session, change, cancellable=True, model=p.model
                    )
            except SummarizerError as err:
                raise summarizer_failed(str(err)) from None
            except CompressionError as err:
                provider = session.resolved().values.summarizer_provider
                raise summarizer_failed(f"summarizer '{provider}' failed: {err}") from None
            conversation.settle(digests)
            self._synced(p.session_id, session, result.status)
        finally:
            if saving is None:
                lock.release()
            else:  # held until the commit is on disk
                saving.add_done_callback(lambda _: lock.release())
        if log.isEnabledFor(logging.DEBUG):
            synced = outcome[0]
            log.debug(
                "sync %s: %d entries sent, %d held already, %d appended, %s",
                p.session_id,
                len(digests),
                held,
                synced.appended,
                "no fork" if synced.forked_at is None else f"forked at {synced.forked_at}",
            )
            log.debug("compact %s: %s", p.session_id, decided(result))
        if len(new) >= memory.LARGE_APPEND:
            memory.release()
        await self._watch()
        return result

    async def entries(
        self, session_id: str, conversation: Conversation, digests: list[bytes]
    ) -> tuple[Session, int, list[IContent], Prepared]:
        """What a sync appends, under the session's lock: the session (opened when new),
        how many of ``digests`` it holds already, the entries after those (as the client's
        bulk path gave them, else parsed), and those entries counted (on a thread when many)."""
        session = await self._registry.find(session_id)
        held = session.sync_point(digests) if session is not None else 0
        given = conversation.entries_from(held)
        new = given if given is not None else parse_entries_from(conversation.raw_from(held), held)
        if session is None:
            session = await open_session(self._registry, session_id, None, None)
        if len(new) <= INLINE_ENTRIES:
            prepared = session.prepare(new)
        else:
            prepared = await asyncio.to_thread(session.prepare, new)
        return session, held, list(new), prepared

    async def warm(self, session_id: str, digests: Sequence[bytes]) -> list[bytes] | None:
        """Load a stored session and make what its next compaction would make first
        (``Session.warm``), off the event loop; its working view's entries as stored, or None
        when it is not stored."""
        async with self._registry.lock(session_id):
            try:
                session = await self._registry.get(session_id)
            except UnknownSession:
                return None
            await asyncio.to_thread(session.warm, digests)
            blobs = list(session.history.raw_json)
        if len(blobs) >= memory.LARGE_APPEND:
            memory.release()  # loading it left free pages behind
        return blobs
