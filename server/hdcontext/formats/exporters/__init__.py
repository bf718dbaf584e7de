"""Conversions from IContent to the shapes chat extensions speak: OpenAI chat completions,
Anthropic Messages, Gemini ``contents``, and hdcontext's own IContent JSON.

One module a format, each with ``export(conversation) -> Exported``; what a format cannot
carry is listed in ``Exported.dropped``, never silently lost.
"""

from __future__ import annotations

from ..conversation import EXPORT_FORMATS, Conversation, Exported, FormatError
from . import anthropic, gemini, icontent, openai
from .openai import ThinkingMode

__all__ = ["EXPORT_FORMATS", "ThinkingMode", "export"]


def export(conversation: Conversation, fmt: str, thinking: ThinkingMode = "drop") -> Exported:
    """``thinking`` is for OpenAI only (see ``exporters.openai``)."""
    if fmt == "icontent":
        return icontent.export(conversation)
    if fmt == "openai":
        return openai.export(conversation, thinking=thinking)
    if fmt == "anthropic":
        return anthropic.export(conversation)
    if fmt == "gemini":
        return gemini.export(conversation)
    raise FormatError(f"cannot write '{fmt}' (known: {', '.join(EXPORT_FORMATS)})")
