"""A bare relay: the floor of any Python proxy built as hdcontext's is, for ``bench.proxy``.

It does what every request through ``hdcontext proxy`` must do and nothing more: aiohttp takes
the request (the whole body, as the proxy must, to see the conversation), a pooled aiohttp
client posts those bytes to the upstream with the same headers, and the answer is streamed
back as it comes. No parsing, no session, no storage. What it adds to a direct call is what a
proxy on the same stack cannot go below; what ``hdcontext proxy`` adds beyond it is its own work.

    python -m bench.relay --upstream http://127.0.0.1:PORT   (prints "listening on URL")
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys

import aiohttp
from aiohttp import web

_HOP = {"host", "content-length", "transfer-encoding", "connection", "keep-alive"}


def app(upstream: str) -> web.Application:
    application = web.Application(client_max_size=1 << 30)
    client: list[aiohttp.ClientSession] = []

    async def start(_: web.Application) -> None:
        client.append(aiohttp.ClientSession(auto_decompress=False))

    async def stop(_: web.Application) -> None:
        await client[0].close()

    async def relay(request: web.Request) -> web.StreamResponse:
        body = await request.read()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP}
        async with client[0].post(upstream + request.path, data=body, headers=headers) as answer:
            response = web.StreamResponse(
                status=answer.status,
                headers={k: v for k, v in answer.headers.items() if k.lower() not in _HOP},
            )
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    application.on_startup.append(start)
    application.on_cleanup.append(stop)
    application.router.add_post("/{tail:.*}", relay)
    return application


async def serve(upstream: str) -> None:
    runner = web.AppRunner(app(upstream), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print(f"listening on http://127.0.0.1:{runner.addresses[0][1]}", file=sys.stderr, flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.relay", description=__doc__)
    parser.add_argument("--upstream", required=True)
    args = parser.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve(args.upstream.rstrip("/")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
