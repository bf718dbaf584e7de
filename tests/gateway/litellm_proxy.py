"""LiteLLM's real proxy for the gateway's tests, with the hdcontext callback, in front of the
scripted fake provider of the proxy's tests.

The fake (``tests/proxy/fake_upstream.py``: OpenAI's chat completions and Responses API,
Anthropic's messages) runs on a thread of its own, so that it serves while a test's loop waits
on a client, and what it received stays readable. LiteLLM runs as LiteLLM runs: its ``litellm``
command from the environment ``make litellm`` made (``litellm_env.py``), a ``config.yaml`` that
names the callback, no database of its own (``DATABASE_URL`` unset: its Prisma binaries would
come from the internet), ``LITELLM_LOCAL_MODEL_COST_MAP`` so that it asks nothing of the
internet, this checkout's ``server/`` first on its path. The keys are the tests' own
(``custom_auth.py``): each a user of a team.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import aiohttp
from aiohttp import web

from tests.proxy.fake_upstream import FakeUpstream, Script

from . import litellm_env

MASTER_KEY = "sk-master-of-the-tests"
START_TIMEOUT_S = 90.0
STOP_TIMEOUT_S = 30.0
MODELS = ("gpt-5.6", "gpt-4.1")
"""OpenAI's models the gateway serves (chat completions and the Responses API)."""
CLAUDE = "claude-sonnet-4-5"


class FakeOnAThread:
    """The fake provider on a loop of its own thread."""

    def __init__(self, script: Script) -> None:
        self.fake = FakeUpstream(script)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._runner: web.AppRunner | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise RuntimeError("the fake provider did not start")

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        self._runner = web.AppRunner(self.fake.app(), access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, "127.0.0.1", 0).start()

    @property
    def url(self) -> str:
        assert self._runner is not None
        return f"http://127.0.0.1:{self._runner.addresses[0][1]}"

    def stop(self) -> None:
        if self._runner is not None:
            runner = self._runner
            done = asyncio.run_coroutine_threadsafe(runner.cleanup(), self._loop)
            with contextlib.suppress(Exception):
                done.result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


def config_yaml(upstream: str, callback: str = "hdcontext.litellm.handler") -> str:
    models = [
        f"  - model_name: {name}\n"
        f"    litellm_params: {{model: openai/{name}, api_base: '{upstream}/v1', "
        "api_key: sk-upstream}\n"
        for name in MODELS
    ]
    models.append(
        f"  - model_name: {CLAUDE}\n"
        f"    litellm_params: {{model: anthropic/{CLAUDE}, api_base: '{upstream}', "
        "api_key: sk-upstream}\n"
    )
    return (
        "model_list:\n"
        + "".join(models)
        + f"litellm_settings:\n  callbacks: {callback}\n  num_retries: 0\n"
        + "general_settings:\n"
        + f"  master_key: {MASTER_KEY}\n"
        + "  custom_auth: tests.gateway.custom_auth.user_api_key_auth\n"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Gateway:
    """A LiteLLM proxy process with the callback; ``storage``: hdcontext's folder."""

    process: subprocess.Popen[bytes]
    url: str
    storage: Path
    log: Path

    def log_tail(self, lines: int = 60) -> str:
        text = self.log.read_text(errors="replace").splitlines()
        return "\n".join(text[-lines:])

    def stop(self) -> int:
        """SIGTERM, as a platform stops a replica; its exit code (killed past the timeout)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode


def start_gateway(
    folder: Path,
    upstream: str,
    callback: str = "hdcontext.litellm.handler",
    more_env: Mapping[str, str] | None = None,
) -> Gateway:
    """LiteLLM's proxy on a free port, started (not waited for: ``wait_ready``); ``more_env``
    on top of its environment (``HDCONTEXT_DATABASE_URL``, say)."""
    command, why = litellm_env.find()
    if command is None:
        raise RuntimeError(why)
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "config.yaml"
    config.write_text(config_yaml(upstream, callback))
    storage = folder / "storage"
    repo = litellm_env.REPO
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(folder),
        "XDG_DATA_HOME": str(folder / "xdg-data"),
        "XDG_CACHE_HOME": str(folder / "xdg-cache"),
        "LITELLM_MASTER_KEY": MASTER_KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "LITELLM_LOG": "INFO",
        "PYTHONPATH": f"{repo / 'server'}{os.pathsep}{repo}",
        "PYTHONUNBUFFERED": "1",
        "HDCONTEXT_STORAGE": str(storage),
        "NO_PROXY": "127.0.0.1,localhost",
        **(more_env or {}),
    }
    port = free_port()
    log = folder / "litellm.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [str(command), "--config", str(config), "--host", "127.0.0.1", "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=folder,
        )
    return Gateway(process, f"http://127.0.0.1:{port}", storage, log)


async def wait_ready(gateway: Gateway) -> None:
    """Until LiteLLM answers its liveliness check; RuntimeError with its log's end if it
    exits or takes longer than ``START_TIMEOUT_S``."""
    deadline = time.monotonic() + START_TIMEOUT_S
    async with aiohttp.ClientSession() as client:
        while time.monotonic() < deadline:
            if gateway.process.poll() is not None:
                raise RuntimeError(f"LiteLLM exited at start:\n{gateway.log_tail()}")
            with contextlib.suppress(aiohttp.ClientError, OSError):
                async with client.get(f"{gateway.url}/health/liveliness") as answer:
                    if answer.status == 200:
                        return
            await asyncio.sleep(0.25)
    gateway.stop()
    raise RuntimeError(f"LiteLLM did not start in {START_TIMEOUT_S:g} s:\n{gateway.log_tail()}")
