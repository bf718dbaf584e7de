"""The savings page over HTTP: ``GET /`` on the proxy's own port, and the same on a port of
its own for ``hdcontext stats --serve`` (a user without a proxy, or whose proxy is not
running).

``GET /`` is the page (``stats/page.py``) with the figures of the storage in it;
``GET /hdcontext/stats.json`` the figures alone. Both read the storage as ``hdcontext stats``
does (read-only, no lock, off the event loop), at each request, so a reload shows the calls
made since. The rules of the proxy's API hold (``guard.py``): a ``Host`` that does not name
this server, or any ``Origin`` header (a web page asking), is refused before anything is
read; the answer tells a browser to load nothing from anywhere (its content security policy)
and to keep no copy.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from ...core.stats.costs import PriceOverrides
from ..stats.page import CONTENT_SECURITY_POLICY, render
from ..stats.report import StatsError, page_figures
from ..storage.location import Location
from .guard import allowed_hosts, refusal
from .interrupt import until_interrupted

log = logging.getLogger(__name__)

PAGE_PATH = "/"
JSON_PATH = "/hdcontext/stats.json"
DEFAULT_PORT = 8788
HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "Cache-Control": "no-store",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


@dataclass
class Dashboard:
    """Where the page's figures come from: a storage folder or a database, and the user's
    prices."""

    where: Location
    prices: Callable[[], PriceOverrides] = dict
    since: int | None = None
    since_label: str | None = None
    flush: Callable[[], Awaitable[None]] | None = None
    """Saves what the server holds and the folder does not have yet (the proxy's last calls'
    usage, saved with the next commit otherwise), so that the page counts every call."""
    live: Callable[[], dict[str, Any]] | None = None
    """What the running proxy knows and the folder does not (``ProxyState.forwarded_as_sent``:
    the requests it could not carry, which saved nothing and left no row), shown as
    ``figures["proxy"]``."""

    async def figures(self) -> dict[str, Any]:
        if self.flush is not None:
            await self.flush()
        figures = await asyncio.to_thread(
            page_figures,
            self.where,
            prices=self.prices(),
            since=self.since,
            since_label=self.since_label,
        )
        if self.live is not None:
            figures["proxy"] = self.live()
        return figures


DASHBOARD = web.AppKey("hdcontext_dashboard", Dashboard)


def add_routes(app: web.Application, dashboard: Dashboard) -> None:
    """The page's two paths, on an app whose middleware guards them (add them before any
    catch-all route)."""
    app[DASHBOARD] = dashboard
    app.router.add_get(PAGE_PATH, _page)
    app.router.add_get(JSON_PATH, _json)


async def _figures(request: web.Request) -> dict[str, Any] | web.Response:
    try:
        return await request.app[DASHBOARD].figures()
    except StatsError as exc:
        log.warning("the savings page could not be made: %s", exc)
        return web.Response(status=503, text=f"hdcontext: {exc}\n", headers=HEADERS)


async def _page(request: web.Request) -> web.Response:
    figures = await _figures(request)
    if isinstance(figures, web.Response):
        return figures
    return web.Response(text=render(figures), content_type="text/html", headers=HEADERS)


async def _json(request: web.Request) -> web.Response:
    figures = await _figures(request)
    if isinstance(figures, web.Response):
        return figures
    return web.json_response(figures, headers=HEADERS)


@dataclass
class _Allowed:
    hosts: frozenset[str] = frozenset()
    """The ``Host`` values that name the page's server (known once it listens)."""


ALLOWED = web.AppKey("hdcontext_allowed_hosts", _Allowed)


@web.middleware
async def _guard(request: web.Request, handler: Any) -> web.StreamResponse:
    """The proxy's rules (``guard.refusal``) for the page on its own port."""
    reason = refusal(
        request.headers.get("Host"), request.headers.get("Origin"), request.app[ALLOWED].hosts
    )
    if reason is not None:
        log.warning("refused a request: %s", reason)
        return web.json_response({"error": {"message": f"hdcontext: {reason}"}}, status=403)
    response: web.StreamResponse = await handler(request)
    return response


async def start_page(dashboard: Dashboard, port: int) -> tuple[web.AppRunner, int]:
    """The page alone on loopback ``port`` (0: a free one): the runner and the port."""
    app = web.Application(middlewares=[_guard])
    allowed = app[ALLOWED] = _Allowed()
    add_routes(app, dashboard)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    try:
        await site.start()
    except BaseException:
        await runner.cleanup()
        raise
    bound = int(runner.addresses[0][1])
    allowed.hosts = allowed_hosts("127.0.0.1", bound)
    return runner, bound


def serve_page(dashboard: Dashboard, port: int) -> int:
    """``hdcontext stats --serve``: the page on loopback until interrupted; its exit code."""

    async def run() -> int:
        try:
            runner, bound = await start_page(dashboard, port)
        except OSError as exc:
            print(f"hdcontext: cannot listen on 127.0.0.1:{port}: {exc.strerror}", file=sys.stderr)
            return 2
        print(
            f"hdcontext stats: http://127.0.0.1:{bound}/ (the figures of {dashboard.where}; "
            "Ctrl-C stops it)",
            file=sys.stderr,
            flush=True,
        )
        try:
            await until_interrupted()
        finally:
            await runner.cleanup()
        return 0

    try:
        return asyncio.run(run())
    except KeyboardInterrupt:
        return 0
