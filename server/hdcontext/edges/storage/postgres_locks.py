"""Each session's lock across every process that shares the database: an advisory lock.

A request changes a session under its lock, from loading it to its commit on disk; with
several processes (a gateway's replicas) on one database, that lock must be the database's.
PostgreSQL's session-level advisory locks are it: held by a connection until it gives them
back, and given back by the server when the connection dies (a replica killed mid-request
leaves no session locked). The key is 64 bits of a keyed BLAKE2 of the session's id: two ids
share a lock once in 2^64, and hdcontext's keys stay apart from another application's.

One connection of its own holds every lock the process has (a lock is a connection's, so it
must be given back by the one that took it), on one thread, so a request that waits never
holds a connection of the store's workers. It asks ``pg_try_advisory_lock`` and, when another
process has the session, asks again after a short wait that doubles up to ``LONGEST_WAIT_S``:
a session is wanted by two processes at once only when an agent sends a request of a
conversation before the last one ended, and waiting in the database would hold a connection
per waiter. A request that gives up while its lock is being taken leaves no lock behind.

A lock held by a connection that broke is gone with it (the server gave it back); the save
that follows checks the session's version all the same (``postgres_store.py``), so another
process's change is never written over.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
from collections.abc import Callable
from typing import Any, TypeVar

from .postgres_pool import Connection, Connections

T = TypeVar("T")

FIRST_WAIT_S = 0.002
LONGEST_WAIT_S = 0.05
_PERSON = b"hdcontext-lock"


def lock_key(session_id: str) -> int:
    """The session's advisory lock key (a signed 64-bit integer, as PostgreSQL takes it)."""
    digest = hashlib.blake2b(session_id.encode("utf-8"), digest_size=8, person=_PERSON)
    return int.from_bytes(digest.digest(), "big", signed=True)


class SessionLocks:
    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        """One worker, one connection: the one that holds the locks."""
        self._held: dict[int, int] = {}
        """Key -> the backend pid of the connection that took it (gone with it)."""

    async def acquire(self, session_id: str, then: Callable[[Connection], T]) -> T:
        """Take the session's lock, waiting while another process has it; then ``then`` on
        the connection that holds it, in the same call (what the session is now: read once
        no other process can change it, without a second trip to a worker)."""
        key = lock_key(session_id)
        wait = FIRST_WAIT_S
        while (taken := await self._try(key, then)) is None:
            await asyncio.sleep(wait)
            wait = min(wait * 2, LONGEST_WAIT_S)
        return taken[0]

    async def release(self, session_id: str) -> None:
        key = lock_key(session_id)
        pid = self._held.pop(key, None)
        if pid is None:
            return

        def unlock(conn: Connection) -> None:
            if conn.info.backend_pid == pid:  # else the server gave it back with the connection
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

        await self._connections.run(unlock)

    async def _try(self, key: int, then: Callable[[Connection], T]) -> tuple[T] | None:
        def take(conn: Connection) -> tuple[int, T] | None:
            row: Any = conn.execute("SELECT pg_try_advisory_lock(%s)", (key,)).fetchone()
            if row is None or not row[0]:
                return None
            try:
                return conn.info.backend_pid, then(conn)
            except BaseException:
                with contextlib.suppress(Exception):  # (a broken connection gave it back)
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
                raise

        taking = asyncio.ensure_future(self._connections.run(take))
        try:
            taken = await asyncio.shield(taking)
        except asyncio.CancelledError:
            # Given up while the lock was being taken: give it back once it is.
            taking.add_done_callback(lambda done: self._give_back(key, done))
            raise
        if taken is None:
            return None
        self._held[key] = taken[0]
        return (taken[1],)

    def _give_back(self, key: int, done: asyncio.Future[Any]) -> None:
        if done.cancelled() or done.exception() is not None or done.result() is None:
            return
        pid = done.result()[0]

        def unlock(conn: Connection) -> None:
            if conn.info.backend_pid == pid:
                conn.execute("SELECT pg_advisory_unlock(%s)", (key,))

        self._connections.submit(unlock)
