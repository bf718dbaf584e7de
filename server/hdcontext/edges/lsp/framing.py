"""LSP framing, bounded: header lines, a ``Content-Length``, then exactly that many bytes.

pygls' reader trusted the header: ``Content-Length: 3000000000`` made it read three
gigabytes into one buffer (MemoryError, the daemon gone), and a header line without an end
grew without bound. Here a header block is at most ``HEADER_LIMIT`` bytes, a body at most the
daemon's limit (``serve --max-message-bytes``); a body over it is reported before a byte of it
is read, and then skipped a chunk at a time or the connection closed (the caller decides). A
body is read into one buffer of its exact size: a 50 MB message costs 50 MB once.

Header names are matched without regard to case, a line may end in LF or CRLF, and headers
other than ``Content-Length`` (``Content-Type``) are ignored, as LSP clients differ there. A
first line that reads like an HTTP request is reported as such: over TCP it means a browser
or some other stranger, never an LSP client.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import queue
import re
import threading
from dataclasses import dataclass
from typing import Protocol

HEADER_LIMIT = 64 * 1024
"""The most bytes a header block (all its lines) may take."""
READ_CHUNK = 1 << 20
MAX_LENGTH_DIGITS = 20

_HTTP_REQUEST = re.compile(rb"(GET|HEAD|POST|PUT|DELETE|CONNECT|OPTIONS|TRACE|PATCH|PRI) \S")


class ByteSource(Protocol):
    async def read(self, limit: int) -> bytes:
        """Up to ``limit`` bytes, at least one; ``b""`` at the end of input."""
        ...

    async def fill(self, buffer: memoryview) -> int:
        """Fill ``buffer`` whole, fewer bytes only at the end of input; how many came.
        A body's length is known, so it is read in one go, not a pipe's 64 KiB at a time
        with a trip through the event loop for each."""
        ...


@dataclass
class Body:
    data: bytearray


@dataclass(frozen=True)
class TooLarge:
    length: int


@dataclass(frozen=True)
class BadHeader:
    why: str


@dataclass(frozen=True)
class HttpRequest:
    pass


Frame = Body | TooLarge | BadHeader | HttpRequest


class FrameReader:
    def __init__(self, source: ByteSource, max_body: int) -> None:
        self._source = source
        self.max_body = max_body
        self._buf = bytearray()
        self._skip_line = False  # in the rest of a header line that was too long

    async def _fill(self) -> bool:
        chunk = await self._source.read(64 * 1024)
        if not chunk:
            return False
        self._buf += chunk
        return True

    async def next(self) -> Frame | None:
        """The next frame, or None at the end of input."""
        lines = 0
        size = 0
        length: int | None = None
        problem: str | None = None
        while True:
            end = self._buf.find(b"\n")
            if end < 0:
                if len(self._buf) > HEADER_LIMIT or self._skip_line:
                    overlong = not self._skip_line
                    self._buf.clear()
                    self._skip_line = True
                    if overlong:
                        return BadHeader(f"a header line longer than {HEADER_LIMIT} bytes")
                if not await self._fill():
                    return None
                continue
            line = bytes(self._buf[:end]).rstrip(b"\r")
            del self._buf[: end + 1]
            if self._skip_line:
                self._skip_line = False
                continue
            size += end + 1
            if size > HEADER_LIMIT:
                return BadHeader(f"a header block longer than {HEADER_LIMIT} bytes")
            if not line:
                if lines == 0:
                    continue  # a stray blank line between messages
                break
            if lines == 0 and _HTTP_REQUEST.match(line):
                return HttpRequest()
            lines += 1
            name, colon, value = line.partition(b":")
            if not colon:
                problem = problem or "a header line without a colon"
                continue
            if name.strip().lower() != b"content-length":
                continue
            digits = value.strip()
            if not digits.isdigit() or len(digits) > MAX_LENGTH_DIGITS:
                problem = problem or "Content-Length is not a byte count"
                continue
            if length is not None and int(digits) != length:
                problem = problem or "two different Content-Length headers"
                continue
            length = int(digits)
        if problem is not None:
            return BadHeader(problem)
        if length is None:
            return BadHeader("no Content-Length header")
        if length > self.max_body:
            return TooLarge(length)
        body = await self._read_body(length)
        return None if body is None else Body(body)

    async def _read_body(self, length: int) -> bytearray | None:
        body = bytearray(length)
        have = min(len(self._buf), length)
        body[:have] = self._buf[:have]
        del self._buf[:have]
        if have < length:
            have += await self._source.fill(memoryview(body)[have:])
        return body if have == length else None

    async def skip(self, length: int) -> bool:
        """Pass over ``length`` bytes of input without keeping them; False at the end."""
        have = min(len(self._buf), length)
        del self._buf[:have]
        while have < length:
            chunk = await self._source.read(min(READ_CHUNK, length - have))
            if not chunk:
                return False
            have += len(chunk)
        return True


class StreamSource:
    """A socket's asyncio stream."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def read(self, limit: int) -> bytes:
        try:
            return await self._reader.read(limit)
        except (ConnectionError, OSError):
            return b""

    async def fill(self, buffer: memoryview) -> int:
        have = 0
        while have < len(buffer):
            chunk = await self.read(min(READ_CHUNK, len(buffer) - have))
            if not chunk:
                break
            buffer[have : have + len(chunk)] = chunk
            have += len(chunk)
        return have


