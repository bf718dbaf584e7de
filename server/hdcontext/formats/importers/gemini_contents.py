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
without one answers the oldest unanswered call of the same name. A response whose id no call
has answers the oldest unanswered call of its name that came without an id, and that call
takes the response's id: Gemini CLI's ``/chat save`` checkpoints are so, the model's call
bare and the CLI's answer carrying the id the CLI made for it (the API pairs them by order and
name; with the id on both it pairs them the same). A ``response`` object of the documented
shape ``{"output": …, "error": …}`` is unwrapped into ``result`` and ``error`` (an empty one,
``{}``, is an empty output: the tool answered with nothing); any other object is the result as
it is.

The first ``user`` content of a Gemini CLI conversation is the CLI's context preamble, which
names the folder it ran in: that is the conversation's workspace root.
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
    Metadata,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from ..conversation import Conversation, FormatError
from .blocks import entry, make, text_of_parts, user_entries
from .gemini_cli_root import preamble_root

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
    entries = tuple(from_contents(contents))
    return Conversation(entries, system=system, workspace_root=_preamble_root(entries))


def _preamble_root(entries: tuple[IContent, ...]) -> str | None:
    """The folder the first human entry names, when it is a Gemini CLI context preamble."""
    first = next((e for e in entries if e.speaker == "human"), None)
    if first is None:
        return None
    return preamble_root("\n".join(b.text for b in first.blocks if isinstance(b, TextBlock)))


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


def from_contents(
    contents: list[Any], metadata: list[Metadata | None] | None = None
) -> list[IContent]:
    """The entries of ``contents``; each takes ``metadata[i]`` of the content it came from."""
    pairing = _Pairing()
    out: list[IContent] = []
    for i, content in enumerate(contents):
        start = len(out)
        _read_content(content, i, pairing, out)
        meta = metadata[i] if metadata is not None and i < len(metadata) else None
        if meta is not None:
            out[start:] = [e.model_copy(update={"metadata": meta}) for e in out[start:]]
    return pairing.renamed(out)


class _Pairing:
    """The calls not yet answered (oldest first), the ids calls came with, and the calls
    that take their answer's id."""

    def __init__(self) -> None:
        self.pending: list[ToolCallBlock] = []
        self.given_ids: set[str] = set()
        self.new_ids: dict[str, str] = {}

    def call(self, block: ToolCallBlock) -> None:
        self.pending.append(block)
        if not block.id.startswith(SYNTHETIC_ID_PREFIX):
            self.given_ids.add(block.id)

    def answer(self, name: str, call_id: object) -> str | None:
        """The id of the call a response of ``name`` with ``call_id`` answers, if any."""
        found = None
        if call_id:
            found = next((k for k, c in enumerate(self.pending) if c.id == call_id), None)
        if found is None and (not call_id or str(call_id) not in self.given_ids):
            found = next(
                (
                    k
                    for k, c in enumerate(self.pending)
                    if c.name == name and (not call_id or c.id.startswith(SYNTHETIC_ID_PREFIX))
                ),
                None,
            )
        if found is None:
            return None
        call = self.pending.pop(found)
        if call_id and call.id != call_id:
            self.new_ids[call.id] = str(call_id)
            self.given_ids.add(str(call_id))
            return str(call_id)
        return call.id

    def renamed(self, entries: list[IContent]) -> list[IContent]:
        """``entries`` with each call that took its answer's id under that id."""
        if not self.new_ids:
            return entries
        return [self._renamed(e) if e.speaker == "ai" else e for e in entries]

    def _renamed(self, entry: IContent) -> IContent:
        if not any(isinstance(b, ToolCallBlock) and b.id in self.new_ids for b in entry.blocks):
            return entry
        return entry.with_blocks(
            b.model_copy(update={"id": self.new_ids[b.id]})
            if isinstance(b, ToolCallBlock) and b.id in self.new_ids
            else b
            for b in entry.blocks
        )


def _read_content(content: object, i: int, pairing: _Pairing, out: list[IContent]) -> None:
    if not isinstance(content, Mapping):
        raise FormatError(f"contents[{i}] is not an object")
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise FormatError(f"contents[{i}].parts must be a list")
    role = content.get("role", "user")
    if role == "model":
        blocks = [_model_part(p, i, j, pairing) for j, p in enumerate(parts)]
        out.append(entry("ai", [b for b in blocks if b is not None]))
    elif role in ("user", "function"):
        responses: list[Block] = []
        others: list[Block] = []
        for j, part in enumerate(parts):
            response = _get(part, "functionResponse") if isinstance(part, Mapping) else None
            if isinstance(response, Mapping):
                responses.append(_response(response, part, i, j, pairing))
            else:
                block = _user_part(part)
                if block is not None:
                    others.append(block)
        out.extend(user_entries(responses, others))
    else:
        raise FormatError(f"contents[{i}].role must be 'user' or 'model'")


def _signature(part: Mapping[str, Any]) -> Any:
    return _get(part, "thoughtSignature")


def _model_part(part: object, i: int, j: int, pairing: _Pairing) -> Block | None:
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
        pairing.call(block)
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
    pairing: _Pairing,
) -> ToolResponseBlock:
    name = str(response.get("name"))
    call_id = pairing.answer(name, response.get("id")) or response.get("id")
    fields: dict[str, Any] = {
        "call_id": str(call_id or f"{SYNTHETIC_ID_PREFIX}r{i}_{j}"),
        "tool_name": name,
    }
    body = response.get("response")
    if isinstance(body, Mapping) and set(body) <= RESPONSE_KEYS:
        fields["result"] = "" if not body else body.get("output")
        error = body.get("error")
        if error is not None:
            fields["error"] = error if isinstance(error, str) else json.dumps(error)
    else:
        fields["result"] = body
    return make(ToolResponseBlock, fields, thoughtSignature=_signature(part))
