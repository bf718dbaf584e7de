"""hdcontext inside one LiteLLM worker process: its daemon and compactor, started on first use.

LiteLLM loads the callback when it reads its config, before it has an event loop serving
requests; the daemon's store and timers belong to that loop. So nothing starts at import: the
first request that needs hdcontext starts it, on LiteLLM's loop, and waits for it within the
compactor's bound (a start that takes longer leaves that request as it came, and the next one
finds it ready). One daemon and one compactor serve the whole process, as in ``hdcontext
proxy``: the same sessions, storage, retention and prices.

Where the sessions are kept is read from the environment once (``Config``), and the store is
opened in one place, ``open_daemon``. ``HDCONTEXT_DATABASE_URL`` names a PostgreSQL database
(or ``HDCONTEXT_STORAGE`` a ``postgresql://`` URL): every worker and every replica shares it,
each session locked in the database while one request changes it, so any of them serves any
request of a conversation (``edges/storage/postgres_store.py``). Else ``HDCONTEXT_STORAGE``
names a folder (default: ``litellm`` in the daemon's own data folder, private to the user
LiteLLM runs as); a SQLite folder is held by one process at a time, so a second worker on the
same folder finds it locked and passes its requests on as they came, saying why once.

It stops when LiteLLM does, before LiteLLM's own shutdown (``at_stop``: ``handler.py`` puts
it there), or else when the server's loop ends (a task that waits forever is cancelled then): it
finishes what is under way, saves the last calls' usage, keeps the last requests for the next
start and closes the store. (uvicorn raises SIGTERM again once its lifespan has ended, which
ends the process before its loop could cancel anything: hence LiteLLM's shutdown first.) A
failure to start (a folder that cannot be made, a locked one) is said once, without a
secret, and hdcontext stays out of the way for the rest of the process's life.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..core.tokens import encoding
from ..edges.daemon.daemon import Daemon
from ..edges.daemon.retention import Retention, parse_days
from ..edges.proxy.compactor import DEFAULT_BOUND_S, Compactor
from ..edges.proxy.kept import GATEWAY, Capacity
from ..edges.proxy.run import proxy_daemon, proxy_settings
from ..edges.proxy.uncarried import AS_SENT, Uncarried
from ..edges.storage import storage_lock
from ..edges.storage.folder import NOTICE_NAME, folder_problem, mark_once, prepare_folder
from ..edges.storage.location import Location, is_database_url, redacted
from ..edges.storage.records import StoreError
from .bodies import APIS
from .owners import OwnerBook

log = logging.getLogger(__name__)

STORAGE_ENV = "HDCONTEXT_STORAGE"
DATABASE_ENV = "HDCONTEXT_DATABASE_URL"
BOUND_ENV = "HDCONTEXT_BOUND_S"
RETENTION_ENV = "HDCONTEXT_RETENTION_DAYS"
CONTEXT_LIMIT_ENV = "HDCONTEXT_CONTEXT_LIMIT"
KEPT_ENV = "HDCONTEXT_KEPT_SESSIONS"
STORE_EVERY_S = 5.0
"""How often the counts of the requests hdcontext did not carry are added to the store."""


class Unavailable(RuntimeError):
    """Why hdcontext cannot serve this process, in one line a log may show (no secret)."""


def default_storage() -> Path:
    """``litellm`` in the daemon's data folder: apart from a developer's own ``hdcontext
    proxy`` or editor, whose folder another process holds."""
    import platformdirs

    return Path(platformdirs.user_data_dir("hdcontext", appauthor=False)) / "litellm"


@dataclass(frozen=True)
class Config:
    storage: Location = field(default_factory=lambda: Location(folder=default_storage()))
    """A folder, or a database's URL (``HDCONTEXT_DATABASE_URL``)."""
    bound_s: float = DEFAULT_BOUND_S
    retention: Retention = field(default_factory=Retention)
    context_limit: int | None = None
    """The context window the sessions compress within (``None``: each model's own), as
    ``hdcontext proxy --context-limit``."""
    kept: Capacity = GATEWAY
    """How many conversations the process keeps in memory between their requests
    (``edges/proxy/kept.py``)."""


