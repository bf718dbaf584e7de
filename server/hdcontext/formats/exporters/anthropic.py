"""A conversation as an Anthropic Messages API request body: ``{"system"?, "messages"}``.

An ``ai`` entry is an ``assistant`` message; a ``human`` entry a ``user`` message; a ``tool``
entry a ``user`` message of ``tool_result`` blocks (``error`` sets ``is_error``), then any other
block it holds. A message with one text is a string. Thinking goes back only with the
``signature`` Anthropic gave it (``redactedData`` as ``redacted_thinking``): Anthropic refuses
unsigned thinking, so thinking from other models is left out.

Also left out, and counted: empty or whitespace-only texts and the messages they leave empty
(the API refuses both), media that is neither an image nor a document, media in an assistant
message, tool calls or thinking in a human entry. A ``system`` entry in the middle of the
history becomes user text; code becomes fenced text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...core.content import (
    Block,
    CodeBlock,
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from ..conversation import Conversation, Exported, entry_role
from .common import Losses, extra, fenced, json_text, response_text

_RESULT_BLOCKS = frozenset({"text", "image", "document", "search_result", "tool_reference"})
"""Parts a ``tool_result``'s content list may hold, written back as they came (a
``tool_reference`` loads a deferred tool's definition: Claude Code's ToolSearch answers so)."""


def export(conversation: Conversation) -> Exported:
    losses = Losses()
    messages: list[dict[str, Any]] = []
    for entry in conversation.entries:
        if entry.speaker == "ai":
            content = _assistant(entry, losses)
            if content:
                messages.append({"role": "assistant", "content": _compact(content)})
            else:
                losses.drop("empty ai entry")
        else:
            if entry_role(entry.metadata) in ("system", "developer"):
                losses.drop("system role as user text")
            content = _user(entry.blocks, losses)
            if content:
                messages.append({"role": "user", "content": _compact(content)})
            else:
                losses.drop(f"empty {entry.speaker} entry")
    payload: dict[str, Any] = {"messages": messages}
    if conversation.system is not None:
        payload = {"system": conversation.system, **payload}
    return Exported(payload, losses.as_dict())


def _compact(content: list[dict[str, Any]]) -> Any:
    """One plain text block is written as a string."""
    if len(content) == 1 and set(content[0]) == {"type", "text"} and content[0]["type"] == "text":
        return content[0]["text"]
    return content


def _assistant(entry: IContent, losses: Losses) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for block in entry.blocks:
        if isinstance(block, TextBlock | CodeBlock):
            _text(block, out, losses)
        elif isinstance(block, ThinkingBlock):
            if extra(block, "redactedData") is not None:
                out.append({"type": "redacted_thinking", "data": extra(block, "redactedData")})
            elif extra(block, "signature") is not None:
                out.append(
                    {
                        "type": "thinking",
                        "thinking": block.thought,
                        "signature": extra(block, "signature"),
                    }
                )
            else:
                losses.drop("unsigned thinking")
        elif isinstance(block, ToolCallBlock):
            call = {
                "type": "tool_use",
                "id": block.id,
                "name": block.name,
                "input": _input(block, losses),
            }
            caller = extra(block, "caller")
            if caller is not None:  # as the API answered it (programmatic tool calling)
                call["caller"] = caller
            out.append(call)
        else:
            losses.drop(f"{block.type} in ai")
    return out


def _input(block: ToolCallBlock, losses: Losses) -> dict[str, Any]:
    params = block.parameters
    if isinstance(params, dict):
        return params
    if params is None:
        return {}
    losses.drop("non-object tool input")
    return {"value": params}


def _text(block: TextBlock | CodeBlock, out: list[dict[str, Any]], losses: Losses) -> None:
    if isinstance(block, CodeBlock):
        out.append({"type": "text", "text": fenced(block)})
        losses.drop("code as text")
    elif block.text.strip():
        out.append({"type": "text", "text": block.text})
    else:
        losses.drop("blank text")


def _user(blocks: Sequence[Block], losses: Losses) -> list[dict[str, Any]]:
    results = [_result(b) for b in blocks if isinstance(b, ToolResponseBlock)]
    rest: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, ToolResponseBlock):
            continue
        if isinstance(block, TextBlock | CodeBlock):
            _text(block, rest, losses)
        elif isinstance(block, MediaBlock):
            media = _media(block)
            if media is None:
                losses.drop(f"media {block.mime_type}")
            else:
                rest.append(media)
        else:
            losses.drop(f"{block.type} in human")
    return results + rest


def _result(block: ToolResponseBlock) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "tool_result", "tool_use_id": block.call_id}
    result = block.result
    if block.error:
        out["content"] = response_text(block)
        out["is_error"] = True
    elif (
        isinstance(result, list)
        and result
        and all(isinstance(r, dict) and r.get("type") in _RESULT_BLOCKS for r in result)
    ):
        out["content"] = result  # content blocks kept as they came (images in a result)
    else:
        out["content"] = json_text(result)
    return out


def _media(block: MediaBlock) -> dict[str, Any] | None:
    mime = block.mime_type
    is_image = mime.startswith("image/") and extra(block, "anthropicType") != "document"
    if not is_image and mime != "application/pdf" and extra(block, "anthropicType") != "document":
        return None
    if block.encoding == "base64":
        source = {"type": "base64", "media_type": mime, "data": block.data}
    else:
        source = {"type": "url", "url": block.data}
    return {"type": "image" if is_image else "document", "source": source}
