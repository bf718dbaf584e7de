"""A conversation as OpenAI chat-completions ``messages``.

The system prompt is the first message. A ``human`` entry is a ``user`` message (or a
``system``/``developer`` one, when ``metadata.role`` says so); an ``ai`` entry is one
``assistant`` message whose ``tool_calls`` carry its calls with JSON-string ``arguments``; a
``tool`` entry is one ``tool`` message per response, in order. A message with one text is a
string; with more, or with media, a list of parts.

What chat completions cannot carry, and what happens to it:

* thinking: OpenAI takes none back. Left out by default; ``thinking="reasoning_content"``
  writes it in the ``reasoning_content`` field that DeepSeek and vLLM read (OpenAI itself
  rejects unknown message fields, so it is not the default).
* a tool response's error: tool messages have no error flag, so the error text is appended
  to the content (counted as ``tool error flag``).
* code blocks become fenced Markdown text; media in an assistant message, media given by a
  URL that is not an image, and tool calls in a human entry are left out.
* empty or whitespace-only texts are left out, and so is a message they leave with nothing
  (providers behind this format, Anthropic's among them, refuse blank text).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

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
from .common import Losses, extra, fenced, response_text

ThinkingMode = Literal["drop", "reasoning_content"]
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


def export(conversation: Conversation, thinking: ThinkingMode = "drop") -> Exported:
    losses = Losses()
    messages: list[dict[str, Any]] = []
    if conversation.system is not None:
        messages.append({"role": "system", "content": conversation.system})
    for entry in conversation.entries:
        if entry.speaker == "ai":
            assistant = _assistant(entry, thinking, losses)
            if assistant is not None:
                messages.append(assistant)
        elif entry.speaker == "tool":
            messages.extend(_tool(entry, losses))
        else:
            messages.extend(_human(entry, losses))
    return Exported(messages, losses.as_dict())


def _assistant(entry: IContent, thinking: ThinkingMode, losses: Losses) -> dict[str, Any] | None:
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[dict[str, Any]] = []
    for block in entry.blocks:
        if isinstance(block, TextBlock):
            if block.text.strip():
                texts.append(block.text)
            else:
                losses.drop("blank text")
        elif isinstance(block, CodeBlock):
            texts.append(fenced(block))
            losses.drop("code as text")
        elif isinstance(block, ThinkingBlock):
            if thinking == "reasoning_content" and block.thought:
                thoughts.append(block.thought)
            else:
                losses.drop("thinking")
        elif isinstance(block, ToolCallBlock):
            calls.append(_call(block))
        else:
            losses.drop(f"{block.type} in ai")
    if not (texts or thoughts or calls):
        losses.drop("empty ai entry")
        return None
    message: dict[str, Any] = {"role": "assistant", "content": _text_content(texts)}
    if thoughts:
        message["reasoning_content"] = "\n".join(thoughts)
    if calls:
        message["tool_calls"] = calls
    return message


def _text_content(texts: list[str]) -> Any:
    if not texts:
        return None
    if len(texts) == 1:
        return texts[0]
    return [{"type": "text", "text": t} for t in texts]


def _call(block: ToolCallBlock) -> dict[str, Any]:
    params = block.parameters
    if isinstance(params, str):
        arguments = params  # arguments that were not JSON when they came in
    else:
        arguments = json.dumps({} if params is None else params, ensure_ascii=False)
    return {
        "id": block.id,
        "type": "function",
        "function": {"name": block.name, "arguments": arguments},
    }


def _tool(entry: IContent, losses: Losses) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    others: list[Block] = []
    for block in entry.blocks:
        if isinstance(block, ToolResponseBlock):
            out.append(_response(block, losses))
        else:
            others.append(block)
    content = _user_content(others, losses) if others else None
    if content is not None:
        out.append({"role": "user", "content": content})
    return out


def _response(block: ToolResponseBlock, losses: Losses) -> dict[str, Any]:
    if block.error:
        losses.drop("tool error flag")
    return {"role": "tool", "tool_call_id": block.call_id, "content": response_text(block)}


def _human(entry: IContent, losses: Losses) -> list[dict[str, Any]]:
    role = entry_role(entry.metadata)
    if role in ("system", "developer"):
        texts = [b.text for b in entry.blocks if isinstance(b, TextBlock)]
        if len(texts) != len(entry.blocks):
            losses.drop(f"non-text in {role}", len(entry.blocks) - len(texts))
        text = "\n".join(texts)
        if not text.strip():
            losses.drop(f"empty {role} entry")
            return []
        return [{"role": role, "content": text}]
    out = [_response(b, losses) for b in entry.blocks if isinstance(b, ToolResponseBlock)]
    rest = [b for b in entry.blocks if not isinstance(b, ToolResponseBlock)]
    content = _user_content(rest, losses)
    if content is not None:
        out.append({"role": "user", "content": content})
    elif not out:
        losses.drop("empty human entry")
    return out


def _user_content(blocks: Sequence[Block], losses: Losses) -> Any:
    """The content of a user message, or ``None`` when nothing in ``blocks`` can go."""
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            if block.text.strip():
                parts.append({"type": "text", "text": block.text})
            else:
                losses.drop("blank text")
        elif isinstance(block, CodeBlock):
            parts.append({"type": "text", "text": fenced(block)})
            losses.drop("code as text")
        elif isinstance(block, MediaBlock):
            part = _media(block)
            if part is None:
                losses.drop(f"media {block.mime_type}")
            else:
                parts.append(part)
        else:
            losses.drop(f"{block.type} in human")
    if len(parts) == 1 and parts[0]["type"] == "text":
        return parts[0]["text"]
    if not parts:
        return None
    return parts


def _media(block: MediaBlock) -> dict[str, Any] | None:
    mime = block.mime_type
    if mime.startswith("image/"):
        url = block.data if block.encoding == "url" else f"data:{mime};base64,{block.data}"
        image: dict[str, Any] = {"url": url}
        if extra(block, "detail") is not None:
            image["detail"] = extra(block, "detail")
        return {"type": "image_url", "image_url": image}
    if block.encoding != "base64":
        return None
    if mime in _AUDIO_FORMATS:
        return {
            "type": "input_audio",
            "input_audio": {"data": block.data, "format": _AUDIO_FORMATS[mime]},
        }
    file: dict[str, Any] = {"file_data": f"data:{mime};base64,{block.data}"}
    if extra(block, "filename") is not None:
        file["filename"] = extra(block, "filename")
    return {"type": "file", "file": file}
