"""What a provider billed for a call, read from its answer as it passes through.

The answer goes to the client byte for byte; the proxy only reads along. A JSON answer is read
once it is whole. An event stream (``text/event-stream``) is read line by line as it flows, and
only ``data:`` lines that mention ``"usage"`` are parsed, so a long stream costs a byte search
per chunk. Anthropic gives its input and cache figures in ``message_start`` and the output in
``message_delta`` (and, in ``cache_creation``, how many cache writes were made for an hour);
OpenAI gives one ``usage`` object, in the last chunk of a stream (when the
client asked for it with ``stream_options.include_usage``); its Responses API in the response
that ``response.completed`` (or ``response.incomplete``) carries.

How the answer ended is read along too (Anthropic's ``stop_reason``, OpenAI's
``finish_reason``): an answer that calls a tool is followed by the agent's next call within
seconds, one that answers waits on a person. The daemon weighs a refresh call by it, since the
proxy appends no answer to the session (``Session.note_waiting``).
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


def from_json(body: bytes, billed: Callable[[object], Billed | None]) -> Billed | None:
    """The usage of a whole JSON answer, or ``None``."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(data, Mapping):
        return None
    found = billed(data.get("usage"))
    return None if found is None else replace(found, waits_on=waiting_after(_ended(data)))


class StreamUsage:
    """Reads the usage of an event stream as its chunks pass (``feed``), whatever the chunk
    boundaries; ``billed`` is what it found once the stream ended."""

    MAX_LINE = 1 << 20
    """A line longer than this is not kept whole (no usage event is that long)."""

    def __init__(self, provider: str) -> None:
        """``provider``: the API whose events these are (``anthropic``, ``openai`` chat
        completions, ``responses``)."""
        self._provider = provider
        self._partial = bytearray()
        self._usage: dict[str, Any] = {}
        self._seen = False
        self._ended: object = None

    def feed(self, chunk: bytes) -> None:
        data = self._partial + chunk if self._partial else chunk
        lines = data.split(b"\n")
        rest = lines.pop()
        for line in lines:
            self._line(line)
        self._partial = bytearray(rest) if len(rest) <= self.MAX_LINE else bytearray()

    def _line(self, line: bytes | bytearray) -> None:
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
        if self._partial:
            self._line(bytes(self._partial))
            self._partial = bytearray()
        if not self._seen:
            return None
        found = _READERS.get(self._provider, openai_billed)(self._usage)
        return None if found is None else replace(found, waits_on=waiting_after(self._ended))


_READERS: dict[str, Callable[[object], Billed | None]] = {
    "anthropic": anthropic_billed,
    "openai": openai_billed,
    "responses": responses_billed,
}
