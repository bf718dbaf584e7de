"""A conversation as a Gemini request body: ``{"systemInstruction"?, "contents"}``.

An ``ai`` entry is a ``model`` content; ``human`` and ``tool`` entries are ``user`` contents
(responses as ``functionResponse`` parts). Thinking is a ``thought: true`` text part; a code
block in Python is ``executableCode`` (Gemini runs no other language), any other a fenced text;
a text that came from ``codeExecutionResult`` goes back as one. ``thoughtSignature`` goes back
on the part it came with, as Gemini requires.

Empty or whitespace-only texts are left out (Gemini refuses empty text parts), and so is a
content they leave with no parts; in a user content, ``functionResponse`` parts come first.

A response's result and error go in the documented ``{"output": …, "error": …}`` object; a
result that is already an object with other keys is sent as it is. Call ids are written (the
Gemini API pairs calls and responses by them) except the ones the importer made up for calls
that had none.
"""

from __future__ import annotations

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
from ..importers.gemini_contents import RESPONSE_KEYS, SYNTHETIC_ID_PREFIX
from .common import Losses, extra, fenced


def export(conversation: Conversation) -> Exported:
    losses = Losses()
    contents: list[dict[str, Any]] = []
    for entry in conversation.entries:
        role = "model" if entry.speaker == "ai" else "user"
        if entry.speaker == "human" and entry_role(entry.metadata) in ("system", "developer"):
            losses.drop("system role as user text")
        parts = [p for p in (_part(b, entry, losses) for b in entry.blocks) if p is not None]
        if role == "user":
            parts.sort(key=lambda p: "functionResponse" not in p)  # stable: answers first
        if parts:
            contents.append({"role": role, "parts": parts})
        else:
            losses.drop(f"empty {entry.speaker} entry")
    payload: dict[str, Any] = {"contents": contents}
    if conversation.system is not None:
        payload = {"systemInstruction": {"parts": [{"text": conversation.system}]}, **payload}
    return Exported(payload, losses.as_dict())


def _signed(part: dict[str, Any], block: Block) -> dict[str, Any]:
    signature = extra(block, "thoughtSignature")
    if signature is not None:
        part["thoughtSignature"] = signature
    return part


def _part(block: Block, entry: IContent, losses: Losses) -> dict[str, Any] | None:
    model = entry.speaker == "ai"
    if isinstance(block, TextBlock):
        outcome = extra(block, "codeExecutionOutcome")
        if outcome is not None and model:
            return {"codeExecutionResult": {"outcome": outcome, "output": block.text}}
        if not block.text.strip():
            losses.drop("blank text")
            return None
        return _signed({"text": block.text}, block)
    if isinstance(block, ThinkingBlock):
        if not model:
            losses.drop("thinking in human")
            return None
        if not block.thought.strip():
            losses.drop("blank thinking")  # redacted thinking: nothing Gemini can read
            return None
        return _signed({"text": block.thought, "thought": True}, block)
    if isinstance(block, CodeBlock):
        if model and (block.language or "").upper() == "PYTHON":
            code = {"language": block.language, "code": block.code}
            return _signed({"executableCode": code}, block)
        losses.drop("code as text")
        return {"text": fenced(block)}
    if isinstance(block, ToolCallBlock):
        if not model:
            losses.drop("tool_call in human")
            return None
        return _signed({"functionCall": _call(block)}, block)
    if isinstance(block, ToolResponseBlock):
        return _signed({"functionResponse": _response(block)}, block)
    return _media(block)


def _call(block: ToolCallBlock) -> dict[str, Any]:
    call: dict[str, Any] = {"name": block.name}
    if not block.id.startswith(SYNTHETIC_ID_PREFIX):
        call["id"] = block.id
    if block.parameters is not None:
        call["args"] = block.parameters
    return call


def _response(block: ToolResponseBlock) -> dict[str, Any]:
    result = block.result
    if isinstance(result, dict) and result and not set(result) <= RESPONSE_KEYS and not block.error:
        body: dict[str, Any] = result
    else:
        body = {} if result is None else {"output": result}
        if block.error:
            body["error"] = block.error
    response: dict[str, Any] = {"name": block.tool_name, "response": body}
    if not block.call_id.startswith(SYNTHETIC_ID_PREFIX):
        response["id"] = block.call_id
    return response


def _media(block: MediaBlock) -> dict[str, Any]:
    if block.encoding == "base64":
        return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}
    return {"fileData": {"mimeType": block.mime_type, "fileUri": block.data}}
