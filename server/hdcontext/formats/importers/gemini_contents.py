"""Gemini ``contents`` to IContent.

Accepts a request body (``{"contents": […], "systemInstruction": …}``) or the bare list; part
keys may be camelCase (REST) or snake_case (the Python SDK's dicts). A ``model`` content is an
``ai`` entry: ``text`` parts (``thought: true`` ones are thinking), ``functionCall``,
``executableCode`` (a code block) and ``codeExecutionResult`` (text that keeps its
``outcome``), ``inlineData``/``fileData`` (media). A ``user`` (or old ``function``) content is
a ``human`` entry, except that its ``functionResponse`` parts become a ``tool`` entry placed
first. A part's ``thoughtSignature`` rides along on its block; Gemini wants it back.

Gemini ids calls only sometimes. A call without an ``id`` gets one made from its position
(``gemini_synthetic_<content>_<part>``; the exporter leaves such ids out again), and a response
without one answers the oldest unanswered call of the same name. A ``response`` object of the
documented shape ``{"output": …, "error": …}`` is unwrapped into ``result`` and ``error``; any
other object is the result as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
from ..conversation import Conversation, FormatError
from .blocks import entry, make, text_of_parts, user_entries

SYNTHETIC_ID_PREFIX = "gemini_synthetic_"
RESPONSE_KEYS = frozenset({"output", "error"})


def load(data: object) -> Conversation:
    if isinstance(data, Mapping):
        contents = data.get("contents")
        system = _system_text(_get(data, "systemInstruction"))
    else:
        contents, system = data, None
    if not isinstance(contents, list):
        raise FormatError("a Gemini conversation is a list of contents or {contents: [...]}")
    return Conversation(tuple(from_contents(contents)), system=system)


def _get(mapping: Mapping[str, Any], camel: str) -> Any:
    """A key by its camelCase name, or its snake_case spelling."""
    if camel in mapping:
        return mapping[camel]
    snake = "".join("_" + c.lower() if c.isupper() else c for c in camel)
    return mapping.get(snake)


def _system_text(system: object) -> str | None:
    if system is None:
        return None
    if isinstance(system, str):
        return system
    parts = system.get("parts") if isinstance(system, Mapping) else None
    if isinstance(parts, list):
        text = text_of_parts([{"type": "text", **p} for p in parts if isinstance(p, Mapping)])
        if text is not None:
            return text
    raise FormatError("Gemini systemInstruction must be text or a content of text parts")


def from_contents(contents: list[Any]) -> list[IContent]:
    pending: list[ToolCallBlock] = []  # calls not yet answered, oldest first
    out: list[IContent] = []
    for i, content in enumerate(contents):
        if not isinstance(content, Mapping):
            raise FormatError(f"contents[{i}] is not an object")
        parts = content.get("parts")
        if not isinstance(parts, list):
            raise FormatError(f"contents[{i}].parts must be a list")
        role = content.get("role", "user")
        if role == "model":
            blocks = [_model_part(p, i, j, pending) for j, p in enumerate(parts)]
            out.append(entry("ai", [b for b in blocks if b is not None]))
        elif role in ("user", "function"):
            responses: list[Block] = []
            others: list[Block] = []
            for j, part in enumerate(parts):
                response = _get(part, "functionResponse") if isinstance(part, Mapping) else None
                if isinstance(response, Mapping):
                    responses.append(_response(response, part, i, j, pending))
                else:
                    block = _user_part(part)
                    if block is not None:
                        others.append(block)
            out.extend(user_entries(responses, others))
        else:
            raise FormatError(f"contents[{i}].role must be 'user' or 'model'")
    return out


def _signature(part: Mapping[str, Any]) -> Any:
    return _get(part, "thoughtSignature")


def _model_part(part: object, i: int, j: int, pending: list[ToolCallBlock]) -> Block | None:
    if not isinstance(part, Mapping):
        return None
    signature = _signature(part)
    call = _get(part, "functionCall")
    if isinstance(call, Mapping):
        block = make(
            ToolCallBlock,
            {
                "id": str(call.get("id") or f"{SYNTHETIC_ID_PREFIX}{i}_{j}"),
                "name": str(call.get("name")),
                "parameters": call.get("args"),
            },
            thoughtSignature=signature,
        )
        pending.append(block)
        return block
    code = _get(part, "executableCode")
    if isinstance(code, Mapping):
        return make(
            CodeBlock,
            {"code": str(code.get("code", "")), "language": code.get("language")},
            thoughtSignature=signature,
        )
    result = _get(part, "codeExecutionResult")
    if isinstance(result, Mapping):
        return make(
            TextBlock,
            {"text": str(result.get("output", ""))},
            codeExecutionOutcome=result.get("outcome") or "OUTCOME_UNSPECIFIED",
        )
    if isinstance(part.get("text"), str):
        if part.get("thought") is True:
            return make(ThinkingBlock, {"thought": part["text"]}, thoughtSignature=signature)
        return make(TextBlock, {"text": part["text"]}, thoughtSignature=signature)
    return _media(part)


def _user_part(part: object) -> Block | None:
    if not isinstance(part, Mapping):
        return None
    if isinstance(part.get("text"), str):
        return TextBlock(text=part["text"])
    return _media(part)


def _media(part: Mapping[str, Any]) -> MediaBlock | None:
    inline = _get(part, "inlineData")
    if isinstance(inline, Mapping):
        fields = {
            "mime_type": str(_get(inline, "mimeType") or "application/octet-stream"),
            "data": str(inline.get("data", "")),
            "encoding": "base64",
        }
        return MediaBlock.model_validate(fields)
    file = _get(part, "fileData")
    if isinstance(file, Mapping):
        fields = {
            "mime_type": str(_get(file, "mimeType") or "application/octet-stream"),
            "data": str(_get(file, "fileUri") or ""),
            "encoding": "url",
        }
        return MediaBlock.model_validate(fields)
    return None


def _response(
    response: Mapping[str, Any],
    part: Mapping[str, Any],
    i: int,
    j: int,
    pending: list[ToolCallBlock],
) -> ToolResponseBlock:
    name = str(response.get("name"))
    call_id = response.get("id")
    answered = next(
        (k for k, c in enumerate(pending) if (c.id == call_id if call_id else c.name == name)),
        None,
    )
    if answered is not None:
        call_id = pending.pop(answered).id
    fields: dict[str, Any] = {
        "call_id": str(call_id or f"{SYNTHETIC_ID_PREFIX}r{i}_{j}"),
        "tool_name": name,
    }
    body = response.get("response")
    if isinstance(body, Mapping) and set(body) <= RESPONSE_KEYS:
        fields["result"] = body.get("output")
        error = body.get("error")
        if error is not None:
            fields["error"] = error if isinstance(error, str) else json.dumps(error)
    else:
        fields["result"] = body
    return make(ToolResponseBlock, fields, thoughtSignature=_signature(part))
