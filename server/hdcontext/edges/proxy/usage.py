"""What a provider billed for a call, read from its answer as it passes through.

The answer goes to the client byte for byte; the proxy only reads along. A JSON answer is read
once it is whole. An event stream (``text/event-stream``) is read line by line as it flows, and
only ``data:`` lines that mention ``"usage"`` are parsed, so a long stream costs a byte search
per chunk. Anthropic gives its input and cache figures in ``message_start`` and the output in
``message_delta`` (and, in ``cache_creation``, how many cache writes were made for an hour);
OpenAI gives one ``usage`` object, in the last chunk of a stream (when the
client asked for it with ``stream_options.include_usage``); its Responses API in the response
that ``response.completed`` (or ``response.incomplete``) carries. Gemini gives
``usageMetadata`` in its response, and in the chunks of a stream (the last one's figures are
the call's): as events with ``alt=sse``, or without it as one JSON array written as it comes,
which is read once it is whole.

How the answer ended is read along too (Anthropic's ``stop_reason``, OpenAI's
``finish_reason``; for Gemini, whether a chunk called a function): an answer that calls a tool
is followed by the agent's next call within seconds, one that answers waits on a person. The
daemon weighs a refresh call by it, since the proxy appends no answer to the session
(``Session.note_waiting``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from ...core.cache.rhythm import Waiting, waiting_after


@dataclass(frozen=True)
class Billed:
    """``history/usage``'s figures: ``input_tokens`` counts every input token, cached or not."""

    input_tokens: int
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0
    cache_write_1h_tokens: int | None = None
    """Of the cache writes, those made for an hour (Anthropic's ``cache_creation``), when the
    answer says; it prices them at the hour's rate in ``hdcontext stats``."""
    waits_on: Waiting = field(default="unknown", compare=False)
    """What the answer leaves the session waiting on, from how it ended (not a figure of the
    bill: two bills of the same counts are equal)."""

    def params(self, session_id: str, at: int) -> dict[str, Any]:
        return {
            "sessionId": session_id,
            "inputTokens": self.input_tokens,
            "cacheReadTokens": self.cache_read_tokens,
            "cacheWriteTokens": self.cache_write_tokens,
            "outputTokens": self.output_tokens,
            "at": at,
        }


def _ended(data: Mapping[str, Any]) -> object:
    """How a whole answer ended: Anthropic's ``stop_reason``, OpenAI's first choice's
    ``finish_reason``; for a Responses API response, whether its output calls a tool
    (``tool_calls``) or answers (``stop``)."""
    if "stop_reason" in data:
        return data.get("stop_reason")
    output = data.get("output")
    if data.get("object") == "response" and isinstance(output, list):
        calls = any(isinstance(i, Mapping) and i.get("type") in _CALLS for i in output)
        return "tool_calls" if calls else "stop"
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], Mapping):
        return choices[0].get("finish_reason")
    return None


