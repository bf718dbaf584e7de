"""A stream the upstream breaks off mid-event keeps, through the proxy, every byte that came
before the break, then ends as broken as it came: never worse than no proxy.

A raw upstream (an asyncio server writing HTTP by hand) answers each API's streaming request
with the start of a real stream and then closes its connection in the middle of an event,
either inside a chunk it announced whole (the bytes of a partial chunk) or between two
chunks. A raw client (it reads bytes until the connection closes, de-chunking what came) reads
the same answer straight from the upstream and through the proxy: the payloads are the same,
not empty, and the proxy's transfer, like the upstream's, never ends with the closing chunk."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from .conftest import proxy_in_front_of

ANSWERS = {
    "anthropic": (
        "/v1/messages",
        "text/event-stream",
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1",'
        b'"type":"message","role":"assistant","content":[],"model":"m","usage":'
        b'{"input_tokens":10,"output_tokens":1}}}\n\nevent: content_block_delta\ndata: '
        b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a long '
        b'answer that the upstream cuts in the middle"}}\n\n',
    ),
    "openai": (
        "/v1/chat/completions",
        "text/event-stream",
        b'data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":'
        b'{"role":"assistant","content":"a long answer"}}]}\n\ndata: {"id":"c1","object":'
        b'"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" cut short"}}]}\n\n',
    ),
    "responses": (
        "/v1/responses",
        "text/event-stream",
        b'event: response.created\ndata: {"type":"response.created","sequence_number":0,'
        b'"response":{"id":"resp_1","object":"response","status":"in_progress","output":[]}}'
        b'\n\nevent: response.output_text.delta\ndata: {"type":"response.output_text.delta",'
        b'"sequence_number":1,"delta":"a long answer cut short in the middle"}\n\n',
    ),
    "gemini-sse": (
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        "text/event-stream",
        b'data: {"candidates":[{"content":{"role":"model","parts":[{"text":"a long answer"}]}}]}'
        b'\n\ndata: {"candidates":[{"content":{"role":"model","parts":[{"text":" cut short in '
        b'the middle"}]}}]}\n\n',
    ),
    "gemini-array": (
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
        "application/json",
        b'[{"candidates":[{"content":{"role":"model","parts":[{"text":"a long answer"}]}}]}\r\n,'
        b'{"candidates":[{"content":{"role":"model","parts":[{"text":" cut short in the middle'
        b'"}]}}]}\r\n,{"candidates":[{"content":{"role":"model","parts":[{"text":" more"}]}}]}',
    ),
}
REQUESTS = {
    "anthropic": (
        {"x-api-key": "k", "anthropic-version": "2023-06-01"},
        {
            "model": "m",
            "max_tokens": 5,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
        },
    ),
    "openai": (
        {"authorization": "Bearer k"},
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]},
    ),
    "responses": (
        {"authorization": "Bearer k"},
        {"model": "m", "stream": True, "input": [{"role": "user", "content": "hi"}]},
    ),
    "gemini-sse": (
        {"x-goog-api-key": "k"},
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
    "gemini-array": (
        {"x-goog-api-key": "k"},
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
}


class Cutting:
    """Answers with ``stream`` cut ``at`` bytes in: ``inside`` one chunk announced whole, or
    ``between`` a first chunk of those bytes and a second never sent."""

    def __init__(self, content_type: str, stream: bytes, at: int, where: str) -> None:
        self.content_type = content_type
        self.stream = stream
        self.at = at
        self.where = where
        self._server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: "
                + self.content_type.encode()
                + b"\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            part = self.stream[: self.at]
            if self.where == "inside":
                writer.write(b"%x\r\n%s" % (len(self.stream), part))
            else:
                writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
            await asyncio.sleep(0.05)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()


async def read_raw(base: str, path: str, headers: dict[str, str], body: bytes) -> bytes:
    """The response's bytes as they came until the connection closed."""
    host, port = base.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    lines = [f"POST {path} HTTP/1.1", f"Host: {host}:{port}", "Content-Type: application/json"]
    lines += [f"{k}: {v}" for k, v in headers.items()] + [f"Content-Length: {len(body)}"]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + body)
    await writer.drain()
    data = b""
    with contextlib.suppress(ConnectionError):
        while chunk := await asyncio.wait_for(reader.read(65536), 10):
            data += chunk
    writer.close()
    return data


def payload(raw: bytes) -> tuple[bytes, bool]:
    """The de-chunked body that came, and whether the transfer ended with its closing chunk."""
    _, _, body = raw.partition(b"\r\n\r\n")
    out = b""
    while body:
        line, _, rest = body.partition(b"\r\n")
        try:
            size = int(line, 16)
        except ValueError:
            break
        if size == 0:
            return out, True
        out += rest[:size]
        body = rest[size + 2 :]
    return out, False


@pytest.fixture(params=["inside", "between"])
def where(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@contextlib.asynccontextmanager
async def cutting(api: str, where: str) -> AsyncIterator[tuple[str, str]]:
    path, content_type, stream = ANSWERS[api]
    upstream = Cutting(content_type, stream, len(stream) * 2 // 3, where)
    url = await upstream.start()
    try:
        yield url, path
    finally:
        await upstream.stop()


@pytest.mark.parametrize("api", list(ANSWERS))
async def test_the_bytes_before_the_break_reach_the_client(
    tmp_path: Path, api: str, where: str
) -> None:
    headers, request = REQUESTS[api]
    body = json.dumps(request).encode()
    async with cutting(api, where) as (url, path):
        direct, direct_ended = payload(await read_raw(url, path, headers, body))
        async with proxy_in_front_of(url, tmp_path / "storage") as (proxy, _):
            through, through_ended = payload(await read_raw(proxy.url, path, headers, body))
    assert direct and not direct_ended
    assert through == direct, f"{len(through)} of {len(direct)} bytes came through"
    assert not through_ended  # broken off for the client too, not ended as if whole
