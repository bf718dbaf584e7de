"""A session's lock: the one lock a session has, around each request that reads or changes it.

Within a process an asyncio lock serializes the session's requests (first come, first served).
When the store is shared with other processes (a database: a gateway's replicas), the lock is
also the database's (``Store.lock``), taken second and given back first, so that a session is
changed by one request at a time across every process; and once both are held the registry
checks that the session it holds in memory is the stored one (``fresh``: another process may
have changed it since), before the request reads it. With a storage folder the store has
nothing to wait for and nothing is checked: the process holds the folder alone.

``release`` may be called from a callback (the proxy gives the lock back when its commit is on
disk): the database's lock is then given back in a task, and the daemon's own only after it,
so that the next request of this process never waits on the database for its own lock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from ..storage.store import Store

log = logging.getLogger(__name__)


class SessionLock:
    def __init__(
        self,
        session_id: str,
        store: Store,
        fresh: Callable[[str, int | None], Awaitable[None]],
    ) -> None:
        self.session_id = session_id
        self._store = store
        self._fresh = fresh
        self._local = asyncio.Lock()
        self._releasing: set[asyncio.Future[None]] = set()

    def locked(self) -> bool:
        return self._local.locked()

    @property
    def here(self) -> asyncio.Lock:
        """The daemon's own lock alone: for work on the session held in memory that stores
        nothing (packing it), which other processes need not wait for."""
        return self._local

    async def acquire(self) -> bool:
        await self._local.acquire()
        if not self._store.shared:
            return True
        try:
            version = await self._store.lock(self.session_id)
        except BaseException:
            self._local.release()
            raise
        try:
            await self._fresh(self.session_id, version)
        except BaseException:
            self.release()
            raise
        return True

    def release(self) -> None:
        if not self._store.shared:
            self._local.release()
            return
        task = asyncio.ensure_future(self._unlock())
        self._releasing.add(task)
        task.add_done_callback(self._releasing.discard)

    async def _unlock(self) -> None:
        try:
            await self._store.unlock(self.session_id)
        except Exception as exc:  # a lost connection gave it back already
            log.debug("a session's lock not given back: %s", type(exc).__name__)
        finally:
            self._local.release()

    async def __aenter__(self) -> None:
        await self.acquire()

    async def __aexit__(self, *exc: object) -> None:
        if self._store.shared:
            await self._unlock()
        else:
            self._local.release()
