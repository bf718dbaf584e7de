"""A scripted Gemini for the proxy's tests: answers ``generateContent`` and
``streamGenerateContent`` as the real API does (research/gemini/NOTES.md, from Gemini CLI
0.61.0 against a recording fake): a ``GenerateContentResponse`` in one body, as events with
``alt=sse`` (``data: {…}`` and a blank line, each chunk a response of its own, the last with
``finishReason`` and the whole ``usageMetadata``), or without it as one JSON array written
chunk by chunk.

A plan gives a request's answer as chunks of parts. ``coding_plan`` is Gemini CLI's task in
the end-to-end test: read a file, replace a line in it, read it again, answer. The real API
gives calls no ids and signs each step's first call (a parallel call gets none), so the step
a request is at is read from the signature of the last call the conversation holds: every
signature is ``base64("FAKESIG|<step>|…")``, opaque to the agent, which must send it back
byte for byte (and the proxy too, whatever it pruned).
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Chunks = list[list[dict[str, Any]]]
Plan = Callable[[dict[str, Any]], Chunks]
"""Request body → the answer's chunks, each a list of parts."""

USAGE = {
    "promptTokenCount": 1300,
    "cachedContentTokenCount": 1000,
    "candidatesTokenCount": 7,
    "thoughtsTokenCount": 5,
    "totalTokenCount": 1312,
}
MAGIC_OLD = "MAGIC_CONSTANT = 41"
MAGIC_NEW = "MAGIC_CONSTANT = 42"
FINAL_TEXT = "Done: MAGIC_CONSTANT is 42 now, and the file reads as it should."


def signature(step: str) -> str:
    """An opaque, traceable signature: what step of the plan wrote it."""
    tail = hashlib.sha256(step.encode()).digest()[:24]
    return base64.b64encode(b"FAKESIG|" + step.encode() + b"|" + tail).decode()


def signed_step(sig: object) -> str | None:
    if not isinstance(sig, str):
        return None
    try:
        raw = base64.b64decode(sig, validate=True)
    except ValueError:
        return None
    return raw.split(b"|")[1].decode() if raw.startswith(b"FAKESIG|") else None


def signatures(body: Any) -> list[str]:
    """Every signature a request holds, in order."""
    found: list[str] = []
    for content in body.get("contents") or [] if isinstance(body, dict) else []:
        for part in content.get("parts") or []:
            if isinstance(part, dict) and isinstance(part.get("thoughtSignature"), str):
                found.append(part["thoughtSignature"])
    return found


def last_step(body: dict[str, Any]) -> str | None:
    """The step of the newest signed call of the conversation (``None``: none yet)."""
    for content in reversed(body.get("contents") or []):
        if content.get("role") != "model":
            continue
        for part in content.get("parts") or []:
            step = signed_step(part.get("thoughtSignature")) if "functionCall" in part else None
            if step is not None:
                return step
    return None


def _call(name: str, args: dict[str, Any], step: str | None) -> dict[str, Any]:
    part: dict[str, Any] = {"functionCall": {"name": name, "args": args}}
    if step is not None:
        part["thoughtSignature"] = signature(step)
    return part


def coding_plan(target: str, notes: str) -> Plan:
    """Gemini CLI's task: read ``target`` whole, replace its MAGIC line (and, in parallel,
    write ``notes``, unsigned, as the real API signs only the first of parallel calls), read
    ``target`` whole again, answer. A request without tools (a side request: a summary, a
    check) gets a short text."""
    steps: dict[str | None, Chunks] = {
        None: [
            [{"text": "**Reading**\n\nThe file first.", "thought": True}],
            [{"text": "I'll read the file first."}],
            [_call("read_file", {"file_path": target}, "read")],
        ],
        "read": [
            [
                _call(
                    "replace",
                    {
                        "file_path": target,
                        "instruction": "Change MAGIC_CONSTANT from 41 to 42.",
                        "old_string": MAGIC_OLD,
                        "new_string": MAGIC_NEW,
                    },
                    "replace",
                ),
                _call("write_file", {"file_path": notes, "content": "41 -> 42\n"}, None),
            ]
        ],
        "replace": [
            [{"text": "Let me read it again."}],
            [_call("read_file", {"file_path": target}, "reread")],
        ],
        "reread": [
            [{"text": FINAL_TEXT[:20]}],
            [{"text": FINAL_TEXT[20:], "thoughtSignature": signature("final")}],
        ],
    }

    def plan(body: dict[str, Any]) -> Chunks:
        if not body.get("tools"):
            return [[{"text": "OK"}]]
        return steps.get(last_step(body), steps["reread"])

    return plan


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes


