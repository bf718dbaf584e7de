"""Start ``python -m hdcontext ...`` for a test: forked from a process that imported the daemon
once (zygote.py), or executed anew.

Each xdist worker starts one zygote the first time a test asks (about a second, once), and from
then on a daemon starts in a few milliseconds instead of the second its imports take: the same
code, over real pipes, in a process of its own that the test can signal, kill and wait for. What
a test gets behaves as ``asyncio.create_subprocess_exec``'s process does (``pid``,
``returncode``, ``stdin``, ``stdout``, ``stderr``, ``wait``, ``send_signal``, ``terminate``,
``kill``).

Executed anew instead: any other command (a test that names its command claims something of
how the daemon is started, such as the ``hdcontext`` script), and every daemon when
``HDCONTEXT_TEST_EXEC=1``, which runs the whole suite the slow way, as a check of this shortcut.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import IO, Any

PIPE = subprocess.PIPE
DEVNULL = subprocess.DEVNULL
MODULE = [sys.executable, "-m", "hdcontext"]
EXEC_ENV = "HDCONTEXT_TEST_EXEC"
READY_S = 120.0


class Forked:
    """A daemon forked by the zygote, as the test sees it."""

    def __init__(
        self,
        pid: int,
        stdin: asyncio.StreamWriter | None,
        stdout: asyncio.StreamReader | None,
        stderr: asyncio.StreamReader | None,
        status: asyncio.StreamReader,
        status_writer: asyncio.StreamWriter,
    ) -> None:
        self.pid = pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.returncode: int | None = None
        self._done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._watch = asyncio.ensure_future(self._ended(status, status_writer))

    async def _ended(self, status: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await status.readline()
        writer.close()
        # No line: the zygote itself went away; say the child was killed, as it was with it.
        self.returncode = int(line) if line.strip() else -signal.SIGKILL
        self._done.set_result(self.returncode)

    async def wait(self) -> int:
        return await asyncio.shield(self._done)

    def send_signal(self, sig: int) -> None:
        if self.returncode is not None:
            raise ProcessLookupError(self.pid)
        os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


Process = asyncio.subprocess.Process | Forked


async def spawn(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    stdin: int | None = PIPE,
    stdout: int | None = PIPE,
    stderr: int | None = PIPE,
) -> Process:
    """``argv`` started with these streams (``PIPE``, ``DEVNULL`` or None: this process's)."""
    full_env = dict(os.environ if env is None else env)
    zygote = _zygote() if argv[:3] == MODULE and os.environ.get(EXEC_ENV) != "1" else None
    if zygote is None:
        return await asyncio.create_subprocess_exec(
            *argv, stdin=stdin, stdout=stdout, stderr=stderr, env=full_env
        )
    return await zygote.fork(argv, full_env, (stdin, stdout, stderr))


class _Zygote:
    def __init__(self) -> None:
        folder = tempfile.mkdtemp(prefix="hdc-zygote-")
        self.path = str(Path(folder) / "z.sock")
        script = Path(__file__).with_name("zygote.py")
        self.proc = subprocess.Popen(
            [sys.executable, str(script), self.path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdout is not None
        ready: list[bytes] = []
        reader = threading.Thread(target=lambda: ready.append(self.proc.stdout.readline()))  # type: ignore[union-attr]
        reader.start()
        reader.join(READY_S)
        if ready != [b"ready\n"]:
            self.proc.kill()
            raise RuntimeError("the test zygote did not start (tests/daemon/zygote.py)")
        atexit.register(self.close)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(10)

    async def fork(
        self, argv: list[str], env: dict[str, str], kinds: tuple[int | None, int | None, int | None]
    ) -> Forked:
        theirs: list[int] = []
        ours: list[int | None] = []
        for number, kind in enumerate(kinds):
            if kind == PIPE:
                read_end, write_end = os.pipe()
                theirs.append(read_end if number == 0 else write_end)
                ours.append(write_end if number == 0 else read_end)
            elif kind == DEVNULL:
                theirs.append(os.open(os.devnull, os.O_RDWR))
                ours.append(None)
            else:
                theirs.append(os.dup(number))
                ours.append(None)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(READY_S)
            sock.connect(self.path)
            payload = json.dumps({"argv": argv, "env": env, "cwd": os.getcwd()}) + "\n"
            socket.send_fds(sock, [payload.encode()], theirs)
            pid = int(_line(sock))
        except BaseException:
            sock.close()
            for fd in ours:
                if fd is not None:
                    os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        loop = asyncio.get_running_loop()
        status, status_writer = await asyncio.open_unix_connection(sock=sock)
        stdin_w = await _writer(loop, ours[0]) if ours[0] is not None else None
        stdout_r = await _reader(loop, ours[1]) if ours[1] is not None else None
        stderr_r = await _reader(loop, ours[2]) if ours[2] is not None else None
        return Forked(pid, stdin_w, stdout_r, stderr_r, status, status_writer)


def _line(sock: socket.socket) -> bytes:
    """One line, read a byte at a time: what follows it is for asyncio to read."""
    out = bytearray()
    while not out.endswith(b"\n"):
        byte = sock.recv(1)
        if not byte:
            raise ConnectionError("the test zygote closed the connection")
        out += byte
    return bytes(out)


async def _reader(loop: asyncio.AbstractEventLoop, fd: int) -> asyncio.StreamReader:
    reader = asyncio.StreamReader(limit=2**16, loop=loop)
    pipe: IO[bytes] = os.fdopen(fd, "rb", buffering=0)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
    return reader


class _WriteProtocol(asyncio.streams.FlowControlMixin, asyncio.Protocol):
    """What a StreamWriter over a pipe needs: flow control and a close waiter."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(loop=loop)
        self._closed: asyncio.Future[None] = loop.create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if not self._closed.done():
            self._closed.set_result(None)

    def _get_close_waiter(self, stream: Any) -> asyncio.Future[None]:
        return self._closed


async def _writer(loop: asyncio.AbstractEventLoop, fd: int) -> asyncio.StreamWriter:
    pipe: IO[bytes] = os.fdopen(fd, "wb", buffering=0)
    transport, protocol = await loop.connect_write_pipe(lambda: _WriteProtocol(loop), pipe)
    return asyncio.StreamWriter(transport, protocol, None, loop)


_STARTED: list[_Zygote] = []
_STARTING = threading.Lock()


def _zygote() -> _Zygote | None:
    with _STARTING:
        if not _STARTED or _STARTED[0].proc.poll() is not None:
            _STARTED[:] = [_Zygote()]
        return _STARTED[0]