def count(value: object) -> int:
    """A token count from an answer: a non-negative integer, anything else 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def anthropic_billed(usage: object) -> Billed | None:
    """Anthropic's ``usage``: ``input_tokens`` leaves out what was read from or written to the
    cache, so the input is the sum of the three."""
    if not isinstance(usage, Mapping):
        return None
    read = count(usage.get("cache_read_input_tokens"))
    write = count(usage.get("cache_creation_input_tokens"))
    split = usage.get("cache_creation")
    long = count(split.get("ephemeral_1h_input_tokens")) if isinstance(split, Mapping) else None
    return Billed(
        input_tokens=count(usage.get("input_tokens")) + read + write,
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=count(usage.get("output_tokens")),
        cache_write_1h_tokens=None if long is None else min(long, write),
    )


def openai_billed(usage: object) -> Billed | None:
    """OpenAI's ``usage``: ``prompt_tokens`` counts every input token; the cached part is in
    ``prompt_tokens_details.cached_tokens`` (and, where a provider reports them, the tokens
    written to the cache in ``cache_write_tokens``)."""
    if not isinstance(usage, Mapping):
        return None
    details = usage.get("prompt_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    return Billed(
        input_tokens=count(usage.get("prompt_tokens")),
        cache_read_tokens=count(details.get("cached_tokens")),
        cache_write_tokens=count(details.get("cache_write_tokens")),
        output_tokens=count(usage.get("completion_tokens")),
    )


_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
"""Output items of a Responses API answer that the agent runs and answers at once."""


def responses_billed(usage: object) -> Billed | None:
    """The Responses API's ``usage``: ``input_tokens`` counts every input token; the cached
    part is ``input_tokens_details.cached_tokens``, what was written to the cache
    ``input_tokens_details.cache_write_tokens`` (GPT-5.6 and later)."""
    if not isinstance(usage, Mapping):
        return None
    details = usage.get("input_tokens_details")
    details = details if isinstance(details, Mapping) else {}
    return Billed(
        input_tokens=count(usage.get("input_tokens")),
        cache_read_tokens=count(details.get("cached_tokens")),
        cache_write_tokens=count(details.get("cache_write_tokens")),
        output_tokens=count(usage.get("output_tokens")),
    )


GEMINI_USAGE = "usageMetadata"


def gemini_billed(usage: object) -> Billed | None:
    """Gemini's ``usageMetadata``: ``promptTokenCount`` counts every input token, the cached
    ones (``cachedContentTokenCount``) among them; the output is the answer's tokens
    (``candidatesTokenCount``) and its thinking (``thoughtsTokenCount``), billed alike. An
    implicit cache reports no write, and charges none."""
    if not isinstance(usage, Mapping):
        return None
    return Billed(
        input_tokens=count(usage.get("promptTokenCount")),
        cache_read_tokens=count(usage.get("cachedContentTokenCount")),
        output_tokens=count(usage.get("candidatesTokenCount"))
        + count(usage.get("thoughtsTokenCount")),
    )


class GeminiAnswer:
    """What Gemini's answer says so far, chunk by chunk (a whole response is one chunk):
    the latest ``usageMetadata`` (each chunk of a stream carries the figures so far), and how
    it ended: ``tool_calls`` once a chunk called a function, else ``stop`` after a ``STOP``
    (any other ``finishReason`` as it is: the rhythm does not know it)."""

    def __init__(self) -> None:
        self.usage: object = None
        self.calls = False
        self.finish: object = None

    def chunk(self, data: object) -> None:
        if not isinstance(data, Mapping):
            return
        usage = data.get(GEMINI_USAGE)
        if isinstance(usage, Mapping):
            self.usage = usage
        candidates = data.get("candidates")
        first = candidates[0] if isinstance(candidates, list) and candidates else None
        if not isinstance(first, Mapping):
            return
        if first.get("finishReason") is not None:
            self.finish = first.get("finishReason")
        content = first.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        if isinstance(parts, list) and any(
            isinstance(p, Mapping) and "functionCall" in p for p in parts
        ):
            self.calls = True

    @property
    def ended(self) -> object:
        if self.calls:
            return "tool_calls"
        return "stop" if self.finish == "STOP" else self.finish

    def billed(self, reader: Callable[[object], Billed | None]) -> Billed | None:
        found = reader(self.usage)
        return None if found is None else replace(found, waits_on=waiting_after(self.ended))


def from_json(body: bytes, billed: Callable[[object], Billed | None]) -> Billed | None:
    """The usage of a whole JSON answer, or ``None``: a response, or Gemini's stream without
    ``alt=sse`` (a JSON array of responses)."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if isinstance(data, list) or (isinstance(data, Mapping) and GEMINI_USAGE in data):
        answer = GeminiAnswer()
        for chunk in data if isinstance(data, list) else [data]:
            answer.chunk(chunk)
        return answer.billed(billed)
    if not isinstance(data, Mapping):
        return None
    found = billed(data.get("usage"))
    return None if found is None else replace(found, waits_on=waiting_after(_ended(data)))


