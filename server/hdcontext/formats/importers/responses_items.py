"""OpenAI Responses API items to IContent entries: what a Codex rollout's ``response_item``
records hold, and what any agent on the Responses API sends as ``input``.

Items come one at a time and are grouped by who wrote them: the model's items that follow one
another (``reasoning``, an ``assistant`` message, ``function_call``, ``custom_tool_call``,
``local_shell_call``, ``web_search_call``, ``compaction``) make one ``ai`` entry, the outputs
that follow one another one ``tool`` entry, and each ``user`` or ``developer`` message a
``human`` entry of its own (a developer message marked ``metadata.role``, as the OpenAI chat
importer marks one in place).

What IContent has no block for rides along as extras, so that an exporter to the Responses API
could give it back:

* ``reasoning`` is a thinking block: its summaries' text is the thought, and the item's
  ``summary`` list and opaque ``encrypted_content`` are kept as they came (``summary``,
  ``encryptedContent``), with ``openaiType: "reasoning"``. The provider wants the encrypted
  content back byte for byte; no other provider can read it.
* ``compaction`` (what the provider's compaction returns in place of everything before it) and
  ``web_search_call`` (a search the provider ran itself; no output item answers it) are
  thinking blocks with no thought: opaque to every other format, like redacted thinking.
* ``function_call`` is a tool call with its JSON ``arguments`` string parsed; the string is
  kept (``arguments``) only when it is not the compact form of what it parses to, which it
  almost always is. ``custom_tool_call`` (a freeform tool such as ``apply_patch``) is a call
  whose parameters are ``{"input": …}``, the shape of the same tool offered as a function;
  ``local_shell_call`` a call named ``local_shell`` whose parameters are its ``action``.
* an assistant message's ``phase`` (``commentary``, ``final_answer``) is kept on its texts.

An output whose call is not before it answers nothing the history holds (Codex drops such
outputs too): it is left out and counted, as is a second output for the same call.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core.content import (
    Block,
    IContent,
    MediaBlock,
    Metadata,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from ..conversation import SYSTEM_ROLE_KEY
from .blocks import json_arguments, make, parse_data_url

LOCAL_SHELL = "local_shell"
"""The name a ``local_shell_call`` goes by as a tool call (the Responses API's tool type)."""
PATCH_INPUT_KEY = "input"
"""The parameter a freeform tool's text goes in (``apply_patch``'s, as a function tool)."""

MODEL_ITEMS = frozenset(
    {
        "reasoning",
        "function_call",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "compaction",
    }
)
OUTPUT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})

_MAPPED = frozenset({"type", "id", "encrypted_content", "thought"})
"""Keys of an opaque item that are not kept under their own name (the rest are)."""

Failed = Callable[[str, str], bool]
"""``failed(tool name, output text)``: whether the output says the call did not run."""


class Malformed(ValueError):
    """An item of a known type without what it needs (a call without its id…); the message
    names what was missing, never content."""


@dataclass
class ItemBuilder:
    """Entries built from items given in order (``add``); ``reset`` starts over, as a
    compaction's replacement history does."""

    failed: Failed = lambda _name, _output: False
    entries: list[IContent] = field(default_factory=list)
    names: dict[str, str] = field(default_factory=dict)
    """call id -> tool name, of the calls made so far."""
    answered: set[str] = field(default_factory=set)
    orphans: int = 0
    """Outputs left out: no call before them, or a second one for the same call."""
    _open_ai: bool = False

    def reset(self) -> None:
        self.entries = []
        self.names = {}
        self.answered = set()
        self._open_ai = False

    def add(self, item: Mapping[str, Any], ai_meta: Metadata, meta: Metadata) -> bool:
        """Add one item: ``ai_meta`` for the entry a model item opens, ``meta`` for any other.
        False when the item is not conversation (``ghost_snapshot``, an unknown type).
        Raises Malformed."""
        kind = item.get("type")
        if kind == "message":
            self._message(item, ai_meta, meta)
        elif kind in MODEL_ITEMS:
            self._model(_model_block(item, self.names), ai_meta)
        elif kind in OUTPUT_ITEMS:
            self._output(item, meta)
        else:
            return False
        return True

    # -- by who wrote them ----------------------------------------------------------------

    def _message(self, item: Mapping[str, Any], ai_meta: Metadata, meta: Metadata) -> None:
        role = item.get("role")
        content = item.get("content")
        if not isinstance(content, list):
            content = [{"type": "input_text", "text": content}] if isinstance(content, str) else []
        if role == "assistant":
            phase = item.get("phase")
            for part in content:
                text = _part_text(part)
                if text is not None:
                    self._model(make(TextBlock, {"text": text}, phase=phase), ai_meta)
            return
        if role not in ("user", "developer", "system"):
            raise Malformed(f"a message of role {role!r}")
        blocks = [b for b in map(_input_part, content) if b is not None]
        if role != "user":
            fields = {**meta.model_dump(exclude_unset=True), SYSTEM_ROLE_KEY: role}
            meta = Metadata.model_validate(fields)
        self.entries.append(IContent(speaker="human", blocks=tuple(blocks), metadata=meta))
        self._open_ai = False

    def _model(self, block: Block, ai_meta: Metadata) -> None:
        if isinstance(block, ToolCallBlock):
            self.names[block.id] = block.name
        if self._open_ai:
            last = self.entries[-1]
            self.entries[-1] = last.with_blocks((*last.blocks, block))
        else:
            self.entries.append(IContent(speaker="ai", blocks=(block,), metadata=ai_meta))
            self._open_ai = True

    def _output(self, item: Mapping[str, Any], meta: Metadata) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or not call_id:
            raise Malformed("an output without a call_id")
        name = self.names.get(call_id)
        if name is None or call_id in self.answered:
            self.orphans += 1
            return
        self.answered.add(call_id)
        output = _output_text(item.get("output"))
        if self.failed(name, output):
            response = ToolResponseBlock(
                call_id=call_id, tool_name=name, result=None, error=output or "failed"
            )
        else:
            response = ToolResponseBlock(call_id=call_id, tool_name=name, result=output)
        last = self.entries[-1] if self.entries else None
        if last is not None and last.speaker == "tool":
            self.entries[-1] = last.with_blocks((*last.blocks, response))
        else:
            self.entries.append(IContent(speaker="tool", blocks=(response,), metadata=meta))
        self._open_ai = False


