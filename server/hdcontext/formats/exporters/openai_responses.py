"""A conversation as OpenAI Responses API ``input`` items.

The inverse of ``importers/openai_responses.py``: an entry whose blocks carry the items they
came from (``openaiItem``, ``openaiPart``…) is written back as those very items, its blocks'
values filled in where the item left them out; an entry from elsewhere (a summary, another
format) is written in the API's full item form. A ``human`` entry is one ``message`` (its role
from ``metadata.role``, else ``user``); an ``ai`` entry is its items in block order; a ``tool``
entry is one output item per response.

Two rules of the API shape what is written:

* A ``reasoning`` item leads the item the model wrote right after it: the API refuses one
  "provided without its required following item". So a reasoning item whose next item is gone
  (pruning took the call it led, leaving nothing or another reasoning item after it) goes with
  it; it is never split from its turn or changed otherwise.
* Thinking that did not come from this API (another provider's, or reasoning given as text)
  cannot be sent back: OpenAI takes only its own encrypted items. It is left out and counted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...core.content import (
    CodeBlock,
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from ..conversation import Conversation, Exported, entry_role
from ..importers.openai_responses import (
    ARGUMENTS,
    CUSTOM_INPUT,
    ITEM,
    LEADS,
    PART,
    PART_FIELD,
    PLAIN_TEXT,
    arguments_json,
    lead_key,
)
from .common import Losses, extra, fenced, response_text


def export(conversation: Conversation) -> Exported:
    """The whole conversation, ``instructions`` beside it as a developer message first."""
    losses = Losses()
    items: list[dict[str, Any]] = []
    if conversation.system is not None:
        items.append(_message("developer", [{"type": "input_text", "text": conversation.system}]))
    for entry in conversation.entries:
        items.extend(export_entry(entry, losses))
    return Exported(items, losses.as_dict())


def export_entry(entry: IContent, losses: Losses | None = None) -> list[dict[str, Any]]:
    """One entry as its items."""
    losses = losses if losses is not None else Losses()
    if entry.speaker == "ai":
        return _model_items(entry, losses)
    if entry.speaker == "tool":
        return [_output(b) for b in entry.blocks if isinstance(b, ToolResponseBlock)]
    return _human(entry, losses)


def _message(role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": content}


def _filled(shape: object, values: dict[str, Any]) -> dict[str, Any]:
    """The item (or part) ``shape`` with ``values`` in place of the keys it left ``None``,
    in its own key order; ``values`` it does not name come after."""
    out = dict(shape) if isinstance(shape, dict) else {}
    for key, value in values.items():
        if out.get(key) is None:
            out[key] = value
    return out


def _human(entry: IContent, losses: Losses) -> list[dict[str, Any]]:
    role = entry_role(entry.metadata) or "user"
    blocks = entry.blocks
    first = blocks[0] if blocks else None
    shape = extra(first, ITEM) if first is not None else None
    if isinstance(first, TextBlock) and extra(first, PLAIN_TEXT) and len(blocks) == 1:
        return [_filled(shape, {"role": role, "content": first.text})]
    parts = [p for b in blocks if (p := _input_part(b, losses)) is not None]
    if not parts:
        return []
    if shape is None:
        return [_message(role, parts)]
    return [_filled(shape, {"role": role, "content": parts})]


def _input_part(block: object, losses: Losses) -> dict[str, Any] | None:
    if isinstance(block, TextBlock):
        return _text_part(block, "input_text")
    if isinstance(block, CodeBlock):
        losses.drop("code as text")
        return {"type": "input_text", "text": fenced(block)}
    if isinstance(block, MediaBlock):
        return _media_part(block)
    if isinstance(block, ToolResponseBlock):
        losses.drop("tool response in a message")
        return {"type": "input_text", "text": response_text(block)}
    losses.drop(type(block).__name__)
    return None


def _text_part(block: TextBlock, kind: str) -> dict[str, Any]:
    shape = extra(block, PART)
    if isinstance(shape, dict):
        field = PART_FIELD.get(str(shape.get("type")), "text")
        return _filled(shape, {field: block.text})
    if kind == "output_text":
        return {"type": "output_text", "text": block.text, "annotations": []}
    return {"type": kind, "text": block.text}


def _media_part(block: MediaBlock) -> dict[str, Any]:
    url = block.data if block.encoding == "url" else f"data:{block.mime_type};base64,{block.data}"
    shape = extra(block, PART)
    if isinstance(shape, dict):
        field = PART_FIELD.get(str(shape.get("type")), "image_url")
        return _filled(shape, {field: url})
    if block.mime_type.startswith("image/"):
        return {"type": "input_image", "image_url": url, "detail": "auto"}
    return {"type": "input_file", "file_data": url}


def _model_items(entry: IContent, losses: Losses) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    leads: dict[int, str] = {}  # a reasoning item's index: the item it led
    message: dict[str, Any] | None = None  # the assistant message being written
    for block in entry.blocks:
        shape = extra(block, ITEM)
        if isinstance(block, ThinkingBlock):
            message = None
            if isinstance(shape, dict):
                led = extra(block, LEADS)
                if isinstance(led, str):
                    leads[len(items)] = led
                items.append(dict(shape))
            else:
                losses.drop("thinking")
        elif isinstance(block, (TextBlock, CodeBlock)):
            if isinstance(block, CodeBlock):
                losses.drop("code as text")
                block = TextBlock(text=fenced(block))
            if message is None or isinstance(shape, dict):
                start = shape if isinstance(shape, dict) else _message("assistant", [])
                message = _filled(start, {"role": "assistant", "content": []})
                items.append(message)
            message["content"].append(_text_part(block, "output_text"))
        elif isinstance(block, ToolCallBlock):
            message = None
            items.append(_call(block))
        else:
            losses.drop(f"{type(block).__name__} in ai")
    return _led(items, leads, losses)


def _call(block: ToolCallBlock) -> dict[str, Any]:
    shape = extra(block, ITEM)
    kind = shape.get("type") if isinstance(shape, dict) else "function_call"
    parameters = block.parameters
    if kind == "custom_tool_call" and isinstance(parameters, dict):
        freeform = parameters.get(CUSTOM_INPUT)
        values = {"call_id": block.id, "name": block.name, CUSTOM_INPUT: freeform}
        return _filled(shape, values)
    if kind == "local_shell_call":
        return _filled(shape, {"call_id": block.id, "action": parameters})
    raw = extra(block, ARGUMENTS)
    arguments = raw if isinstance(raw, str) and _same(raw, parameters) else None
    if arguments is None:
        arguments = parameters if isinstance(parameters, str) else arguments_json(parameters)
    values = {"name": block.name, "arguments": arguments, "call_id": block.id}
    if isinstance(shape, dict) and shape.get("type") == "function_call":
        return _filled(shape, values)
    return {"type": "function_call", **values}


def _same(raw: str, parameters: object) -> bool:
    """Whether arguments as written still say ``parameters`` (an edit may have changed them)."""
    if isinstance(parameters, str):
        return raw == parameters
    try:
        return bool(json.loads(raw) == parameters)
    except ValueError:
        return False


def _output(block: ToolResponseBlock) -> dict[str, Any]:
    shape = extra(block, ITEM)
    result = block.result
    output: object = result if isinstance(result, (str, list)) and not block.error else None
    if output is None:
        output = response_text(block)
    kind = shape.get("type") if isinstance(shape, dict) else "function_call_output"
    if kind == "local_shell_call_output":
        return _filled(shape, {"id": block.call_id, "output": output})
    if isinstance(shape, dict):
        return _filled(shape, {"call_id": block.call_id, "output": output})
    return {"type": "function_call_output", "call_id": block.call_id, "output": output}


def _led(
    items: Sequence[dict[str, Any]], leads: Mapping[int, str], losses: Losses
) -> list[dict[str, Any]]:
    """``items`` without the reasoning items the item they led no longer follows (pruning
    took it): followed by nothing, by another reasoning item, or by another item than the
    one it led (``leads``: by index, when the import said which)."""
    kept: list[dict[str, Any]] = []
    for i, item in enumerate(items):
        after = items[i + 1] if i + 1 < len(items) else None
        if item.get("type") == "reasoning" and (
            after is None
            or after.get("type") == "reasoning"
            or (i in leads and lead_key(after) != leads[i])
        ):
            losses.drop("reasoning without its following item")
            continue
        kept.append(item)
    return kept