class StreamUsage:
    """Reads the usage of an event stream as its chunks pass (``feed``), whatever the chunk
    boundaries; ``billed`` is what it found once the stream ended."""

    MAX_LINE = 1 << 20
    """A line longer than this is not kept whole (no usage event is that long)."""
    MAX_ARRAY = 64 * 1024 * 1024
    """Gemini's JSON-array stream is kept whole up to this, to be read at its end."""

    def __init__(self, provider: str) -> None:
        """``provider``: the API whose events these are (``anthropic``, ``openai`` chat
        completions, ``responses``, ``gemini``: events with ``alt=sse``, else one JSON
        array)."""
        self._provider = provider
        self._partial = bytearray()
        self._usage: dict[str, Any] = {}
        self._seen = False
        self._ended: object = None
        self._gemini = GeminiAnswer() if provider == "gemini" else None
        self._array: bytearray | None = None
        """Gemini's stream without ``alt=sse``, as it came so far (``None``: events)."""
        self._began = False
        self._too_long = False

    def feed(self, chunk: bytes) -> None:
        if self._gemini is not None and (self._array is not None or self._opens_array(chunk)):
            self._keep(chunk)
            return
        data = self._partial + chunk if self._partial else chunk
        lines = data.split(b"\n")
        rest = lines.pop()
        for line in lines:
            self._line(line)
        self._partial = bytearray(rest) if len(rest) <= self.MAX_LINE else bytearray()

    def _opens_array(self, chunk: bytes) -> bool:
        """Whether Gemini's stream is a JSON array (its first byte not a space is ``[``)."""
        if self._began:
            return False
        first = chunk.lstrip()[:1]
        self._began = bool(first)
        if first == b"[":
            self._array = bytearray()
            return True
        return False

    def _keep(self, chunk: bytes) -> None:
        assert self._array is not None
        if self._too_long or len(self._array) + len(chunk) > self.MAX_ARRAY:
            self._too_long = True  # not read: no usage, as from a stream cut short
            self._array = bytearray()
        else:
            self._array += chunk

    def _line(self, line: bytes | bytearray) -> None:
        if self._gemini is not None:
            if line.startswith(b"data:") and any(m in line for m in _GEMINI_MARKS):
                try:
                    self._gemini.chunk(orjson.loads(line[5:]))
                except orjson.JSONDecodeError:
                    return
            return
        if not line.startswith(b"data:") or (
            b'"usage"' not in line and b'"finish_reason":"' not in line
        ):
            return
        try:
            event = orjson.loads(line[5:])
        except orjson.JSONDecodeError:
            return
        if not isinstance(event, dict):
            return
        if self._provider == "anthropic":
            self._anthropic(event)
        elif self._provider == "responses":
            self._responses(event)
        else:
            usage = event.get("usage")
            if isinstance(usage, dict):
                self._usage = usage
                self._seen = True
            reason = _ended(event)
            if reason is not None:
                self._ended = reason

    def _anthropic(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            usage = message.get("usage") if isinstance(message, dict) else None
            if isinstance(usage, dict):
                self._usage = dict(usage)
                self._seen = True
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, dict) and delta.get("stop_reason") is not None:
                self._ended = delta.get("stop_reason")
            usage = event.get("usage")
            if isinstance(usage, dict):
                # Later figures of the same call: the delta's non-null ones win.
                self._usage.update({k: v for k, v in usage.items() if v is not None})
                self._seen = True

    def _responses(self, event: dict[str, Any]) -> None:
        if event.get("type") not in ("response.completed", "response.incomplete"):
            return
        response = event.get("response")
        if not isinstance(response, dict):
            return
        usage = response.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
            self._seen = True
        self._ended = _ended(response)

    @property
    def billed(self) -> Billed | None:
        if self._array is not None:
            return None if self._too_long else from_json(bytes(self._array), gemini_billed)
        if self._partial:
            self._line(bytes(self._partial))
            self._partial = bytearray()
        if self._gemini is not None:
            return self._gemini.billed(gemini_billed)
        if not self._seen:
            return None
        found = _READERS.get(self._provider, openai_billed)(self._usage)
        return None if found is None else replace(found, waits_on=waiting_after(self._ended))


_READERS: dict[str, Callable[[object], Billed | None]] = {
    "anthropic": anthropic_billed,
    "openai": openai_billed,
    "responses": responses_billed,
    "gemini": gemini_billed,
}
_GEMINI_MARKS = (b'"usageMetadata"', b'"functionCall"', b'"finishReason"')
"""What an event of Gemini's stream must hold to be parsed at all."""