@dataclass
class FakeGemini:
    """Gemini's ``generateContent`` and ``streamGenerateContent`` (``/v1beta`` and ``/v1``),
    answering each as ``plan`` says; ``countTokens`` and a model listing; anything else a
    404 in Gemini's error shape. Every request is recorded."""

    plan: Plan
    seen: list[Seen] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=lambda: dict(USAGE))
    refuse: tuple[int, dict[str, Any]] | None = None
    """(status, body) to answer every generate call with instead of the plan."""
    pause_s: float = 0.0
    """How long a stream waits between two chunks (a model writing)."""

    def app(self) -> web.Application:
        app = web.Application(client_max_size=512 * 1024 * 1024)
        self.add_routes(app)
        for version in ("v1beta", "v1"):
            app.router.add_get(f"/{version}/models", self._models)
        app.router.add_route("*", "/{tail:.*}", self._other)
        return app

    def add_routes(self, app: web.Application) -> None:
        """The model calls (``models/{model}:method``) on ``app``."""
        for version in ("v1beta", "v1"):
            app.router.add_post(f"/{version}/models/{{call}}", self._call)

    @property
    def generate_requests(self) -> list[Seen]:
        return [s for s in self.seen if s.path.split("?")[0].endswith(GENERATE)]

    async def _record(self, request: web.Request) -> Any:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw
        self.seen.append(Seen(request.method, request.path_qs, dict(request.headers), body, raw))
        return body

    async def _other(self, request: web.Request) -> web.Response:
        await self._record(request)
        return error(404, "NOT_FOUND")

    async def _models(self, request: web.Request) -> web.Response:
        await self._record(request)
        names = ("gemini-2.5-pro", "gemini-3.1-pro-preview", "gemini-3-flash-preview")
        return web.json_response({"models": [{"name": f"models/{n}"} for n in names]})

    async def _call(self, request: web.Request) -> web.StreamResponse:
        body = await self._record(request)
        model, _, method = request.match_info["call"].partition(":")
        if method == "countTokens":
            return web.json_response({"totalTokens": len(await request.read()) // 4})
        if method not in ("generateContent", "streamGenerateContent"):
            return error(404, "NOT_FOUND")
        if self.refuse is not None:
            return web.json_response(self.refuse[1], status=self.refuse[0])
        if not isinstance(body, dict) or not isinstance(body.get("contents"), list):
            return error(400, "INVALID_ARGUMENT")
        responses = chunk_responses(self.plan(body), model, self.usage)
        if method == "generateContent":
            return web.json_response(whole(responses))
        if request.query.get("alt") == "sse":
            return await stream_sse(request, responses, self.pause_s)
        return await stream_array(request, responses, self.pause_s)


GENERATE = (":generateContent", ":streamGenerateContent")


def error(code: int, status: str) -> web.Response:
    return web.json_response(
        {"error": {"code": code, "message": f"fake: {status}", "status": status}}, status=code
    )


def chunk_responses(chunks: Chunks, model: str, usage: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer as stream chunks: each a response with its parts; the last with
    ``finishReason`` and the whole usage, the others with the prompt's count only."""
    out = []
    for k, parts in enumerate(chunks):
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        figures: dict[str, Any] = {"promptTokenCount": usage["promptTokenCount"]}
        if k == len(chunks) - 1:
            candidate["finishReason"] = "STOP"
            figures = usage
        out.append(
            {
                "candidates": [candidate],
                "usageMetadata": figures,
                "modelVersion": model,
                "responseId": "fake-1",
            }
        )
    return out


def whole(responses: list[dict[str, Any]]) -> dict[str, Any]:
    """The chunks as one response: their parts together, the last chunk's figures."""
    parts = [p for r in responses for p in r["candidates"][0]["content"]["parts"]]
    last = responses[-1]
    candidate = {**last["candidates"][0], "content": {"parts": parts, "role": "model"}}
    return {**last, "candidates": [candidate]}


async def stream_sse(
    request: web.Request, responses: list[dict[str, Any]], pause_s: float = 0.0
) -> web.StreamResponse:
    answer = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await answer.prepare(request)
    for response in responses:
        data = json.dumps(response, separators=(",", ":"), ensure_ascii=False)
        await answer.write(f"data: {data}\r\n\r\n".encode())
        await asyncio.sleep(pause_s)
    await answer.write_eof()
    return answer


async def stream_array(
    request: web.Request, responses: list[dict[str, Any]], pause_s: float = 0.0
) -> web.StreamResponse:
    """Without ``alt=sse``: one JSON array, written an element at a time, pretty-printed
    across lines as Google's servers write it."""
    answer = web.StreamResponse(headers={"Content-Type": "application/json; charset=UTF-8"})
    await answer.prepare(request)
    for k, response in enumerate(responses):
        text = json.dumps(response, indent=2, ensure_ascii=False)
        await answer.write((("[" if k == 0 else "\n,\r\n") + text).encode())
        await asyncio.sleep(pause_s)
    await answer.write(b"\n]")
    await answer.write_eof()
    return answer