def config_from(environ: Mapping[str, str]) -> Config:
    """The callback's settings from the environment; Unavailable naming the variable at fault."""
    storage = environ.get(STORAGE_ENV, "").strip()
    url = environ.get(DATABASE_ENV, "").strip() or None
    bound_s, days = DEFAULT_BOUND_S, Retention().days
    if raw := environ.get(BOUND_ENV, "").strip():
        try:
            bound_s = float(raw)
        except ValueError:
            raise Unavailable(f"{BOUND_ENV} is not a number of seconds: {raw[:40]!r}") from None
        if not 0 < bound_s <= 600:
            raise Unavailable(f"{BOUND_ENV} must be more than 0 and at most 600: {raw[:40]!r}")
    if raw := environ.get(RETENTION_ENV, "").strip():
        try:
            days = parse_days(raw)
        except ValueError as exc:
            raise Unavailable(f"{RETENTION_ENV}: {exc}") from None
    limit = None
    if raw := environ.get(CONTEXT_LIMIT_ENV, "").strip():
        if not raw.isdigit() or int(raw) < 1000:
            raise Unavailable(f"{CONTEXT_LIMIT_ENV} must be a number of tokens, 1000 or more")
        limit = int(raw)
    if url is not None:
        if not is_database_url(url):
            raise Unavailable(f"{DATABASE_ENV} is not a postgresql:// URL: {redacted(url)}")
        where = Location(url=url)
    elif is_database_url(storage):
        where = Location(url=storage)
    else:
        where = Location(folder=Path(storage).expanduser() if storage else default_storage())
    kept = GATEWAY
    if raw := environ.get(KEPT_ENV, "").strip():
        if not raw.isdigit() or not 1 <= int(raw) <= 100_000:
            raise Unavailable(f"{KEPT_ENV} must be a number of conversations, 1 to 100000")
        kept = replace(GATEWAY, memos=int(raw), sessions=int(raw))
    return Config(
        storage=where,
        bound_s=bound_s,
        retention=Retention(days),
        context_limit=limit,
        kept=kept,
    )


def open_daemon(config: Config) -> Daemon:
    """The one place the callback opens its store: the daemon over it, not started. A database
    (PostgreSQL, shared by every worker and replica) needs psycopg, the ``postgres`` extra; a
    folder is made private and locked for this process, as ``hdcontext proxy`` locks its own."""
    where = config.storage
    if where.url is not None:
        try:
            import psycopg  # noqa: F401
        except ImportError:
            raise Unavailable(
                f"{DATABASE_ENV} names a database ({where.shown}), which needs psycopg: "
                'pip install "hdcontext[litellm,postgres]"'
            ) from None
        return proxy_daemon(where, proxy_settings(), config.retention)
    folder = where.folder
    assert folder is not None
    try:
        prepare_folder(folder)
        storage_lock.acquire(folder)
    except storage_lock.StorageLocked as exc:
        raise Unavailable(
            f"{exc}: one LiteLLM worker process serves hdcontext per storage folder (run one "
            f"worker per replica, give each its own {STORAGE_ENV}, or share a database: "
            f"{DATABASE_ENV})"
        ) from None
    except (StoreError, OSError, ValueError) as exc:
        message = str(exc) if isinstance(exc, StoreError) else folder_problem(folder, exc)
        raise Unavailable(message) from None
    if mark_once(folder, NOTICE_NAME):
        log.warning(
            "hdcontext: the conversations that go through LiteLLM are kept in %s (a SQLite "
            "database only this user can read), each within its owner; idle ones are %s "
            "(%s changes that); 'hdcontext stats --storage %s --by user' shows the savings",
            folder,
            config.retention.describe(),
            RETENTION_ENV,
            folder,
        )
    return proxy_daemon(where, proxy_settings(), config.retention)


def _release(where: Location) -> None:
    """Give the folder's lock back (a database holds none of the process's)."""
    if where.folder is not None:
        with contextlib.suppress(Exception):
            storage_lock.release(where.folder)


@dataclass
class Runtime:
    """What serves one process: the daemon, the compactor, the owners seen, the requests not
    carried (counted for ``hdcontext stats``)."""

    config: Config
    daemon: Daemon
    compactor: Compactor
    owners: OwnerBook
    uncarried: Uncarried = field(default_factory=Uncarried)
    _storing: asyncio.Task[None] | None = None

    def note_uncarried(self, api: str, reason: str) -> None:
        self.uncarried.note(api, AS_SENT, reason)

    async def store_uncarried(self) -> None:
        rows = self.uncarried.take()
        if not rows:
            return
        try:
            await self.daemon.store.add_passed(rows)
        except Exception as exc:
            self.uncarried.give_back(rows)
            log.warning("hdcontext: requests not carried not counted: %s", type(exc).__name__)

    async def _store_every(self) -> None:
        while True:
            await asyncio.sleep(STORE_EVERY_S)
            await self.store_uncarried()

    async def stop(self) -> None:
        """Finish what is under way, save what is not saved, keep the last requests for the
        next start, close the store and give the folder back."""
        if self._storing is not None:
            self._storing.cancel()
            await asyncio.wait({self._storing})
        try:
            await self.compactor.close()
            await self.compactor.keep_for_restart()
            await self.store_uncarried()
            await self.owners.flush()
            await self.daemon.shutdown()
        except Exception as exc:  # stopping goes on; only the last calls' usage is lost
            log.warning("hdcontext: not everything was saved at stop: %s", type(exc).__name__)
        finally:
            await self.daemon.store.close()
            _release(self.config.storage)


