"""``hdcontext proxy`` as a user runs it: the command in a process of its own, its stderr
(the log, the notices) collected, stopped with SIGTERM as a terminal's Ctrl-C would."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path

_LISTENING = re.compile(r"listening on (http://\S+) ")
START_S = 120.0
"""How long the proxy may take to listen: a new Python process importing aiohttp, pydantic and
the daemon, about 2 s of CPU, far longer on a loaded two-core machine. A guard, not a
measurement."""


@dataclass
class ProxyProcess:
    process: asyncio.subprocess.Process
    url: str = ""
    lines: list[str] = field(default_factory=list)

    @property
    def log(self) -> str:
        return "".join(self.lines)


async def _read(process: ProxyProcess) -> None:
    stream = process.process.stderr
    assert stream is not None
    while line := await stream.readline():
        process.lines.append(line.decode("utf-8", "replace"))


@contextlib.asynccontextmanager
async def proxy_process(storage: Path | str, *args: str) -> AsyncIterator[ProxyProcess]:
    """``hdcontext proxy --port 0 --storage-dir STORAGE ARGS…`` (a folder, or a database's
    URL), listening when this yields; the whole log is in ``lines`` once the block ends (the
    process has exited)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hdcontext",
        "proxy",
        "--port",
        "0",
        "--storage-dir",
        str(storage),
        *args,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
        env=env,
    )
    running = ProxyProcess(process)
    reader = asyncio.ensure_future(_read(running))
    try:
        deadline = asyncio.get_running_loop().time() + START_S
        while asyncio.get_running_loop().time() < deadline:
            found = next((m for line in running.lines if (m := _LISTENING.search(line))), None)
            if found is not None:
                running.url = found.group(1)
                break
            if process.returncode is not None or reader.done():
                break
            await asyncio.sleep(0.05)
        assert running.url, f"the proxy did not start:\n{running.log}"
        yield running
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), 30)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()
            await asyncio.wait_for(reader, 10)
