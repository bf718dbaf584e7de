"""Small entry builders and a recording summarizer for the compression strategy tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import JsonValue

from hdcontext.core.compression.types import CompressionContext, SummarizeRequest
from hdcontext.core.content import (
    IContent,
    MediaBlock,
    TextBlock,
    ToolCallBlock,
    ToolResponseBlock,
    text_entry,
)
from hdcontext.core.tokens import count_entry
from hdcontext.core.tools.todos import Todo

SNAPSHOT = "<state_snapshot><overall_goal>Ship it.</overall_goal></state_snapshot>"


def human(text: str) -> IContent:
    return text_entry("human", text)


def ai(text: str) -> IContent:
    return text_entry("ai", text)


def call(call_id: str, name: str = "read_file", parameters: JsonValue = None) -> IContent:
    """An AI turn holding one tool call."""
    params: JsonValue = {"file_path": f"/src/{call_id}.py"} if parameters is None else parameters
    return IContent(speaker="ai", blocks=(ToolCallBlock(id=call_id, name=name, parameters=params),))


def response(
    call_id: str, name: str = "read_file", result: JsonValue = "ok", error: str | None = None
) -> IContent:
    """The tool turn answering ``call(call_id)``."""
    block = ToolResponseBlock(call_id=call_id, tool_name=name, result=result, error=error)
    return IContent(speaker="tool", blocks=(block,))


def media(mime_type: str = "image/png") -> IContent:
    return IContent(
        speaker="human",
        blocks=(
            TextBlock(text="look at this"),
            MediaBlock(mime_type=mime_type, data="aGk=", encoding="base64"),
        ),
    )


def chat(n: int, prefix: str = "m") -> list[IContent]:
    """``n`` alternating human/ai text turns, human first, each text naming its index."""
    return [human(f"{prefix}{i}") if i % 2 == 0 else ai(f"{prefix}{i}") for i in range(n)]


def ctx(
    history: Sequence[IContent],
    *,
    tokens: Sequence[int] | None = None,
    context_limit: int = 1000,
    threshold: float = 0.85,
    **kwargs: Any,
) -> CompressionContext:
    """A CompressionContext whose token counts are the real per-entry counts by default."""
    return CompressionContext(
        history=list(history),
        tokens=list(tokens) if tokens is not None else [count_entry(e) for e in history],
        context_limit=context_limit,
        threshold=threshold,
        **kwargs,
    )


def todo(id: str, content: str, status: str = "pending", *subtasks: Todo) -> Todo:
    return Todo(id=id, content=content, status=status, subtasks=tuple(subtasks))


class RecordingSummarizer:
    """A real summarizer (the ``Summarizer`` interface): keeps every request, answers ``text``."""

    def __init__(self, text: str = SNAPSHOT) -> None:
        self.text = text
        self.requests: list[SummarizeRequest] = []

    async def __call__(self, request: SummarizeRequest) -> str:
        self.requests.append(request)
        return self.text

    @property
    def request(self) -> SummarizeRequest:
        assert len(self.requests) == 1, f"expected one request, got {len(self.requests)}"
        return self.requests[0]


def texts(entry: IContent) -> str:
    return "\n".join(b.text for b in entry.blocks if isinstance(b, TextBlock))