class FdSource:
    """A file descriptor (stdin) read by a daemon thread of its own.

    Not the event loop's pipe support: that makes the descriptor non-blocking, which also
    changes it for every other process sharing it (a terminal, the editor's end of a pipe).
    Not an executor either: its threads are joined at exit, so a daemon told to ``exit``
    would wait for a client that keeps its end of stdin open.
    """

    def __init__(self, fd: int) -> None:
        self._fd = fd
        _widen_pipe(fd)
        self._asks: queue.SimpleQueue[_Ask] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._ended = False

    async def read(self, limit: int) -> bytes:
        data = await self._ask(limit)
        assert isinstance(data, bytes)
        return data

    async def fill(self, buffer: memoryview) -> int:
        count = await self._ask(buffer)
        assert isinstance(count, int)
        return count

    async def _ask(self, what: int | memoryview) -> bytes | int:
        if self._ended:
            return b"" if isinstance(what, int) else 0
        wanted = what if isinstance(what, int) else len(what)
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bytes | int] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, args=(loop,), name="hdcontext-stdin", daemon=True
            )
            self._thread.start()
        self._asks.put((what, answer))
        del what
        got = await answer
        self._ended = not got or (isinstance(got, int) and got < wanted)
        return got

    def _run(self, loop: asyncio.AbstractEventLoop) -> None:
        while True:
            what, answer = self._asks.get()
            got: bytes | int
            if isinstance(what, int):
                try:
                    got = os.read(self._fd, what)
                except OSError:
                    got = b""
                ended = not got
            else:
                got = self._fill(what)
                ended = got < len(what)
            del what  # the buffer's owner resizes it once it has the answer: no export left
            try:
                loop.call_soon_threadsafe(_settle, answer, got)
            except RuntimeError:  # the loop is closed: nobody is reading any more
                return
            if ended:
                return

    def _fill(self, buffer: memoryview) -> int:
        have = 0
        while have < len(buffer):
            try:
                count = os.readv(self._fd, [buffer[have:]])
            except OSError:
                break
            if count == 0:
                break
            have += count
        return have


PIPE_BYTES = 1 << 20
"""The pipe buffer asked for on stdin (Linux; at most ``/proc/sys/fs/pipe-max-size``)."""


def _widen_pipe(fd: int) -> None:
    """A pipe holds 64 KiB by default, so a client's 3 MB resend crosses it in fifty turns of
    the two processes; one of 1 MiB takes four."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if set_size is None:
        return
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, set_size, PIPE_BYTES)


_Ask = tuple[int | memoryview, "asyncio.Future[bytes | int]"]


def _settle(answer: asyncio.Future[bytes | int], data: bytes | int) -> None:
    if not answer.done():
        answer.set_result(data)
