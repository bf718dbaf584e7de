"""``hdcontext proxy``: the server on its own, or beside a daemon that already runs.

On its own it is a daemon without an editor: it takes its storage folder as ``serve`` does
(created 0700, locked, so no other daemon writes the same sessions), or a PostgreSQL database
that any number of proxies share (a team's gateway: any of them serves any request of a
conversation, ``storage/postgres_store.py``), opens the store and serves until interrupted. A
database that cannot be used at start is one line naming it without its password, exit 2. Every
conversation that goes through it is kept there, which a user of a proxy would not guess: the
first start in a folder says so (where, for how long, how to change it or delete them), once,
remembered by a file in the folder; idle sessions go after ``--retention-days``
(``daemon/retention.py``). ``Proxy`` is the same server over a ``Daemon`` someone else made,
which is how an editor's daemon can host it (its sessions then show in the editor).
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import web
from yarl import URL

from ...core.compression.compressor import SessionSummarizer
from ...core.compression.types import SummarizeRequest, SummarizerError
from ...core.session.reply import CompactResult
from ...core.settings import Settings, resolve
from ...core.tokens import encoding
from ..daemon import memory
from ..daemon.daemon import Daemon
from ..daemon.ide_settings import IdeSettings
from ..daemon.retention import Retention
from ..daemon.summarizer import ask_openai, timeout_seconds
from ..storage import storage_lock
from ..storage.folder import NOTICE_NAME, PRIVATE_UMASK, folder_problem, mark_once, prepare_folder
from ..storage.location import Location
from ..storage.records import StoreError
from .app import ProxyState, build_app, refresher
from .compactor import DEFAULT_BOUND_S, Compactor, now_ms
from .dashboard import Dashboard
from .egress import route
from .guard import allowed_hosts, is_loopback
from .interrupt import until_interrupted
from .keepwarm import KeepWarm
from .upstream import Upstream

log = logging.getLogger(__name__)

DEFAULT_PORT = 8787
ANTHROPIC_UPSTREAM = "https://api.anthropic.com"
OPENAI_UPSTREAM = "https://api.openai.com/v1"
GEMINI_UPSTREAM = "https://generativelanguage.googleapis.com"
EXIT_STORAGE_LOCKED = 3
EXIT_UNUSABLE = 2


class _NoEditor:
    """The daemon's client when no editor is there: warnings to the log, no notifications,
    and summaries only from an ``openai`` summarizer (settings say which)."""

    def notify(self, method: str, params: Any) -> None:
        return None

    def warn(self, message: str) -> None:
        log.warning("%s", message)

    def summarizer(self, session_id: str) -> SessionSummarizer:
        async def summarize(request: SummarizeRequest, settings: Settings) -> str:
            if settings.summarizer_provider == "openai":
                return await ask_openai(settings, request, timeout_seconds())
            raise SummarizerError(
                "client",
                "the proxy has no editor to write summaries: use high-density or "
                "top-down-truncation, or summarizer.provider openai",
            )

        return summarize


class Proxy:
    """The proxy's server over ``daemon``, listening once ``start`` returns."""

    def __init__(
        self,
        daemon: Daemon,
        *,
        anthropic: str = ANTHROPIC_UPSTREAM,
        openai: str = OPENAI_UPSTREAM,
        gemini: str = GEMINI_UPSTREAM,
        bound_s: float = DEFAULT_BOUND_S,
        context_limit: int | None = None,
        keep_warm: bool = False,
        clock: Callable[[], int] = now_ms,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        """``keep_warm``: make the refresh calls the daemon names (its sessions need
        ``cache.refresh`` for it to name any); ``clock`` and ``sleep`` time them (a test
        passes its own)."""
        compactor = Compactor(daemon, bound_s)
        compactor.context_limit = context_limit
        self.state = ProxyState(
            compactor=compactor,
            upstreams={
                "anthropic": _upstream("anthropic", URL(anthropic)),
                "openai": _upstream("openai", URL(openai)),
                "gemini": _upstream("gemini", URL(gemini)),
            },
            dashboard=Dashboard(
                daemon.location,
                lambda: resolve({}, daemon.settings.current()).values.cache_prices,
                flush=compactor.saved,
            ),
        )
        if keep_warm:

            async def refresh(session_id: str, at: int) -> CompactResult:
                return await daemon.refresh_result({"sessionId": session_id, "at": at})

            self.state.keep_warm = KeepWarm(refresh, refresher(self.state), clock, sleep)
        self._runner: web.AppRunner | None = None
        self.host = ""
        self.port = 0

    async def start(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> int:
        """Listen on ``host:port`` (0: any free port); the port it listens on."""
        runner = web.AppRunner(build_app(self.state), access_log=None, handle_signals=False)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        bound = runner.addresses[0]
        self.host, self.port = host, int(bound[1])
        self.state.allowed = allowed_hosts(host, self.port)
        # The conversations the last run served in its last hour are taken in meanwhile.
        self.state.compactor.resume(self.state.apis)
        return self.port

    @property
    def url(self) -> str:
        host = "127.0.0.1" if self.host in ("", "0.0.0.0", "::") else self.host
        return f"http://{'[' + host + ']' if ':' in host else host}:{self.port}"

    async def stop(self) -> None:
        if self.state.keep_warm is not None:
            await self.state.keep_warm.close()  # the keys it held go with it
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
            # Its requests done: what the next start needs to resume them as turns.
            await self.state.compactor.keep_for_restart()


def _upstream(name: str, base: URL) -> Upstream:
    """The upstream at ``base``, reached as the environment says (``egress.py``); said in the
    log when through a proxy (the proxy without its credentials)."""
    upstream = Upstream(name, base, route(base))
    via = upstream.route.via
    if via is not None:
        log.info(
            "the %s upstream %s is reached through the proxy %s (%s)",
            name,
            upstream.shown(),
            via,
            upstream.route.variable,
        )
    return upstream


def proxy_settings(cache_ttl: str = "auto", keep_warm: bool = False) -> IdeSettings:
    """The settings of the sessions the proxy opens: no editor sends any, so these are the
    proxy's options (``--cache-ttl``, ``--keep-warm``); a session's own overrides (an agent
    that asks an hour) come on top."""
    settings = IdeSettings()
    errors = settings.set_initial({"cache": {"ttl": cache_ttl, "refresh": keep_warm}})
    if errors:
        raise ValueError("; ".join(str(e) for e in errors))
    return settings


def storage_notice(storage: Path, retention: Retention, setting: str = "--retention-days N") -> str:
    """What the first start in a storage folder says about what the proxy keeps there."""
    return (
        "hdcontext proxy: every conversation that goes through the proxy is kept on disk, in "
        f"{storage} (a SQLite database only you can read), so that it picks up where it was "
        f"after a restart. Idle conversations are {retention.describe()}: {setting} "
        "changes that (0: keep a conversation only while it is in use; forever: keep them "
        "all). 'hdcontext sessions list' shows them, 'hdcontext sessions delete ID' and "
        "'hdcontext sessions prune --older-than 7d' delete them. (Said once: "
        f"{storage / NOTICE_NAME} remembers it.)"
    )


def serve_proxy(
    *,
    host: str,
    port: int,
    storage: Location | Path,
    anthropic: str,
    openai: str,
    bound_s: float,
    gemini: str = GEMINI_UPSTREAM,
    context_limit: int | None = None,
    retention: Retention | None = None,
    cache_ttl: str = "auto",
    keep_warm: bool = False,
) -> int:
    """``hdcontext proxy`` until interrupted; its exit code."""
    memory.configure(memory.PROXY_MMAP_THRESHOLD, memory.PROXY_TRIM_THRESHOLD)
    os.umask(PRIVATE_UMASK)
    if not is_loopback(host):
        print(
            f"hdcontext proxy: listening on {host}, which is not loopback: any machine that "
            "reaches it can use it",
            file=sys.stderr,
            flush=True,
        )
    where = storage if isinstance(storage, Location) else Location(folder=storage)
    kept = retention or Retention()
    if where.folder is not None:
        code = _take_folder(where.folder, kept)
        if code is not None:
            return code
    try:
        return asyncio.run(
            _serve(
                host,
                port,
                where,
                anthropic,
                openai,
                gemini,
                bound_s,
                context_limit,
                kept,
                proxy_settings(cache_ttl, keep_warm),
                keep_warm,
            )
        )
    except KeyboardInterrupt:
        return 0


def _take_folder(folder: Path, kept: Retention) -> int | None:
    """Make the storage folder, take its lock, and say once what the proxy keeps there;
    the exit code when it cannot be had."""
    try:
        prepare_folder(folder)
        storage_lock.acquire(folder)
    except storage_lock.StorageLocked as exc:
        print(f"hdcontext proxy: {exc}", file=sys.stderr, flush=True)
        return EXIT_STORAGE_LOCKED
    except (StoreError, OSError, ValueError) as exc:
        message = str(exc) if isinstance(exc, StoreError) else folder_problem(folder, exc)
        print(f"hdcontext proxy: {message}", file=sys.stderr, flush=True)
        return EXIT_UNUSABLE
    if mark_once(folder, NOTICE_NAME):
        print(storage_notice(folder, kept), file=sys.stderr, flush=True)
    return None


def proxy_daemon(storage: Location | Path, settings: IdeSettings, retention: Retention) -> Daemon:
    """The daemon behind ``hdcontext proxy``: its commits are not flushed to the disk, since an
    agent sends its whole conversation again with every request (storage/store.py), and no
    editor hears of its sessions' tokens."""
    return Daemon(
        _NoEditor(), storage, settings, retention=retention, durable=False, notifies=False
    )


async def _serve(
    host: str,
    port: int,
    storage: Location,
    anthropic: str,
    openai: str,
    gemini: str,
    bound_s: float,
    context_limit: int | None,
    retention: Retention,
    settings: IdeSettings | None = None,
    keep_warm: bool = False,
) -> int:
    daemon = proxy_daemon(storage, settings or IdeSettings(), retention)
    try:
        await daemon.start()
    except StoreError as exc:
        await daemon.store.close()
        print(f"hdcontext proxy: {exc}", file=sys.stderr, flush=True)
        return EXIT_UNUSABLE
    # The token encoding is read before the first request, not during it: its 100,000 merges
    # took 0.45 s, which the first request after every start paid (a resumed conversation's
    # among them, whose own work is about as long).
    await asyncio.to_thread(encoding)
    proxy = Proxy(
        daemon,
        anthropic=anthropic,
        openai=openai,
        gemini=gemini,
        bound_s=bound_s,
        context_limit=context_limit,
        keep_warm=keep_warm,
    )
    try:
        listening = await proxy.start(host, port)
    except OSError as exc:
        await daemon.store.close()
        print(f"hdcontext proxy: cannot listen on {host}:{port}: {exc.strerror}", file=sys.stderr)
        return EXIT_UNUSABLE
    print(
        f"hdcontext proxy listening on {proxy.url} (port {listening}; anthropic upstream "
        f"{proxy.state.upstreams['anthropic'].shown()}, openai upstream "
        f"{proxy.state.upstreams['openai'].shown()}, gemini upstream "
        f"{proxy.state.upstreams['gemini'].shown()}; sessions in {storage}, idle ones "
        f"{retention.describe()}; "
        f"{'refresh calls on (--keep-warm); ' if keep_warm else ''}what it saved: {proxy.url}/)",
        file=sys.stderr,
        flush=True,
    )
    try:
        await until_interrupted()
    finally:
        await proxy.stop()
        await daemon.shutdown()
        await daemon.store.close()
    return 0
