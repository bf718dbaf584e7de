"""Which format a conversation file is in, from its shape alone.

Looked at in this order: JSON Lines of Claude Code records; a mini-swe-agent trajectory
(``trajectory_format``, or ``messages`` with its ``exit`` role); Gemini (``contents``, or a list
of ``parts``); IContent (``speaker`` and ``blocks``); then a list of role messages, which is
Anthropic when a message has Anthropic-only blocks (``tool_use``, ``tool_result``,
``thinking``, an image with a ``source``) or a top-level ``system`` beside it, and OpenAI
otherwise. Plain user/assistant text reads the same in both, so the answer does not matter
there.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ..conversation import FormatError

_CLAUDE_CODE_TYPES = frozenset(
    {"user", "assistant", "system", "summary", "file-history-snapshot", "progress"}
)
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "document"}
)
_OPENAI_PARTS = frozenset({"image_url", "input_audio", "file", "refusal"})
_OPENAI_ROLES = frozenset({"system", "developer", "tool", "function"})


def detect_format(text: str) -> str:
    """One of ``conversation.IMPORT_FORMATS``; FormatError when nothing fits."""
    try:
        data: Any = json.loads(text)
    except ValueError as exc:
        if _is_claude_code_jsonl(text):
            return "claude-code"
        raise FormatError(f"invalid JSON: {exc}") from None
    if isinstance(data, Mapping):
        return _detect_object(data)
    if isinstance(data, list):
        return _detect_list(data)
    raise FormatError("a conversation is a JSON object or array")


def _is_claude_code_jsonl(text: str) -> bool:
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            return False
        return (
            isinstance(record, Mapping)
            and record.get("type") in _CLAUDE_CODE_TYPES | {"queue-operation"}
            and any(k in record for k in ("sessionId", "uuid", "message", "leafUuid"))
        )
    return False


def _detect_object(data: Mapping[str, Any]) -> str:
    fmt = data.get("trajectory_format")
    if isinstance(fmt, str) and fmt.startswith("mini-swe-agent"):
        return "mini-swe-agent"
    if "contents" in data:
        return "gemini"
    if "entries" in data or "history" in data:
        return "icontent"
    messages = data.get("messages")
    if isinstance(messages, list):
        if any(isinstance(m, Mapping) and m.get("role") == "exit" for m in messages):
            return "mini-swe-agent"
        if "system" in data:
            return "anthropic"
        return _detect_messages(messages)
    raise FormatError(
        "unknown conversation object: expected 'messages', 'contents', 'entries' or 'history'"
    )


def _detect_list(data: Sequence[Any]) -> str:
    first = next((item for item in data if isinstance(item, Mapping)), None)
    if first is None:
        if not data:
            return "icontent"  # an empty history
        raise FormatError("a conversation list holds objects")
    if "speaker" in first and "blocks" in first:
        return "icontent"
    if "parts" in first or first.get("role") == "model":
        return "gemini"
    if "role" in first:
        return _detect_messages(data)
    raise FormatError("unknown conversation list: no 'speaker', 'role' or 'parts'")


def _detect_messages(messages: Sequence[Any]) -> str:
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        if message.get("role") in _OPENAI_ROLES or "tool_calls" in message:
            return "openai"
        if "reasoning_content" in message or "function_call" in message:
            return "openai"
        content = message.get("content")
        for part in content if isinstance(content, list) else []:
            if not isinstance(part, Mapping):
                continue
            kind = part.get("type")
            if kind in _ANTHROPIC_BLOCKS or (kind == "image" and "source" in part):
                return "anthropic"
            if kind in _OPENAI_PARTS:
                return "openai"
    return "openai"
