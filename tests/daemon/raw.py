"""A byte-level client for the daemon, over stdio or TCP: what hardening tests need.

pytest-lsp's client cannot send a broken header, a body that is not JSON or a batch, and it
hides what the daemon wrote. This one sends bytes as given and reads every message the daemon
writes, answering the daemon's own requests (``workspace/configuration`` with nothing,
``client/registerCapability`` with null) the way a minimal client would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .spawn import Process, spawn

SERVE = [sys.executable, "-m", "hdcontext", "serve"]
GUARD_S = 20.0
"""How long a test waits for an answer before it calls the daemon hung (a guard, not a
measurement: answers come in milliseconds)."""
START_S = 120.0
"""How long a daemon may take to start before its first answer: a new Python process importing
pygls, pydantic and aiohttp, about 2 s of CPU, which on a loaded two-core machine (two pytest
workers beside other work) took over 20 s. Start-up is not what these tests claim anything
about, so it gets its own, wider, guard; every later answer still has GUARD_S."""

LISTENING = re.compile(r"hdcontext listening on (\S+):(\d+) \(token (in|from) (.+)\)")


class Gone(Exception):
    """The daemon closed the connection."""


def frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def dumps(message: Any) -> bytes:
    return json.dumps(message).encode("utf-8")


@dataclass
class Peer:
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter | Process
    notifications: list[dict[str, Any]] = field(default_factory=list)
    next_id: int = 1000
    started: bool = True
    """False until a daemon started with this peer has written anything: its first message may
    take START_S (the process is still importing), not GUARD_S."""

    def send_bytes(self, data: bytes) -> None:
        if isinstance(self.writer, asyncio.StreamWriter):
            self.writer.write(data)
        else:
            assert self.writer.stdin is not None
            self.writer.stdin.write(data)

    def send(self, message: dict[str, Any]) -> None:
        self.send_bytes(frame(dumps(message)))

    async def read(self, timeout: float = GUARD_S) -> dict[str, Any]:
        """The next message the daemon writes (Gone at the end of its output)."""

        async def one() -> dict[str, Any]:
            length: int | None = None
            while True:
                try:
                    line = await self.reader.readline()
                except ConnectionResetError:
                    raise Gone() from None
                if not line:
                    raise Gone()
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            assert length is not None, "a message without Content-Length"
            message: dict[str, Any] = json.loads(await self.reader.readexactly(length))
            return message

        message = await asyncio.wait_for(one(), timeout if self.started else max(timeout, START_S))
        self.started = True
        return message

    async def reply(self, timeout: float = GUARD_S) -> dict[str, Any]:
        """The next answer (a message with no method), answering the daemon's requests."""
        while True:
            message = await self.read(timeout)
            if "method" not in message:
                return message
            if "id" in message:
                method = message["method"]
                result: Any = None
                if method == "workspace/configuration":
                    result = [None for _ in message.get("params", {}).get("items", [])]
                self.send({"jsonrpc": "2.0", "id": message["id"], "result": result})
            else:
                self.notifications.append(message)

    async def answer_to(self, msg_id: Any, timeout: float = GUARD_S) -> dict[str, Any]:
        """The answer with ``msg_id`` (others are kept out of the way)."""
        while True:
            message = await self.reply(timeout)
            if message.get("id") == msg_id:
                return message

    async def request(self, method: str, params: Any = None) -> dict[str, Any]:
        """Send a request; its whole answer (``result`` or ``error``)."""
        self.next_id += 1
        msg_id = self.next_id
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return await self.answer_to(msg_id)

    async def call(self, method: str, params: Any = None) -> Any:
        answer = await self.request(method, params)
        assert "error" not in answer, (method, answer)
        return answer["result"]

    async def fails(self, method: str, params: Any = None) -> dict[str, Any]:
        answer = await self.request(method, params)
        assert "error" in answer, (method, answer)
        error: dict[str, Any] = answer["error"]
        return error

    def notify(self, method: str, params: Any = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def warnings(self) -> list[str]:
        return [
            n["params"]["message"]
            for n in self.notifications
            if n["method"] == "window/logMessage" and n["params"]["type"] == 2
        ]

    async def initialize(
        self, storage: Path | str, *, token: str | None = None, **options: Any
    ) -> dict[str, Any]:
        """``initialize`` and ``initialized``; the answer to ``initialize``."""
        init: dict[str, Any] = {"storageDir": str(storage), **options}
        if token is not None:
            init["token"] = token
        answer = await self.request(
            "initialize",
            {"processId": None, "rootUri": None, "capabilities": {}, "initializationOptions": init},
        )
        if "result" in answer:
            self.notify("initialized", {})
        return answer

    async def closed(self, timeout: float = GUARD_S) -> bool:
        """Whether the daemon closes the connection (reading what it still writes)."""
        try:
            while True:
                await self.read(timeout)
        except Gone:
            return True
        except TimeoutError:
            return False


@dataclass
class StdioDaemon:
    proc: Process
    peer: Peer
    stderr: bytearray

    @property
    def alive(self) -> bool:
        return self.proc.returncode is None

    def log(self) -> str:
        return self.stderr.decode("utf-8", "replace")


@asynccontextmanager
async def stdio_daemon(*args: str, env: dict[str, str] | None = None) -> AsyncIterator[StdioDaemon]:
    proc = await spawn(
        [*SERVE, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    assert proc.stdout is not None and proc.stderr is not None
    stderr = bytearray()
    drain = asyncio.ensure_future(_collect(proc.stderr, stderr))
    daemon = StdioDaemon(proc, Peer(proc.stdout, proc, started=False), stderr)
    try:
        yield daemon
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
        await proc.wait()
        await asyncio.wait_for(drain, GUARD_S)


async def _collect(stream: asyncio.StreamReader, sink: bytearray) -> None:
    while chunk := await stream.read(65536):
        sink.extend(chunk)


async def ended(proc: Process, timeout: float = GUARD_S) -> int | None:
    """The exit code, or None if it is still running after ``timeout``."""
    try:
        return await asyncio.wait_for(proc.wait(), timeout)
    except TimeoutError:
        return None


@dataclass
class TcpDaemon:
    proc: Process
    host: str
    port: int
    token: str
    token_source: str
    stderr: bytearray

    async def connect(self) -> Peer:
        reader, writer = await asyncio.open_connection(self.host, self.port)
        return Peer(reader, writer)

    def log(self) -> str:
        return self.stderr.decode("utf-8", "replace")


@asynccontextmanager
async def tcp_daemon(
    storage: Path, *args: str, env: dict[str, str] | None = None
) -> AsyncIterator[TcpDaemon]:
    """``serve --tcp --port 0``: the port and token from its listening line."""
    proc = await spawn(
        [*SERVE, "--tcp", "--port", "0", "--storage-dir", str(storage), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
    )
    assert proc.stderr is not None
    stderr = bytearray()
    try:
        while True:
            line = await asyncio.wait_for(proc.stderr.readline(), START_S)
            assert line, f"the daemon ended before listening: {stderr.decode(errors='replace')}"
            stderr.extend(line)
            found = LISTENING.search(line.decode("utf-8", "replace"))
            if found:
                break
        drain = asyncio.ensure_future(_collect(proc.stderr, stderr))
        host, port, how, where = found.groups()
        if how == "in":
            token = Path(where).read_text().strip()
        else:
            token = {**os.environ, **(env or {})}.get(where, "")
        yield TcpDaemon(proc, host.strip("[]"), int(port), token, f"{how} {where}", stderr)
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGKILL)
        await proc.wait()
        if "drain" in locals():
            await asyncio.wait_for(drain, GUARD_S)
