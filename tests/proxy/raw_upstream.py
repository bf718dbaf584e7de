"""A provider that breaks off: an asyncio server on loopback that writes its HTTP answers by
hand, so that a test can cut one where no HTTP library would (an event stream in the middle
of an event, a JSON body short of its ``Content-Length``) and compare what a client sees with
and without the proxy in between."""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal

from .fake_upstream import ANTHROPIC_USAGE, OPENAI_USAGE, anthropic_events, openai_chunks

Cut = Literal["stream", "json", "hang"]


def _anthropic_message() -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "a long answer " * 20}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": ANTHROPIC_USAGE,
    }


def _openai_completion() -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "a long answer " * 20},
                "finish_reason": "stop",
            }
        ],
        "usage": OPENAI_USAGE,
    }


def event_stream(path: str) -> bytes:
    """The whole event stream a complete answer on ``path`` would be."""
    if path.startswith("/v1/messages"):
        events = anthropic_events(_anthropic_message())
    else:
        completion = _openai_completion()
        message = completion["choices"][0]["message"]
        events = openai_chunks("chatcmpl-1", {"model": "gpt-4.1"}, message, "stop", OPENAI_USAGE)
    out = []
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        out.append(f"{head}data: {text}\n\n")
    return "".join(out).encode()


def json_body(path: str) -> bytes:
    message = _anthropic_message() if path.startswith("/v1/messages") else _openai_completion()
    return json.dumps(message).encode()


@dataclass
class RawUpstream:
    """Answers every request with ``cut``: an event stream (chunked) that stops in the middle
    of an event, or a JSON body that stops halfway through its ``Content-Length``; then it
    closes the connection. ``hang``: no answer at all, until the caller closes the connection
    (``closed`` is set then)."""

    cut: Cut
    requests: list[str] = field(default_factory=list)
    """The path of each request, in order."""
    closed: asyncio.Event = field(default_factory=asyncio.Event)
    """A ``hang`` request's caller closed its connection."""
    _server: asyncio.Server | None = None

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        port = self._server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            length = 0
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value.strip())
            await reader.readexactly(length)
            self.requests.append(path)
            if self.cut == "hang":
                await reader.read()  # until the caller's end of the connection closes
                self.closed.set()
            elif self.cut == "stream":
                await self._cut_stream(writer, path)
            else:
                await self._cut_json(writer, path)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _cut_stream(self, writer: asyncio.StreamWriter, path: str) -> None:
        stream = event_stream(path)
        # Whole events first, then the first half of the next one: a cut mid-event.
        events = stream.split(b"\n\n")
        whole = b"\n\n".join(events[:2]) + b"\n\n"
        half = events[2][: len(events[2]) // 2]
        writer.write(
            b"HTTP/1.1 200 OK\r\n"
            b"Content-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n"
            b"\r\n"
        )
        for part in (whole, half):
            writer.write(b"%x\r\n%s\r\n" % (len(part), part))
            await writer.drain()
            await asyncio.sleep(0.05)
        # No closing chunk (0\r\n\r\n): the connection just ends.

    async def _cut_json(self, writer: asyncio.StreamWriter, path: str) -> None:
        body = json_body(path)
        writer.write(
            b"HTTP/1.1 200 OK\r\n"
            b"Content-Type: application/json\r\n"
            b"Content-Length: %d\r\n"
            b"\r\n" % len(body)
        )
        writer.write(body[: len(body) // 2])
        await writer.drain()
        await asyncio.sleep(0.05)
