"""Conversions from IContent to the shapes chat extensions speak: OpenAI chat completions,
Anthropic Messages, Gemini ``contents``, and hdcontext's own IContent JSON.

One module a format, each with ``export(conversation) -> Exported``; what a format cannot
carry is listed in ``Exported.dropped``, never silently lost. Every payload goes through the
provider rules (``core.validity``) on its way out: ``Exported.problems`` says how it breaks
them, so that nothing invalid is written without the caller knowing.
"""

from __future__ import annotations

from dataclasses import replace

from ...core.validity import payload_problems, problems
from ..conversation import EXPORT_FORMATS, Conversation, Exported, FormatError
from . import anthropic, gemini, icontent, openai
from .openai import ThinkingMode

__all__ = ["EXPORT_FORMATS", "ThinkingMode", "export"]


def export(conversation: Conversation, fmt: str, thinking: ThinkingMode = "drop") -> Exported:
    """``thinking`` is for OpenAI only (see ``exporters.openai``)."""
    if fmt == "icontent":
        exported = icontent.export(conversation)
        return replace(exported, problems=tuple(problems(conversation.entries)))
    if fmt == "openai":
        exported = openai.export(conversation, thinking=thinking)
    elif fmt == "anthropic":
        exported = anthropic.export(conversation)
    elif fmt == "gemini":
        exported = gemini.export(conversation)
    else:
        raise FormatError(f"cannot write '{fmt}' (known: {', '.join(EXPORT_FORMATS)})")
    return replace(exported, problems=tuple(payload_problems(fmt, exported.payload)))
