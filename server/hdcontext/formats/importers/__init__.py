"""Conversions from agents' and providers' conversation formats to IContent.

One module a format, each with ``load``; :func:`load` picks one by name or detects it.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from ..conversation import IMPORT_FORMATS, Conversation, FormatError
from . import (
    anthropic_messages,
    claude_code,
    gemini_contents,
    icontent,
    mini_swe_agent,
    openai_chat,
)
from .detect import detect_format

__all__ = ["IMPORT_FORMATS", "detect_format", "load"]

_FROM_JSON: dict[str, Callable[[object], Conversation]] = {
    "icontent": icontent.load,
    "mini-swe-agent": mini_swe_agent.load,
    "openai": openai_chat.load,
    "anthropic": anthropic_messages.load,
    "gemini": gemini_contents.load,
}


def load(text: str, fmt: str = "auto") -> tuple[Conversation, str]:
    """The conversation in ``text`` and the format it was read as. FormatError otherwise."""
    if fmt == "auto":
        fmt = detect_format(text)
    if fmt == "claude-code":
        return claude_code.load(text), fmt
    reader = _FROM_JSON.get(fmt)
    if reader is None:
        raise FormatError(f"unknown format '{fmt}' (known: {', '.join(IMPORT_FORMATS)})")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FormatError(f"invalid JSON: {exc}") from None
    return reader(data), fmt
