"""A scripted provider for the proxy's tests: an aiohttp server on loopback that records every
request it gets (path, headers, JSON body) and answers as a script says, in Anthropic's shape,
OpenAI's chat completions', its Responses API's or Gemini's (``fake_gemini.py``: each call with
the id the script gives it, the first of an answer signed), as JSON or as a stream when the
request asks to stream."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from . import fake_gemini

Script = Callable[[dict[str, Any]], list[dict[str, Any]]]
"""Request body → the content blocks to answer with (Anthropic blocks: text or tool_use)."""

ANTHROPIC_USAGE = {
    "input_tokens": 100,
    "cache_read_input_tokens": 1000,
    "cache_creation_input_tokens": 200,
    "output_tokens": 7,
}
RESPONSES_USAGE = {
    "input_tokens": 1300,
    "input_tokens_details": {"cached_tokens": 1000, "cache_write_tokens": 200},
    "output_tokens": 9,
    "output_tokens_details": {"reasoning_tokens": 4},
    "total_tokens": 1309,
}
OPENAI_USAGE = {
    "prompt_tokens": 1300,
    "completion_tokens": 9,
    "total_tokens": 1309,
    "prompt_tokens_details": {"cached_tokens": 1000},
}


Seen = fake_gemini.Seen


@dataclass
class FakeUpstream:
    script: Script
    seen: list[Seen] = field(default_factory=list)
    anthropic_usage: dict[str, Any] = field(default_factory=lambda: dict(ANTHROPIC_USAGE))
    openai_usage: dict[str, Any] = field(default_factory=lambda: dict(OPENAI_USAGE))
    refuse: tuple[int, dict[str, Any]] | None = None
    """(status, body) to answer every API request with instead of the script."""
    refusals: int | None = None
    """How many API requests ``refuse`` answers before the script answers again (``None``:
    all of them): an upstream overloaded for a moment, whose client retries."""
    refuse_if: Callable[[Any], dict[str, Any] | None] | None = None
    """Body → the error to answer with a 400 (``None``: answer it): a provider rule the proxy
    does not know."""
    ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    responses_usage: dict[str, Any] = field(default_factory=lambda: dict(RESPONSES_USAGE))
    reasoning: bool = True
    """Whether a Responses API answer starts with a ``reasoning`` item (its
    ``encrypted_content`` opaque, as the real API's)."""
    openai_message_extras: dict[str, Any] = field(default_factory=dict)
    """Keys added to each OpenAI answer's message in one body, as the real API adds
    ``refusal: null`` and ``annotations: []``."""

    def app(self) -> web.Application:
        app = web.Application(client_max_size=512 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/responses", self._responses)
        self.gemini = fake_gemini.FakeGemini(self._gemini_plan, seen=self.seen)
        self.gemini.add_routes(app)
        app.router.add_route("*", "/{tail:.*}", self._other)
        return app

    def _gemini_plan(self, body: dict[str, Any]) -> fake_gemini.Chunks:
        """The script's blocks as Gemini parts, in one chunk: a text, each tool use a
        ``functionCall`` with the script's id, the first signed."""
        parts: list[dict[str, Any]] = []
        for block in self.script(body):
            if block["type"] == "text":
                parts.append({"text": block["text"]})
            else:
                call = {"id": block["id"], "args": block["input"], "name": block["name"]}
                part: dict[str, Any] = {"functionCall": call}
                if not any("functionCall" in p for p in parts):
                    part["thoughtSignature"] = fake_gemini.signature(block["id"])
                parts.append(part)
        return [parts]

    async def _record(self, request: web.Request) -> Any:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        self.seen.append(Seen(request.method, request.path_qs, dict(request.headers), body, raw))
        return body

    @property
    def api_requests(self) -> list[Seen]:
        return [
            s
            for s in self.seen
            if s.path.split("?")[0] in API_PATHS
            or s.path.split("?")[0].endswith(fake_gemini.GENERATE)
        ]

    async def _other(self, request: web.Request) -> web.StreamResponse:
        await self._record(request)
        return web.json_response({"path": request.path, "fake": True}, status=404)

    def _refused(self, body: Any = None) -> web.Response | None:
        if self.refuse_if is not None and (error := self.refuse_if(body)) is not None:
            return web.json_response(error, status=400)
        if self.refuse is None or self.refusals == 0:
            return None
        if self.refusals is not None:
            self.refusals -= 1
        return web.json_response(self.refuse[1], status=self.refuse[0])

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if (refused := self._refused(body)) is not None:
            return refused
        if not isinstance(body, dict):
            return web.json_response({"type": "error", "error": {"type": "bad"}}, status=400)
        blocks = self.script(body)
        stop = "tool_use" if any(b["type"] == "tool_use" for b in blocks) else "end_turn"
        message = {
            "id": f"msg_{next(self.ids)}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude"),
            "content": blocks,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self.anthropic_usage,
        }
        if not body.get("stream"):
            return web.json_response(message)
        return await _sse(request, anthropic_events(message))

    async def _openai(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if (refused := self._refused(body)) is not None:
            return refused
        if not isinstance(body, dict):
            return web.json_response({"error": {"message": "bad"}}, status=400)
        blocks = self.script(body)
        text = "".join(b["text"] for b in blocks if b["type"] == "text") or None
        calls = [
            {
                "id": b["id"],
                "type": "function",
                "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
            }
            for b in blocks
            if b["type"] == "tool_use"
        ]
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if calls:
            message["tool_calls"] = calls
        if not body.get("stream"):
            message.update(self.openai_message_extras)
        reply_id = f"chatcmpl-{next(self.ids)}"
        finish = "tool_calls" if calls else "stop"
        if not body.get("stream"):
            return web.json_response(
                {
                    "id": reply_id,
                    "object": "chat.completion",
                    "created": 1,
                    "model": body.get("model", "gpt"),
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": self.openai_usage,
                }
            )
        with_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        chunks = openai_chunks(
            reply_id, body, message, finish, self.openai_usage if with_usage else None
        )
        return await _sse(request, chunks)

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        if (refused := self._refused(body)) is not None:
            return refused
        if not isinstance(body, dict):
            return web.json_response({"error": {"message": "bad"}}, status=400)
        n = next(self.ids)
        output = responses_output(self.script(body), n, self.reasoning)
        response = {
            "id": f"resp_{n}",
            "object": "response",
            "created_at": 1,
            "status": "completed",
            "model": body.get("model", "gpt"),
            "output": output,
            "usage": self.responses_usage,
        }
        if not body.get("stream"):
            return web.json_response(response)
        return await _sse(request, responses_events(response))


API_PATHS = ("/v1/messages", "/v1/chat/completions", "/v1/responses")


def encrypted(n: int) -> str:
    """A reasoning item's ``encrypted_content``: opaque, long, base64 with ``+`` and ``/``."""
    return "gAAAAB" + ("Zm9v+YmFy/" * 40) + f"{n:04d}=="


def responses_output(blocks: list[dict[str, Any]], n: int, reasoning: bool) -> list[Any]:
    """Anthropic-shaped blocks as the Responses API's output items: a reasoning item first
    (when asked), then a message for the text, a ``function_call`` for each tool use and a
    ``custom_tool_call`` for each ``custom_tool_use`` (a freeform tool's input: a string)."""
    out: list[dict[str, Any]] = []
    if reasoning:
        out.append(
            {
                "id": f"rs_{n}",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": f"thinking {n}"}],
                "encrypted_content": encrypted(n),
            }
        )
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    if text:
        out.append(
            {
                "id": f"msg_{n}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for b in blocks:
        if b["type"] == "custom_tool_use":
            out.append(
                {
                    "id": f"ctc_{b['id']}",
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": b["id"],
                    "name": b["name"],
                    "input": b["input"],
                }
            )
        if b["type"] == "tool_use":
            out.append(
                {
                    "id": f"fc_{b['id']}",
                    "type": "function_call",
                    "status": "completed",
                    "name": b["name"],
                    "arguments": json.dumps(b["input"]),
                    "call_id": b["id"],
                }
            )
    return out


def responses_events(response: dict[str, Any]) -> list[tuple[str | None, dict[str, Any] | str]]:
    """A response as the API streams it: created and in progress, then each output item
    added, its parts' deltas (a reasoning summary, a message's text, a call's arguments or
    input) and done, then completed with the whole response (its usage in it); every event
    numbered, as the real API numbers them."""
    started = {**response, "status": "in_progress", "output": [], "usage": None}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": started},
        {"type": "response.in_progress", "response": started},
    ]
    for index, item in enumerate(response["output"]):
        where = {"output_index": index, "item_id": item.get("id", "")}
        events.append({"type": "response.output_item.added", "output_index": index, "item": item})
        kind = item["type"]
        if kind == "reasoning":
            for k, part in enumerate(item["summary"]):
                at = {**where, "summary_index": k}
                events.append({"type": "response.reasoning_summary_part.added", **at, "part": part})
                events.append(
                    {"type": "response.reasoning_summary_text.delta", **at, "delta": part["text"]}
                )
                events.append(
                    {"type": "response.reasoning_summary_text.done", **at, "text": part["text"]}
                )
                events.append({"type": "response.reasoning_summary_part.done", **at, "part": part})
        elif kind == "message":
            for k, part in enumerate(item["content"]):
                at = {**where, "content_index": k}
                empty = {**part, "text": ""}
                events.append({"type": "response.content_part.added", **at, "part": empty})
                events.append({"type": "response.output_text.delta", **at, "delta": part["text"]})
                events.append({"type": "response.output_text.done", **at, "text": part["text"]})
                events.append({"type": "response.content_part.done", **at, "part": part})
        elif kind == "function_call":
            args = item["arguments"]
            events.append(
                {"type": "response.function_call_arguments.delta", **where, "delta": args}
            )
            events.append(
                {"type": "response.function_call_arguments.done", **where, "arguments": args}
            )
        elif kind == "custom_tool_call":
            text = item["input"]
            events.append({"type": "response.custom_tool_call_input.delta", **where, "delta": text})
            events.append({"type": "response.custom_tool_call_input.done", **where, "input": text})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response})
    return [(e["type"], {**e, "sequence_number": n}) for n, e in enumerate(events)]


async def _sse(
    request: web.Request, events: list[tuple[str | None, dict[str, Any] | str]]
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        await response.write(f"{head}data: {text}\n\n".encode())
    await response.write_eof()
    return response


def anthropic_events(message: dict[str, Any]) -> list[tuple[str | None, dict[str, Any] | str]]:
    usage = message["usage"]
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    events: list[tuple[str | None, dict[str, Any] | str]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            empty: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            empty = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": empty},
            )
        )
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events.append(
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": usage["output_tokens"]},
            },
        )
    )
    events.append(("message_stop", {"type": "message_stop"}))
    return events


def openai_chunks(
    reply_id: str,
    body: dict[str, Any],
    message: dict[str, Any],
    finish: str,
    usage: dict[str, Any] | None,
) -> list[tuple[str | None, dict[str, Any] | str]]:
    base = {
        "id": reply_id,
        "object": "chat.completion.chunk",
        "created": 1,
        "model": body.get("model"),
    }

    def chunk(delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": reason}]}

    out: list[tuple[str | None, dict[str, Any] | str]] = [
        (None, chunk({"role": "assistant", "content": ""}))
    ]
    if message.get("content"):
        out.append((None, chunk({"content": message["content"]})))
    for k, call in enumerate(message.get("tool_calls") or []):
        out.append((None, chunk({"tool_calls": [{"index": k, **call}]})))
    out.append((None, chunk({}, finish)))
    if usage is not None:
        out.append((None, {**base, "choices": [], "usage": usage}))
    out.append((None, "[DONE]"))
    return out
