"""Terse constructors for history entries, so tests read like the conversations they model."""

from __future__ import annotations

from pydantic import JsonValue

from hdcontext.core.content import (
    Block,
    IContent,
    Metadata,
    TextBlock,
    ToolCallBlock,
    ToolResponseBlock,
)


def _meta(ts: int | None) -> Metadata | None:
    return Metadata(timestamp=ts) if ts is not None else None


def call(call_id: str, name: str, params: JsonValue = None) -> ToolCallBlock:
    return ToolCallBlock(id=call_id, name=name, parameters=params)


def response(
    call_id: str, name: str, result: JsonValue = "ok", error: str | None = None
) -> ToolResponseBlock:
    return ToolResponseBlock(call_id=call_id, tool_name=name, result=result, error=error)


def ai_call(call_id: str, name: str, params: JsonValue = None, ts: int | None = None) -> IContent:
    """An AI turn making one tool call."""
    return IContent(speaker="ai", blocks=(call(call_id, name, params),), metadata=_meta(ts))


def ai(*blocks: Block, ts: int | None = None) -> IContent:
    """An AI turn with any blocks (parallel calls, text and calls...)."""
    return IContent(speaker="ai", blocks=blocks, metadata=_meta(ts))


def ai_text(text: str, ts: int | None = None) -> IContent:
    return IContent(speaker="ai", blocks=(TextBlock(text=text),), metadata=_meta(ts))


def tool_result(
    call_id: str,
    name: str,
    result: JsonValue = "ok",
    error: str | None = None,
    ts: int | None = None,
) -> IContent:
    """A tool entry answering one call."""
    return tools(response(call_id, name, result, error), ts=ts)


def tools(*responses: ToolResponseBlock, ts: int | None = None) -> IContent:
    """A tool entry answering several calls."""
    return IContent(speaker="tool", blocks=responses, metadata=_meta(ts))


def human(*texts: str, ts: int | None = None) -> IContent:
    """A user message, one text block per argument."""
    return IContent(
        speaker="human", blocks=tuple(TextBlock(text=t) for t in texts), metadata=_meta(ts)
    )


def inclusion(path: str, content: str) -> str:
    """Text the way an agent inlines an ``@file`` into a user message."""
    return f"--- {path} ---\n{content}\n--- End of content ---"
