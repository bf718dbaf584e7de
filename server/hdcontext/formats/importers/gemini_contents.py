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

``exact=True`` reads a request's contents for the proxy, which sends them back: each content
is one entry (a model's an ``ai`` entry; a user's a ``tool`` entry when it holds a
``functionResponse``, its other parts kept in their place, else a ``human`` one), and a part
not in the form its block is written in keeps its shape (``gemini_parts.py``), so that the
exporter writes the very content again. A part or a content it cannot carry so (a part kind it
does not read, a key in snake_case, a call in a user's content, a response that answers no
call) is a FormatError naming the content's index, the part's and its kind, never content.
Synthetic ids count contents from ``offset``, the index of the first given, so that the same
call gets the same id whatever part of the conversation is read.
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
    Speaker,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from ..conversation import Conversation, FormatError
from ..gemini_parts import (
    CONTENT,
    PART,
    RESPONSE_KEYS,
    SIDE_KEYS,
    SIGNATURE,
    SIGNED_STEP,
    SYNTHETIC_ID_PREFIX,
    extra,
    kind_of,
    part_of,
    same,
    shape_of,
)
from .blocks import entry, make, text_of_parts, user_entries
from .gemini_cli_root import preamble_root

__all__ = ["RESPONSE_KEYS", "SYNTHETIC_ID_PREFIX", "from_contents", "load"]


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
    contents: list[Any],
    offset: int = 0,
    *,
    exact: bool = False,
    metadata: list[Metadata | None] | None = None,
) -> list[IContent]:
    """The entries of ``contents``; ``offset``: the index of the first (errors and synthetic
    ids count from it); ``exact``: as the proxy reads a request (the module's docstring);
    ``metadata[k]``: what each entry of the ``k``-th content takes."""
    pending = _Pending()
    renames: dict[str, str] = {}  # bare calls that take their answer's id
    out: list[IContent] = []
    for k, (i, content) in enumerate(enumerate(contents, offset)):
        start = len(out)
        _read_content(content, i, pending, renames, out, exact)
        meta = metadata[k] if metadata is not None and k < len(metadata) else None
        if meta is not None:
            out[start:] = [e.model_copy(update={"metadata": meta}) for e in out[start:]]
    return _renamed(out, renames)


def _read_content(
    content: object,
    i: int,
    pending: _Pending,
    renames: dict[str, str],
    out: list[IContent],
    exact: bool,
) -> None:
    """One content as its entries, appended to ``out``."""
    if not isinstance(content, Mapping):
        raise FormatError(f"contents[{i}] is not an object")
    parts = content.get("parts")
    if not isinstance(parts, list):
        raise FormatError(f"contents[{i}].parts must be a list")
    role = content.get("role", "user")
    if exact:
        out.append(_exact_content(content, parts, role, i, pending))
    elif role == "model":
        blocks = [_model_part(p, i, j, pending) for j, p in enumerate(parts)]
        out.append(entry("ai", [b for b in blocks if b is not None]))
    elif role in ("user", "function"):
        responses: list[Block] = []
        others: list[Block] = []
        for j, part in enumerate(parts):
            response = _get(part, "functionResponse") if isinstance(part, Mapping) else None
            if isinstance(response, Mapping):
                responses.append(_response(response, part, i, j, pending, renames=renames))
            else:
                block = _user_part(part)
                if block is not None:
                    others.append(block)
        out.extend(user_entries(responses, others))
    else:
        raise FormatError(f"contents[{i}].role must be 'user' or 'model'")


class _Pending(list[ToolCallBlock]):
    """The calls not answered yet, oldest first, and the ids every call so far came with (a
    response with one of those answers that call or none: never a bare call by its name)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def append(self, call: ToolCallBlock) -> None:
        super().append(call)
        if not call.id.startswith(SYNTHETIC_ID_PREFIX):
            self.seen.add(call.id)


def _renamed(entries: list[IContent], renames: Mapping[str, str]) -> list[IContent]:
    """``entries`` with each call that took its answer's id under that id."""
    if not renames:
        return entries
    return [
        e.with_blocks(
            b.model_copy(update={"id": renames[b.id]})
            if isinstance(b, ToolCallBlock) and b.id in renames
            else b
            for b in e.blocks
        )
        if e.speaker == "ai"
        and any(isinstance(b, ToolCallBlock) and b.id in renames for b in e.blocks)
        else e
        for e in entries
    ]


