"""Connections to a PostgreSQL database, each used by one thread of the store's own.

The event loop never waits on the database: each piece of work runs on a worker thread, with
that thread's connection (made when first needed, made again after it broke), so a save of one
session never waits for a load of another, and a request that gives up (the proxy's bound)
leaves its work to end on its thread rather than half-done on a connection. Sync connections on
threads, as the SQLite store does it, rather than asyncio ones: a cancelled asyncio query
leaves its connection to be mended, a thread's query simply ends.

A database that goes away mid-run is said in the log once (``Health``), and once more when it
is back; meanwhile each call fails at once with ``StoreUnavailable`` (a connection is tried
again at most every ``RETRY_S``), and the proxy forwards its requests as they came. A message
never holds the URL's password (``location.redacted``), nor a value of a row.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

import psycopg
from psycopg.conninfo import conninfo_to_dict

from .location import redacted
from .records import StoreError, StoreUnavailable

T = TypeVar("T")
log = logging.getLogger(__name__)

Connection = psycopg.Connection[Any]

CONNECT_TIMEOUT_S = 5
"""How long a connection is tried (unless the URL says ``connect_timeout``)."""
RETRY_S = 1.0
"""While the database is away, a connection is tried again at most this often."""
APPLICATION_NAME = "hdcontext"


def reason(exc: BaseException) -> str:
    """A psycopg error in one line, as libpq says it (hosts and ports, never a password)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text.removeprefix("connection failed: ")


class Health:
    """Whether the database answers, said in the log when that changes (once each way)."""

    def __init__(self, shown: str) -> None:
        self.shown = shown
        self.down = False
        self.generation = 0
        """Counts the losses: a connection made before the last one is not tried again (it
        went with the database, found out or not yet), so one loss is said once."""
        self.quiet = True
        """Nothing said while the store opens: its caller says a failed start, in one line."""
        self._tried = 0.0
        self._guard = threading.Lock()

    def lost(self, exc: BaseException) -> StoreUnavailable:
        with self._guard:
            self._tried = time.monotonic()
            if not self.down:
                self.down = True
                self.generation += 1
                if self.quiet:
                    return StoreUnavailable(
                        f"the database {self.shown} cannot be reached: {reason(exc)}"
                    )
                log.warning(
                    "the database %s cannot be reached (%s): requests go on as the agents sent "
                    "them, without hdcontext, until it is back",
                    self.shown,
                    reason(exc),
                )
        return StoreUnavailable(f"the database {self.shown} cannot be reached: {reason(exc)}")

    def waiting(self) -> bool:
        """Whether a connection was tried too lately to try again now."""
        return self.down and time.monotonic() - self._tried < RETRY_S

    def fine(self) -> None:
        if self.down:
            with self._guard:
                if self.down:
                    self.down = False
                    log.warning("the database %s answers again: requests are carried", self.shown)


class Connections:
    """``workers`` threads, each with its connection to ``url``; ``setup`` runs on each new
    connection (its ``search_path``, its ``synchronous_commit``)."""

    def __init__(
        self,
        url: str,
        *,
        workers: int,
        setup: Callable[[Connection], None],
        health: Health,
        name: str = "hdcontext-pg",
    ) -> None:
        self.shown = redacted(url)
        self.health = health
        self._params = _params(url)
        self._setup = setup
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._local = threading.local()
        self._made: list[Connection] = []
        self._guard = threading.Lock()

    async def run(self, fn: Callable[[Connection], T]) -> T:
        """``fn`` with a connection, on a worker thread; StoreUnavailable when the database
        cannot be reached, StoreError for any other of its errors (one line)."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, self.call, fn)

    def submit(self, fn: Callable[[Connection], object]) -> Future[object]:
        """``fn`` on a worker thread, not waited for (its errors are dropped)."""
        return self._executor.submit(self.call, fn)

    def call(self, fn: Callable[[Connection], T]) -> T:
        """``run``'s work, on the calling thread (a worker's)."""
        conn = self._connection()
        try:
            result = fn(conn)
        except psycopg.OperationalError as exc:
            if conn.broken or conn.closed:
                self._drop(conn)
                raise self.health.lost(exc) from None
            raise StoreError(f"the database {self.shown}: {reason(exc)}") from None
        except psycopg.Error as exc:
            raise StoreError(f"the database {self.shown}: {reason(exc)}") from None
        self.health.fine()
        return result

    def _connection(self) -> Connection:
        conn: Connection | None = getattr(self._local, "conn", None)
        made: int = getattr(self._local, "generation", -1)
        fresh = made == self.health.generation
        if conn is not None and fresh and not conn.closed and not conn.broken:
            return conn
        if conn is not None:
            self._drop(conn)
        if self.health.waiting():
            raise StoreUnavailable(f"the database {self.shown} cannot be reached")
        try:
            conn = psycopg.connect(**self._params, autocommit=True)
            self._setup(conn)
        except psycopg.OperationalError as exc:
            raise self.health.lost(exc) from None
        except psycopg.Error as exc:
            raise StoreError(f"the database {self.shown}: {reason(exc)}") from None
        self._local.conn = conn
        self._local.generation = self.health.generation
        with self._guard:
            self._made.append(conn)
        return conn

    def _drop(self, conn: Connection) -> None:
        self._local.conn = None
        with self._guard:
            if conn in self._made:
                self._made.remove(conn)
        with contextlib.suppress(psycopg.Error):
            conn.close()

    def close(self) -> None:
        """Wait for the work under way, then close every connection (once)."""
        self._executor.shutdown(wait=True)
        with self._guard:
            made, self._made = self._made, []
        for conn in made:
            with contextlib.suppress(psycopg.Error):
                conn.close()


def _params(url: str) -> dict[str, Any]:
    """The URL's connection parameters, with a time limit to connect and TCP keepalives
    when it says none (a database that vanished is found within seconds, not hours)."""
    params: dict[str, Any] = dict(conninfo_to_dict(url))
    params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
    params.setdefault("application_name", APPLICATION_NAME)
    params.setdefault("keepalives", 1)
    params.setdefault("keepalives_idle", 10)
    params.setdefault("keepalives_interval", 5)
    params.setdefault("keepalives_count", 3)
    return params
