"""A recorder in front of the proxy: it keeps the bytes a client sent, then passes the
request on to the proxy and the proxy's answer back (whole, not streamed: clients read an
event stream that arrives in one piece as well). What the agent sent, against what the
upstream received, is the proof that the proxy made requests smaller."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

_DROP = {"host", "content-length", "transfer-encoding", "connection", "content-encoding"}


@dataclass
class Tap:
    target: str
    sent: list[tuple[str, Any]] = field(default_factory=list)
    """(path, JSON body) of every request the client made."""

    def app(self) -> web.Application:
        app = web.Application(client_max_size=512 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._pass)
        return app

    async def _pass(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        try:
            self.sent.append((request.path, json.loads(raw) if raw else None))
        except ValueError:
            self.sent.append((request.path, raw))
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _DROP}
        async with (
            aiohttp.ClientSession(auto_decompress=True) as client,
            client.request(
                request.method, self.target + request.path_qs, data=raw, headers=headers
            ) as answer,
        ):
            body = await answer.read()
            back = {k: v for k, v in answer.headers.items() if k.lower() not in _DROP}
            return web.Response(status=answer.status, body=body, headers=back)


async def start_tap(target: str) -> tuple[Tap, web.AppRunner, str]:
    tap = Tap(target)
    runner = web.AppRunner(tap.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return tap, runner, f"http://127.0.0.1:{runner.addresses[0][1]}"