async def start_runtime(config: Config) -> Runtime:
    """Open the store and start what serves this process (Unavailable if it cannot)."""
    daemon = open_daemon(config)
    try:
        await daemon.start()
    except StoreError as exc:
        await daemon.store.close()
        _release(config.storage)
        raise Unavailable(str(exc)) from None
    # The token encoding is read now, not within the first request (0.45 s).
    await asyncio.to_thread(encoding)
    compactor = Compactor(daemon, config.bound_s, capacity=config.kept)
    runtime = Runtime(config, daemon, compactor, OwnerBook(daemon.store))
    runtime.compactor.context_limit = config.context_limit
    runtime.compactor.resume(APIS)
    runtime._storing = asyncio.ensure_future(runtime._store_every())
    return runtime


AtStop = Callable[[Callable[[], Awaitable[None]]], None]
"""Registers what to run when the server stops, on its loop, before it closes."""


class Process:
    """This process's runtime: started on first use, on the loop that asks for it, once; off
    for good (and said once) when it cannot start."""

    def __init__(
        self,
        config: Callable[[], Config] = lambda: config_from(os.environ),
        at_stop: AtStop | None = None,
    ) -> None:
        self._config = config
        self._at_stop = at_stop
        self._starting: asyncio.Task[Runtime] | None = None
        self._runtime: Runtime | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stays: asyncio.Task[None] | None = None
        self.off: str | None = None
        """Why hdcontext serves nothing in this process (``None``: it does, or will)."""

    @property
    def runtime(self) -> Runtime | None:
        return self._runtime

    async def ready(self) -> Runtime | None:
        """The runtime, started if need be; ``None`` while it starts past the bound, or when
        it cannot start (each request then goes on as it came)."""
        if self._runtime is not None:
            return self._runtime if asyncio.get_running_loop() is self._loop else None
        if self.off is not None:
            return None
        if self._starting is None:
            try:
                config = self._config()
            except Unavailable as exc:
                self._give_up(str(exc))
                return None
            self._loop = asyncio.get_running_loop()
            self._starting = asyncio.ensure_future(start_runtime(config))
            self._starting.add_done_callback(self._started)
            bound = config.bound_s
        else:
            bound = self._bound()
        if asyncio.get_running_loop() is not self._loop:
            return None  # another loop than the one hdcontext runs on: not ours to serve
        await asyncio.wait({self._starting}, timeout=bound)
        return self._runtime

    def _bound(self) -> float:
        try:
            return self._config().bound_s
        except Unavailable:
            return DEFAULT_BOUND_S

    def _started(self, task: asyncio.Task[Runtime]) -> None:
        if task.cancelled():
            self._give_up("its start was cancelled")
            return
        exc = task.exception()
        if exc is not None:
            why = str(exc) if isinstance(exc, Unavailable) else type(exc).__name__
            self._give_up(why)
            return
        runtime = task.result()
        self._runtime = runtime
        log.info(
            "hdcontext: serving LiteLLM's requests; sessions in %s, idle ones %s",
            runtime.config.storage,
            runtime.config.retention.describe(),
        )
        self._stays = asyncio.ensure_future(self._stay(runtime))
        if self._at_stop is not None:
            try:
                self._at_stop(self.close)
            except Exception as exc:  # the loop's end stops it then
                log.debug("hdcontext: no hook at the server's stop: %s", type(exc).__name__)

    def _give_up(self, why: str) -> None:
        self.off = why
        log.warning("hdcontext: off in this process, requests go on as they came: %s", why)

    async def _stay(self, runtime: Runtime) -> None:
        """Wait until the loop ends (cancelled then), and stop the runtime."""
        try:
            await asyncio.Event().wait()
        finally:
            await self._stop(runtime)

    async def _stop(self, runtime: Runtime) -> None:
        if self._runtime is runtime:
            self._runtime = None
            self.off = "stopped"
            await runtime.stop()

    async def close(self) -> None:
        """Stop now: at LiteLLM's shutdown, or a test's end."""
        if self._starting is not None and not self._starting.done():
            await asyncio.wait({self._starting})
        if self._stays is not None:
            self._stays.cancel()
            await asyncio.wait({self._stays})
        elif self._runtime is not None:
            await self._stop(self._runtime)
