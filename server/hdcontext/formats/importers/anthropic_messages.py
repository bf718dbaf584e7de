"""Anthropic Messages API content to IContent.

Accepts a request body (``{"system": …, "messages": […]}``) or the bare ``messages`` list.
Each message becomes one entry, so a round trip through the exporter gives the same
messages back: an assistant message is an ``ai`` entry; a user message is a ``human`` entry,
except that its ``tool_result`` blocks become a ``tool`` entry of their own, placed first
(Anthropic puts them first in the message that answers the calls).

What maps: ``text``; ``thinking`` (its ``signature`` kept as an extra, Anthropic needs it back)
and ``redacted_thinking`` (a thinking block with the opaque ``redactedData``); ``tool_use`` and
``tool_result`` (``is_error`` becomes ``error``; content of other parts than text, such as the
``tool_reference`` parts that load a deferred tool's definition, stays the list of parts);
``image`` and ``document`` with a base64 or url source (a document that is not a PDF keeps
``anthropicType: "document"``: a PDF is one by its type, whatever format it came from). A
``tool_use``'s ``caller`` (who invoked it: the model, or code it ran; the API returns it and
Claude Code sends it back) is kept as an extra. Server tools,
citations and ``cache_control`` are request mechanics, not conversation: they are left out.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ...core.content import (
    Block,
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from ..conversation import Conversation, FormatError
from .blocks import entry, make, text_of_parts, user_entries


def load(data: object) -> Conversation:
    if isinstance(data, Mapping):
        messages = data.get("messages")
        system = _system_text(data.get("system"))
    else:
        messages, system = data, None
    if not isinstance(messages, list):
        raise FormatError("an Anthropic conversation is a list of messages or {messages: [...]}")
    return Conversation(tuple(from_messages(messages)), system=system)


def _system_text(system: object) -> str | None:
    if system is None:
        return None
    text = text_of_parts(system)
    if text is None:
        raise FormatError("Anthropic 'system' must be a string or a list of text blocks")
    return text


def from_messages(messages: list[Any]) -> list[IContent]:
    names: dict[str, str] = {}
    out: list[IContent] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise FormatError(f"messages[{index}] is not an object")
        role = message.get("role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if not isinstance(blocks, list):
            raise FormatError(f"messages[{index}].content must be a string or a list")
        if role == "assistant":
            out.append(entry("ai", assistant_blocks(blocks, names)))
        elif role == "user":
            out.extend(user_entries(*user_blocks(blocks, names)))
        else:
            raise FormatError(f"messages[{index}].role must be 'user' or 'assistant'")
    return out


def assistant_blocks(raw_blocks: list[Any], names: dict[str, str]) -> list[Block]:
    """An assistant message's blocks; records each tool_use's name for its result."""
    blocks: list[Block] = []
    for raw in raw_blocks:
        if not isinstance(raw, Mapping):
            continue
        kind = raw.get("type")
        if kind == "text":
            blocks.append(TextBlock(text=str(raw.get("text", ""))))
        elif kind == "thinking":
            blocks.append(
                make(
                    ThinkingBlock,
                    {"thought": str(raw.get("thinking", ""))},
                    signature=raw.get("signature"),
                )
            )
        elif kind == "redacted_thinking":
            blocks.append(make(ThinkingBlock, {"thought": ""}, redactedData=raw.get("data")))
        elif kind == "tool_use":
            call_id, name = str(raw.get("id")), str(raw.get("name"))
            names[call_id] = name
            fields = {"id": call_id, "name": name, "parameters": raw.get("input")}
            blocks.append(make(ToolCallBlock, fields, caller=raw.get("caller")))
        elif kind in ("image", "document"):
            media = media_block(raw)
            if media is not None:
                blocks.append(media)
    return blocks


def user_blocks(raw_blocks: list[Any], names: Mapping[str, str]) -> tuple[list[Block], list[Block]]:
    """(tool responses, everything else) of a user message."""
    responses: list[Block] = []
    others: list[Block] = []
    for raw in raw_blocks:
        if not isinstance(raw, Mapping):
            continue
        kind = raw.get("type")
        if kind == "tool_result":
            responses.append(tool_response(raw, names))
        elif kind == "text":
            others.append(TextBlock(text=str(raw.get("text", ""))))
        elif kind in ("image", "document"):
            media = media_block(raw)
            if media is not None:
                others.append(media)
    return responses, others


def tool_response(raw: Mapping[str, Any], names: Mapping[str, str]) -> ToolResponseBlock:
    """A ``tool_result``: text-only content becomes a string (parts joined by newlines); content
    with images stays the list of blocks, as JSON; an error's text becomes ``error``."""
    call_id = str(raw.get("tool_use_id"))
    content = raw.get("content")
    text = text_of_parts(content) if content is not None else ""
    fields: dict[str, Any] = {"call_id": call_id, "tool_name": names.get(call_id, "unknown")}
    if raw.get("is_error"):
        fields["result"] = None
        fields["error"] = text or (json.dumps(content) if content else "error")
    else:
        fields["result"] = text if text is not None else content
    return ToolResponseBlock.model_validate(fields)


def media_block(raw: Mapping[str, Any]) -> MediaBlock | None:
    source = raw.get("source")
    if not isinstance(source, Mapping):
        return None
    kind = "document" if raw.get("type") == "document" else None
    # A url source names no type: an image is some image, a document a PDF (what the API
    # fetches by url).
    default = "application/pdf" if kind else "image/*"
    mime = str(source.get("media_type") or default)
    if source.get("type") == "base64":
        fields = {"mime_type": mime, "data": str(source.get("data", "")), "encoding": "base64"}
    elif source.get("type") == "url":
        fields = {"mime_type": mime, "data": str(source.get("url", "")), "encoding": "url"}
    else:
        return None
    return make(MediaBlock, fields, anthropicType=kind if mime != "application/pdf" else None)
