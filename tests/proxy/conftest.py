"""The proxy as it runs: a daemon over a private storage folder, the proxy's server on a free
loopback port, and a scripted fake provider as its upstream (fake_upstream.py), all in the
test's event loop, so a client (aiohttp, the openai library, Claude Code's CLI) talks to them
over real HTTP."""

from __future__ import annotations

import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.proxy.run import Proxy, _NoEditor
from hdcontext.edges.storage.folder import prepare_folder

from . import claude_cli
from .fake_upstream import FakeUpstream, Script


@dataclass
class Running:
    proxy: Proxy
    daemon: Daemon
    fake: FakeUpstream
    fake_url: str
    storage: Path

    @property
    def url(self) -> str:
        return self.proxy.url

    async def statuses(self) -> list[dict[str, Any]]:
        listed: dict[str, Any] = await self.daemon.list({})
        return list(listed["sessions"])


async def start(
    tmp_path: Path,
    script: Script,
    *,
    bound_s: float = 10.0,
    openai_base: str = "/v1",
    settings: dict[str, Any] | None = None,
    proxy_options: dict[str, Any] | None = None,
    upstream_host: str = "127.0.0.1",
    tls: ssl.SSLContext | None = None,
) -> tuple[Running, list[web.AppRunner]]:
    """``upstream_host``: the name the proxy is given for the fake upstream (which listens on
    127.0.0.1 whatever it is called: a name only a test's HTTP proxy knows, say); ``tls``:
    the fake upstream's server context, for an https upstream."""
    fake = FakeUpstream(script)
    runner = web.AppRunner(fake.app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
    await site.start()
    fake_url = f"{'https' if tls else 'http'}://127.0.0.1:{runner.addresses[0][1]}"
    storage = tmp_path / "storage"
    prepare_folder(storage)
    ide = IdeSettings()
    if settings:
        ide.set_initial(settings)
    daemon = Daemon(_NoEditor(), storage, ide)
    await daemon.start()
    named = fake_url.replace("127.0.0.1", upstream_host)
    proxy = Proxy(
        daemon,
        anthropic=named,
        openai=named + openai_base,
        gemini=named,
        bound_s=bound_s,
        **(proxy_options or {}),
    )
    await proxy.start("127.0.0.1", 0)
    return Running(proxy, daemon, fake, fake_url, storage), [runner]


@contextlib.asynccontextmanager
async def proxy_in_front_of(url: str, storage: Path) -> AsyncIterator[tuple[Proxy, Daemon]]:
    """A daemon on ``storage`` and its proxy for an upstream at ``url`` that ``start``'s fake
    does not stand for (one that breaks off, one nothing listens on), stopped after."""
    prepare_folder(storage)
    daemon = Daemon(_NoEditor(), storage, IdeSettings())
    await daemon.start()
    proxy = Proxy(daemon, anthropic=url, openai=url + "/v1", gemini=url)
    await proxy.start("127.0.0.1", 0)
    try:
        yield proxy, daemon
    finally:
        await proxy.stop()
        await daemon.shutdown()
        await daemon.store.close()


async def stop(running: Running, runners: list[web.AppRunner]) -> None:
    await running.proxy.stop()
    await running.daemon.shutdown()
    await running.daemon.store.close()
    for runner in runners:
        await runner.cleanup()


@pytest.fixture(scope="session")
def claude_code() -> Path:
    """Claude Code's CLI for the real-agent tests (``claude_cli.find``); skipped, saying why,
    where it is not installed."""
    path, why = claude_cli.find()
    if path is None:
        pytest.skip(why)
    return path


@pytest.fixture
def script() -> Script:
    """The default script: answer every request with one text block."""
    return lambda body: [{"type": "text", "text": "fine"}]


@pytest.fixture
async def running(tmp_path: Path, script: Script) -> AsyncIterator[Running]:
    proxy, runners = await start(tmp_path, script)
    try:
        yield proxy
    finally:
        await stop(proxy, runners)
