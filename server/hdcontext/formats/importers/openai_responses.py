"""OpenAI Responses API ``input`` items to IContent.

The Responses API sends the conversation as a flat list of items, not messages: a turn of the
model is its ``reasoning``, its ``message`` and its calls, each an item of its own, and every
tool's output is an item too. So consecutive items of the model's side become one ``ai``
entry (its blocks in item order: reasoning as thinking, message parts as text, calls as tool
calls), consecutive outputs one ``tool`` entry, and each ``user``, ``developer`` or ``system``
message a ``human`` entry (the last two marked ``metadata.role``, as chat completions' are).

Everything an item carries that IContent has no field for rides along as an extra, so that
the exporter (``exporters/openai_responses.py``) writes the very item back: ``openaiItem``
holds the item's keys in their order (the ones a block carries left as ``None``: the exporter
fills them in), ``openaiPart`` the same for a content part, ``openaiArguments`` a call's
arguments as the model wrote them, and ``openaiText`` marks a message whose content was a
plain string. What must come back byte for byte and is never read (a ``reasoning`` item's
``encrypted_content``, a ``web_search_call``, which ran on OpenAI's side and has no output
item) is a thinking block whose ``openaiItem`` is the whole item.

What is carried: ``message`` (with or without its ``type``; ``input_text``, ``output_text``,
``refusal``, ``input_image`` and ``input_file`` given inline), ``reasoning``,
``function_call`` and ``function_call_output`` (paired by ``call_id``), ``custom_tool_call``
and its output (Codex's freeform ``apply_patch``: the input is the call's ``input``
parameter), ``local_shell_call`` and its output, and ``web_search_call``. Anything else (an
item kind hdcontext does not know, an image or file given by id, a content part of another
kind) is a FormatError that names the item's index and kind, never its content: the proxy
then sends the request as it came.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...core.content import (
    Block,
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from ..conversation import Conversation, FormatError, role_metadata
from .blocks import entry, make, parse_data_url

ITEM: Final = "openaiItem"
PART: Final = "openaiPart"
ARGUMENTS: Final = "openaiArguments"
PLAIN_TEXT: Final = "openaiText"
LEADS: Final = "openaiLeads"
"""On a reasoning item's block: which item it led (``lead_key``), so that the exporter can
tell when pruning took that item and the reasoning must go with it."""

CALL_KINDS: Final = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
OUTPUT_KINDS: Final = frozenset(
    {"function_call_output", "custom_tool_call_output", "local_shell_call_output"}
)
OPAQUE_KINDS: Final = frozenset({"reasoning", "web_search_call"})
"""Items of the model's side that go back whole and are never read."""
MODEL_KINDS: Final = CALL_KINDS | OPAQUE_KINDS
"""Item kinds of the model's side (besides an assistant ``message``)."""
PROMPT_ROLES: Final = frozenset({"system", "developer"})

MAPPED: Final[Mapping[str, frozenset[str]]] = {
    "message": frozenset({"role", "content"}),
    "function_call": frozenset({"call_id", "name", "arguments"}),
    "custom_tool_call": frozenset({"call_id", "name", "input"}),
    "local_shell_call": frozenset({"call_id", "action"}),
    "function_call_output": frozenset({"call_id", "output"}),
    "custom_tool_call_output": frozenset({"call_id", "output"}),
    "local_shell_call_output": frozenset({"id", "output"}),
}
"""The keys of each item kind a block carries (the rest stay in ``openaiItem``)."""
PART_FIELD: Final[Mapping[str, str]] = {
    "input_text": "text",
    "output_text": "text",
    "refusal": "refusal",
    "input_image": "image_url",
    "input_file": "file_data",
}
"""The key of each content part kind that holds what a block carries."""
CUSTOM_INPUT: Final = "input"
"""A custom tool call's parameters are ``{"input": <its freeform input>}``."""
LOCAL_SHELL: Final = "local_shell"
"""The tool name of a ``local_shell_call`` (the item names none)."""


def load(data: object) -> Conversation:
    """A request body (``{"input": [...], "instructions": ...}``) or the bare item list."""
    items: object = data
    system = None
    if isinstance(data, Mapping):
        items = data.get("input")
        instructions = data.get("instructions")
        system = instructions if isinstance(instructions, str) else None
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise FormatError("a Responses conversation is a list of items or {input: [...]}")
    return Conversation(tuple(from_items(items)), system=system)