# -- one item ---------------------------------------------------------------------------


def _model_block(item: Mapping[str, Any], names: Mapping[str, str]) -> Block:
    kind = item["type"]
    if kind == "reasoning":
        return _reasoning(item)
    if kind in ("compaction", "web_search_call"):
        rest = {k: v for k, v in item.items() if k not in _MAPPED}
        return make(
            ThinkingBlock,
            {"thought": ""},
            openaiType=kind,
            itemId=item.get("id"),
            encryptedContent=item.get("encrypted_content"),
            **rest,
        )
    call_id = item.get("call_id", item.get("id") if kind == "local_shell_call" else None)
    if not isinstance(call_id, str) or not call_id:
        raise Malformed(f"a {kind} without a call_id")
    if call_id in names:
        raise Malformed(f"a second {kind} with the same call_id")
    if kind == "local_shell_call":
        action = item.get("action")
        return make(
            ToolCallBlock,
            {"id": call_id, "name": LOCAL_SHELL, "parameters": action},
            openaiType=kind,
            status=item.get("status"),
        )
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise Malformed(f"a {kind} without a name")
    if kind == "custom_tool_call":
        raw_input = item.get("input")
        freeform = {PATCH_INPUT_KEY: raw_input if isinstance(raw_input, str) else ""}
        custom: dict[str, object] = {"id": call_id, "name": name, "parameters": freeform}
        return make(ToolCallBlock, custom, openaiType=kind, status=item.get("status"))
    raw = item.get("arguments")
    parameters = json_arguments(raw)
    kept = raw if isinstance(raw, str) and raw != _compact(parameters) else None
    fields = {"id": call_id, "name": name, "parameters": parameters}
    return make(ToolCallBlock, fields, arguments=kept, itemId=item.get("id"))


def _reasoning(item: Mapping[str, Any]) -> ThinkingBlock:
    summary = item.get("summary")
    texts = [
        part["text"]
        for part in (summary if isinstance(summary, list) else [])
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    ]
    return make(
        ThinkingBlock,
        {"thought": "\n\n".join(texts)},
        openaiType="reasoning",
        itemId=item.get("id"),
        summary=summary,
        encryptedContent=item.get("encrypted_content"),
        reasoningContent=item.get("content"),
    )


def _compact(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _part_text(part: object) -> str | None:
    if not isinstance(part, Mapping):
        return None
    kind = part.get("type")
    if kind in ("input_text", "output_text", "text"):
        text = part.get("text")
    elif kind == "refusal":
        text = part.get("refusal")
    else:
        return None
    return text if isinstance(text, str) else None


def _input_part(part: object) -> Block | None:
    text = _part_text(part)
    if text is not None:
        return TextBlock(text=text)
    if not isinstance(part, Mapping):
        return None
    if part.get("type") == "input_image":
        url = part.get("image_url")
        if not isinstance(url, str) or not url:
            return None
        inline = parse_data_url(url)
        if inline is None:
            fields = {"mime_type": "image/*", "data": url, "encoding": "url"}
        else:
            fields = {"mime_type": inline[0], "data": inline[1], "encoding": "base64"}
        return make(MediaBlock, fields, detail=part.get("detail"))
    if part.get("type") == "input_file" and isinstance(part.get("file_data"), str):
        inline = parse_data_url(part["file_data"])
        if inline is None:
            return None
        fields = {"mime_type": inline[0], "data": inline[1], "encoding": "base64"}
        return make(MediaBlock, fields, filename=part.get("filename"))
    return None


def _output_text(output: object) -> str:
    """An output as the model read it: a string as it is; a list of content parts (newer
    Responses outputs) as their texts."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return "\n".join(t for t in map(_part_text, output) if t is not None)
    if isinstance(output, Mapping) and isinstance(output.get("content"), str):
        return str(output["content"])
    return "" if output is None else _compact(output)