def _exact_content(
    content: Mapping[str, Any], parts: list[Any], role: object, i: int, pending: _Pending
) -> IContent:
    """One content as one entry, each part as it came (``exact``)."""
    if role not in ("user", "model"):
        raise FormatError(f"contents[{i}] has role {_shown(role)}, which hdcontext does not carry")
    model = role == "model"
    blocks: list[Block] = []
    signed_step = False  # the content's first call came with a signature
    calls = 0
    for j, part in enumerate(parts):
        where = f"contents[{i}].parts[{j}]"
        block = _exact_part(part, where, model, i, j, pending)
        if isinstance(block, ToolCallBlock):
            if calls == 0:
                signed_step = _signature(part) is not None
            elif signed_step and _signature(part) is None:
                block = _with(block, {SIGNED_STEP: True})
            calls += 1
        blocks.append(block)
    speaker: Speaker = "ai" if model else "human"
    if not model and any(isinstance(b, ToolResponseBlock) for b in blocks):
        speaker = "tool"
    shape = {k: (None if k == "parts" else v) for k, v in content.items()}
    if blocks and not same(shape, {"parts": None, "role": role}):
        blocks[0] = _with(blocks[0], {CONTENT: shape})
    return entry(speaker, blocks)


def _exact_part(part: object, where: str, model: bool, i: int, j: int, pending: _Pending) -> Block:
    """One part as its block, with its shape when it is not the form the block is written
    in; a FormatError for a part hdcontext cannot carry as it came."""
    if not isinstance(part, Mapping):
        raise FormatError(f"{where} is not an object")
    kind = kind_of(part)
    others = [k for k in part if k != kind and k not in SIDE_KEYS]
    if others:
        raise FormatError(
            f"{where} has part kind {_shown(others[0])}, which hdcontext does not carry"
        )
    block: Block | None
    if kind is None:
        if not model or _signature(part) is None:
            raise FormatError(f"{where} holds no part kind hdcontext reads")
        block = make(ThinkingBlock, {"thought": ""}, thoughtSignature=_signature(part))
    elif kind == "functionResponse":
        response = part[kind]
        if model or not isinstance(response, Mapping):
            raise FormatError(f"{where} (functionResponse) is not a response of a user's content")
        if _answered(response, pending, by_name_too=True) is None:
            raise FormatError(f"{where} (functionResponse) answers no call before it")
        block = _response(response, part, i, j, pending, exact=True)
    elif kind in ("functionCall", "executableCode", "codeExecutionResult") and not model:
        raise FormatError(f"{where} ({kind}) is in a user's content")
    elif kind == "text" and not model:
        text = part.get("text")
        block = TextBlock(text=text) if isinstance(text, str) else None
    else:
        block = _model_part(part, i, j, pending)
    if block is None:
        raise FormatError(f"{where} ({kind}) is not of the shape Gemini documents")
    signature = _signature(part)
    if signature is not None and extra(block, SIGNATURE) != signature:
        block = _with(block, {SIGNATURE: signature})
    written, _ = part_of(block, model)
    if written is None or not same(written, dict(part)):
        shape = shape_of(part)
        given = part.get("functionResponse")
        paired_by_name = (
            isinstance(block, ToolResponseBlock)
            and isinstance(given, Mapping)
            and "id" in given
            and given["id"] != block.call_id
        )
        if paired_by_name:
            # An id its call did not have: it goes back as it came.
            shape["functionResponse"]["id"] = part["functionResponse"]["id"]
        block = _with(block, {PART: shape})
    return block


def _answered(
    response: Mapping[str, Any], pending: _Pending, by_name_too: bool = False
) -> int | None:
    """Which of the calls not answered yet a response answers: the one of its id, or for a
    response without one the oldest of its name; ``by_name_too``: also, for a response
    with an id no call has, the oldest of its name that had no id (Gemini CLI before 0.5
    gave its responses ids and its calls none)."""
    call_id, name = response.get("id"), str(response.get("name"))
    for k, call in enumerate(pending):
        if (call.id == call_id) if call_id else call.name == name:
            return k
    if call_id and by_name_too and str(call_id) not in pending.seen:
        for k, call in enumerate(pending):
            if call.name == name and call.id.startswith(SYNTHETIC_ID_PREFIX):
                return k
    return None


def _with(block: Block, extras: Mapping[str, Any]) -> Block:
    return type(block).model_validate({**block.model_dump(exclude_unset=True), **extras})


def _shown(value: object) -> str:
    """A key or role as an error may name it: a short string, else only its JSON type."""
    if isinstance(value, str) and len(value) <= 40 and value.isprintable():
        return repr(value)
    return f"of JSON type {type(value).__name__}"


def _signature(part: Mapping[str, Any]) -> Any:
    return _get(part, SIGNATURE)


def _model_part(part: object, i: int, j: int, pending: _Pending) -> Block | None:
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
            thoughtSignature=signature,
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
    pending: _Pending,
    exact: bool = False,
    renames: dict[str, str] | None = None,
) -> ToolResponseBlock:
    """A response, paired with the call it answers (``_answered``). Read for the proxy
    (``exact``) it takes its call's id; read from a file, a bare call it answers by name takes
    the response's own id (``renames``), so that both carry it when written back."""
    name = str(response.get("name"))
    call_id = response.get("id")
    answered = _answered(response, pending, by_name_too=True)
    if answered is not None:
        call = pending.pop(answered)
        if not exact and renames is not None and call_id and call.id != call_id:
            renames[call.id] = str(call_id)
        else:
            call_id = call.id
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