def kind_of(item: Mapping[str, Any]) -> object:
    """An item's kind: its ``type``, or ``message`` for the short form ``{role, content}``."""
    kind = item.get("type")
    return "message" if kind is None and "role" in item else kind


def model_side(item: object) -> bool:
    """Whether an item is the model's own (it belongs to an ``ai`` entry)."""
    if not isinstance(item, Mapping):
        return False
    kind = kind_of(item)
    return kind in MODEL_KINDS or (kind == "message" and item.get("role") == "assistant")


def shown(kind: object) -> str:
    """A kind as an error may name it: a short string, else only its JSON type."""
    if isinstance(kind, str) and len(kind) <= 40 and kind.isprintable():
        return repr(kind)
    return f"of JSON type {type(kind).__name__}"


def from_items(items: Sequence[Any], offset: int = 0) -> list[IContent]:
    """The entries of ``items`` (``offset``: the index of the first, as errors name it)."""
    builder = _Builder()
    for index, item in enumerate(items, offset):
        after = items[index - offset + 1] if index - offset + 1 < len(items) else None
        where = f"input[{index}]"
        if not isinstance(item, Mapping):
            raise FormatError(f"{where} is not an object")
        kind = kind_of(item)
        if kind == "message":
            builder.message(item, where)
        elif kind in CALL_KINDS:
            builder.model(_call(item, str(kind), where))
        elif kind in OPAQUE_KINDS:
            leads = lead_key(after) if kind == "reasoning" and model_side(after) else None
            builder.model(_opaque(item, leads))
        elif kind in OUTPUT_KINDS:
            builder.output(_output(item, str(kind), builder.names, where))
        else:
            raise FormatError(
                f"{where} has item type {shown(kind)}, which hdcontext does not carry"
            )
    return builder.done()


class _Builder:
    def __init__(self) -> None:
        self.entries: list[IContent] = []
        self.names: dict[str, str] = {}
        self._ai: list[Block] = []
        self._tool: list[Block] = []

    def _close(self) -> None:
        if self._ai:
            self.entries.append(entry("ai", self._ai))
            self._ai = []
        if self._tool:
            self.entries.append(entry("tool", self._tool))
            self._tool = []

    def model(self, block: Block) -> None:
        if self._tool:
            self._close()
        if isinstance(block, ToolCallBlock):
            self.names[block.id] = block.name
        self._ai.append(block)

    def output(self, block: Block) -> None:
        if self._ai:
            self._close()
        self._tool.append(block)

    def message(self, item: Mapping[str, Any], where: str) -> None:
        role = item.get("role")
        if role == "assistant":
            for block in _message_blocks(item, where):
                self.model(block)
            return
        if role not in ("user", *PROMPT_ROLES):
            raise FormatError(f"{where} is a message of role {shown(role)}")
        self._close()
        metadata = role_metadata(str(role)) if role in PROMPT_ROLES else None
        self.entries.append(entry("human", _message_blocks(item, where), metadata))

    def done(self) -> list[IContent]:
        self._close()
        return self.entries


def template(item: Mapping[str, Any], kind: str) -> dict[str, Any]:
    """An item's keys in their order, the ones its block carries left ``None``."""
    mapped = MAPPED.get(kind, frozenset())
    return {k: (None if k in mapped else v) for k, v in item.items()}


def _message_blocks(item: Mapping[str, Any], where: str) -> list[Block]:
    """A message's content as blocks, the first carrying the item (``openaiItem``: its role
    is the entry's metadata's or the ``ai`` speaker's, written back in its place)."""
    shape = template(item, "message")
    content = item.get("content")
    if isinstance(content, str):
        return [make(TextBlock, {"text": content}, **{ITEM: shape, PLAIN_TEXT: True})]
    if not isinstance(content, list):
        raise FormatError(f"{where}.content is neither text nor a list")
    blocks = [_part(part, f"{where}.content[{k}]") for k, part in enumerate(content)]
    if not blocks:
        raise FormatError(f"{where} has no content")
    first = blocks[0]
    blocks[0] = type(first).model_validate({**first.model_dump(exclude_unset=True), ITEM: shape})
    return blocks


