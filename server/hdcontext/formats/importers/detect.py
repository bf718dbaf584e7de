"""Which format a conversation file is in, from its shape alone.

Looked at in this order: a Claude Code log (JSON Lines, told by the first record that
identifies it, whatever its type: a log may open with summaries, snapshots or a permission
mode, and a line that is not JSON is passed over); a Codex rollout (JSON Lines of
``{timestamp, type, payload}`` records, told the same way); a Gemini CLI chat recording (its
``sessionId`` and ``projectHash``, the whole object or the first line); a mini-swe-agent trajectory
(``trajectory_format``, or ``messages`` with its ``exit`` role); a SWE-agent trajectory
(``history`` of role messages, or ``trajectory`` steps); Gemini (``contents``, or a list of
``parts``); IContent (``speaker`` and ``blocks``); then a list of role messages, which is
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
from .codex_rollout import is_record as is_codex_record
from .gemini_cli_records import is_header

# Claude Code record types and a key only that type of record has: a record is Claude Code's
# when it has both (or a ``sessionId`` beside any ``type``).
_CLAUDE_CODE_KEYS: dict[str, tuple[str, ...]] = {
    "user": ("uuid", "parentUuid"),
    "assistant": ("uuid", "parentUuid"),
    "system": ("uuid", "parentUuid"),
    "progress": ("uuid", "parentUuid"),
    "attachment": ("uuid", "parentUuid"),
    "summary": ("leafUuid",),
    "file-history-snapshot": ("snapshot", "messageId"),
    "permission-mode": ("permissionMode",),
    "queue-operation": ("operation",),
    "last-prompt": ("lastPrompt",),
}
_DETECT_LINES = 50
"""How many non-blank lines detection reads before it gives up on a JSON Lines file."""
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
        found = _jsonl_format(text)
        if found is not None:
            return found
        if _opens_gemini_cli_recording(text):
            return "gemini-cli"
        raise FormatError(f"invalid JSON: {exc}") from None
    if isinstance(data, Mapping):
        if is_claude_code_record(data):
            return "claude-code"  # a log of one line
        if is_codex_record(data):
            return "codex"
        return _detect_object(data)
    if isinstance(data, list):
        return _detect_list(data)
    raise FormatError("a conversation is a JSON object or array")


def is_claude_code_record(record: Mapping[str, Any]) -> bool:
    kind = record.get("type")
    if not isinstance(kind, str):
        return False
    if "sessionId" in record:
        return True
    return any(key in record for key in _CLAUDE_CODE_KEYS.get(kind, ()))


def _jsonl_format(text: str) -> str | None:
    """The JSON Lines format a record among the first lines identifies (a Claude Code log or
    a Codex rollout), or ``None``. Lines that are not JSON objects are passed over (the
    importers skip them with a warning)."""
    seen = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        seen += 1
        if seen > _DETECT_LINES:
            return None
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, Mapping) and is_claude_code_record(record):
            return "claude-code"
        if isinstance(record, Mapping) and is_codex_record(record):
            return "codex"
    return None


def _opens_gemini_cli_recording(text: str) -> bool:
    """Whether the first line of a JSON Lines file is a Gemini CLI recording's metadata."""
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        record = json.loads(first)
    except ValueError:
        return False
    return isinstance(record, Mapping) and is_header(record)


def _detect_object(data: Mapping[str, Any]) -> str:
    if is_header(data):
        return "gemini-cli"
    fmt = data.get("trajectory_format")
    if isinstance(fmt, str) and fmt.startswith("mini-swe-agent"):
        return "mini-swe-agent"
    if _is_swe_agent(data):
        return "swe-agent"
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


def _is_swe_agent(data: Mapping[str, Any]) -> bool:
    history = data.get("history")
    if isinstance(history, list):
        first = next((m for m in history if isinstance(m, Mapping)), None)
        return first is not None and "role" in first and "speaker" not in first
    steps = data.get("trajectory")
    return isinstance(steps, list) and any(
        isinstance(s, Mapping) and ("action" in s or "observation" in s) for s in steps
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
