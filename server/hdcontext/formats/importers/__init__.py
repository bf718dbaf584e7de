"""Conversions from agents' and providers' conversation formats to IContent.

One module a format, each with ``load``; :func:`load` picks one by name or detects it, and
every conversation it returns has been through ``core.validity.repair``: what an agent's log
holds out of place (results written after the next model message, blank texts, a call the
session never answered) is put where providers want it, and the warnings say what moved.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace

from ...core.validity import repair
from ..conversation import IMPORT_FORMATS, Conversation, FormatError
from . import (
    anthropic_messages,
    claude_code,
    codex_rollout,
    gemini_cli,
    gemini_contents,
    icontent,
    mini_swe_agent,
    openai_chat,
    swe_agent,
)
from .claude_code import ALL, AUTO, MAIN
from .detect import detect_format

__all__ = ["ALL", "AUTO", "IMPORT_FORMATS", "MAIN", "detect_format", "load", "load_threads"]

_FROM_JSON: dict[str, Callable[[object], Conversation]] = {
    "icontent": icontent.load,
    "mini-swe-agent": mini_swe_agent.load,
    "swe-agent": swe_agent.load,
    "openai": openai_chat.load,
    "anthropic": anthropic_messages.load,
    "gemini": gemini_contents.load,
}


def load(
    text: str, fmt: str = "auto", *, strict: bool = False, thread: str = AUTO
) -> tuple[Conversation, str]:
    """The conversation in ``text`` and the format it was read as. FormatError otherwise.

    ``strict``: a JSON Lines line that is not a record is an error, not a skipped line.
    ``thread``: which thread of a Claude Code log (``auto``, ``main`` or an agent id); other
    formats hold one conversation, ``main``.
    """
    if fmt == "auto":
        fmt = detect_format(text)
    if fmt == "claude-code":
        return _repaired(claude_code.load(text, thread=thread, strict=strict)), fmt
    if thread not in (AUTO, MAIN):
        raise FormatError(f"{fmt} holds one conversation: there is no thread '{thread}'")
    return _repaired(_one(text, fmt, strict)), fmt


def load_threads(
    text: str, fmt: str = "auto", *, strict: bool = False
) -> tuple[list[tuple[str, Conversation]], str]:
    """Every conversation in ``text``, by thread name: a Claude Code log's main thread and each
    sub-agent's; any other format's one conversation as ``main``."""
    if fmt == "auto":
        fmt = detect_format(text)
    if fmt == "claude-code":
        threads = claude_code.load_threads(text, strict=strict)
        return [(name, _repaired(c)) for name, c in threads], fmt
    return [(MAIN, _repaired(_one(text, fmt, strict)))], fmt


def _one(text: str, fmt: str, strict: bool) -> Conversation:
    """The one conversation of a file in a format that holds one: a JSON Lines log or a JSON
    document."""
    if fmt == "gemini-cli":
        return gemini_cli.load(text, strict=strict)
    if fmt == "codex":
        return codex_rollout.load(text, strict=strict)
    return _from_json(text, fmt)


def _from_json(text: str, fmt: str) -> Conversation:
    reader = _FROM_JSON.get(fmt)
    if reader is None:
        raise FormatError(f"unknown format '{fmt}' (known: {', '.join(IMPORT_FORMATS)})")
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise FormatError(f"invalid JSON: {exc}") from None
    return reader(data)


def _repaired(conversation: Conversation) -> Conversation:
    fixed = repair(conversation.entries)
    if not fixed.notes:
        return conversation
    notes = (*conversation.warnings, *fixed.notes)
    return replace(conversation, entries=fixed.entries, warnings=notes)