def _part(part: object, where: str) -> Block:
    if not isinstance(part, Mapping):
        raise FormatError(f"{where} is not an object")
    kind = part.get("type")
    field = PART_FIELD.get(kind) if isinstance(kind, str) else None
    if field is None:
        raise FormatError(f"{where} has part type {shown(kind)}, which hdcontext does not carry")
    value = part.get(field)
    if not isinstance(value, str):
        raise FormatError(f"{where} ({kind}) has no {field} given inline")
    shape = {k: (None if k == field else v) for k, v in part.items()}
    if field in ("text", "refusal"):
        return make(TextBlock, {"text": value}, **{PART: shape})
    data = parse_data_url(value)
    if data is not None:
        mime, payload = data
        if f"data:{mime};base64,{payload}" != value:
            shape[field] = value  # written back as it came
        return make(
            MediaBlock, {"mime_type": mime, "data": payload, "encoding": "base64"}, **{PART: shape}
        )
    if kind == "input_image":
        return make(
            MediaBlock, {"mime_type": "image/*", "data": value, "encoding": "url"}, **{PART: shape}
        )
    raise FormatError(f"{where} ({kind}) is not given inline")


def _call(item: Mapping[str, Any], kind: str, where: str) -> ToolCallBlock:
    call_id = item.get("call_id")
    if not isinstance(call_id, str) or not call_id:
        raise FormatError(f"{where} ({kind}) has no call_id")
    shape = template(item, kind)
    if kind == "function_call":
        name, raw = item.get("name"), item.get("arguments")
        if not isinstance(name, str) or not isinstance(raw, str):
            raise FormatError(f"{where} (function_call) has no name or no arguments string")
        parameters, extras = _arguments(raw)
        fields = {"id": call_id, "name": name, "parameters": parameters}
        return make(ToolCallBlock, fields, **{ITEM: shape, **extras})
    if kind == "custom_tool_call":
        name, freeform = item.get("name"), item.get(CUSTOM_INPUT)
        if not isinstance(name, str) or not isinstance(freeform, str):
            raise FormatError(f"{where} (custom_tool_call) has no name or no input")
        fields = {"id": call_id, "name": name, "parameters": {CUSTOM_INPUT: freeform}}
        return make(ToolCallBlock, fields, **{ITEM: shape})
    action = item.get("action")
    if not isinstance(action, Mapping):
        raise FormatError(f"{where} (local_shell_call) has no action")
    fields = {"id": call_id, "name": LOCAL_SHELL, "parameters": dict(action)}
    return make(ToolCallBlock, fields, **{ITEM: shape})


def _arguments(raw: str) -> tuple[object, dict[str, Any]]:
    """A call's parameters from its JSON arguments, and the arguments as written when the
    exporter's JSON would not write them so (spacing, key order, escapes)."""
    try:
        parameters = json.loads(raw)
    except ValueError:
        return raw, {ARGUMENTS: raw}
    if arguments_json(parameters) == raw:
        return parameters, {}
    return parameters, {ARGUMENTS: raw}


def arguments_json(parameters: object) -> str:
    """Arguments as the exporter writes them from parameters (compact, as OpenAI does)."""
    return json.dumps(parameters, ensure_ascii=False, separators=(",", ":"))


def lead_key(item: object) -> str | None:
    """Which item of the model's an item is, whatever an edit made of its content: a call by
    its call id, anything else by its kind and id."""
    if not isinstance(item, Mapping):
        return None
    kind = kind_of(item)
    if kind in CALL_KINDS:
        return f"call {item.get('call_id')}"
    return f"{kind} {item.get('id')}"


def _opaque(item: Mapping[str, Any], leads: str | None = None) -> ThinkingBlock:
    """An item that goes back whole: its thought is what a reader may see of it (a
    reasoning item's summary), the item itself is never changed; ``leads``: the item a
    reasoning item led."""
    thought = ""
    summary = item.get("summary")
    if isinstance(summary, list):
        texts = [s.get("text") for s in summary if isinstance(s, Mapping)]
        thought = "\n\n".join(t for t in texts if isinstance(t, str))
    return make(ThinkingBlock, {"thought": thought}, **{ITEM: dict(item), LEADS: leads})


def _output(
    item: Mapping[str, Any], kind: str, names: Mapping[str, str], where: str
) -> ToolResponseBlock:
    key = "id" if kind == "local_shell_call_output" else "call_id"
    call_id = item.get(key)
    if not isinstance(call_id, str) or not call_id:
        raise FormatError(f"{where} ({kind}) has no {key}")
    output = item.get("output")
    if not isinstance(output, (str, list)):
        raise FormatError(f"{where} ({kind}) has an output that is neither text nor a list")
    name = names.get(call_id, LOCAL_SHELL if kind == "local_shell_call_output" else "unknown")
    fields = {"call_id": call_id, "tool_name": name, "result": output}
    return make(ToolResponseBlock, fields, **{ITEM: template(item, kind)})
