"""The Anthropic Messages API (``POST /v1/messages``) at the proxy.

A request's ``messages`` go through the project's importer; what the importer leaves out
(citations, server tools' blocks, a document's title…) would change what the model reads, so a
request that holds any of it is Unsupported and goes upstream as it came (an empty
``citations`` list excepted: it says nothing). ``cache_control`` on
messages is the one thing left out on purpose: the daemon places the message breakpoints.

Rebuilt, the request is the client's body with only ``messages`` replaced: ``system``, ``tools``,
``model`` and every parameter stay as sent, their ``cache_control`` too. The history is
exported entry by entry (so each entry's messages are known); two user or two assistant
messages in a row become one, as Anthropic reads them (a user message of tool results followed
by one of text is the one message the client sent, which the importer split; two left in a row
by pruning are merged the same way); and each entry ``cache.breakpoints`` names gets
``cache_control`` on its last block that may carry one (thinking may not). Anthropic takes at
most four breakpoints in a request: the client's own in ``system`` and ``tools`` are counted
first, and the daemon's latest ones fill what is left.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from ...core.content import IContent, Metadata, TextBlock
from ...core.validity import Turn, anthropic_turn
from ...formats.conversation import Conversation, entry_role, role_metadata
from ...formats.exporters import anthropic as exporter
from ...formats.importers import anthropic_messages as importer
from ...formats.importers.blocks import entry, text_of_parts, user_entries
from . import marks
from .api import Shape, Unsupported, user_line
from .usage import Billed, anthropic_billed

_MESSAGE_KEYS = frozenset({"role", "content"})
EXTRAS_KEY = "messageExtras"
"""``metadata`` key of an entry that carries its message's other keys (Claude Code sends a
system message with ``output_config``): written back on the message as they came."""
_ROLES = ("user", "assistant", "system")
_SOURCE_KEYS = {
    "base64": frozenset({"type", "media_type", "data"}),
    "url": frozenset({"type", "url"}),
}
_BLOCK_KEYS = {
    "text": frozenset({"type", "text", "cache_control"}),
    "image": frozenset({"type", "source", "cache_control"}),
    "document": frozenset({"type", "source", "cache_control"}),
    "tool_use": frozenset({"type", "id", "name", "input", "caller", "cache_control"}),
    "tool_result": frozenset({"type", "tool_use_id", "content", "is_error", "cache_control"}),
    "thinking": frozenset({"type", "thinking", "signature"}),
    "redacted_thinking": frozenset({"type", "data"}),
}
_RESULT_PARTS = frozenset({"text", "image", "document"})
"""Parts of a ``tool_result`` carried (Claude Code's Read answers a PDF with its text and a
document part); counted as media, not as their base64 (``core/tokens.py``)."""
_REFERENCE_KEYS = frozenset({"type", "tool_name"})
"""A ``tool_reference`` part of a ``tool_result`` (Claude Code's ToolSearch answers with one for
each deferred tool it loads): carried as it came, and no rule edits the result that holds it."""
_NO_BREAKPOINT = frozenset({"thinking", "redacted_thinking"})


def kind_name(value: object) -> str:
    """A block type for a log line: a plain identifier as it is, anything else not quoted."""
    if isinstance(value, str) and value.isidentifier() and len(value) <= 40:
        return repr(value)
    return "an unnamed type"


def _check_block(block: object, where: str) -> None:
    if not isinstance(block, Mapping):
        raise Unsupported(f"{where} is not an object")
    kind = block.get("type")
    allowed = _BLOCK_KEYS.get(kind) if isinstance(kind, str) else None
    if allowed is None:
        raise Unsupported(f"{where} has block type {kind_name(kind)}")
    if not allowed.issuperset(block) and not _no_citations(block, allowed):
        raise Unsupported(f"{where} ({kind}) has keys the conversion leaves out")
    if kind in ("image", "document"):
        source = block.get("source")
        stype = source.get("type") if isinstance(source, Mapping) else None
        keys = _SOURCE_KEYS.get(stype) if isinstance(stype, str) else None
        if keys is None or not keys.issuperset(source):  # type: ignore[arg-type]
            raise Unsupported(f"{where} ({kind}) has a source the conversion leaves out")
    elif kind == "tool_use" and not isinstance(block.get("input"), Mapping):
        raise Unsupported(f"{where} (tool_use) has an input that is not an object")
    elif kind == "tool_result":
        content = block.get("content")
        if content is None or isinstance(content, str):
            return
        if not isinstance(content, list):
            raise Unsupported(f"{where} (tool_result) has content of another shape")
        for k, part in enumerate(content):
            if isinstance(part, Mapping) and part.get("type") == "tool_reference":
                if not _REFERENCE_KEYS.issuperset(part) or not isinstance(
                    part.get("tool_name"), str
                ):
                    raise Unsupported(f"{where}.content[{k}] (tool_reference) has another shape")
                continue
            _check_block(part, f"{where}.content[{k}]")
            if part.get("type") not in _RESULT_PARTS:
                raise Unsupported(f"{where}.content[{k}] is not text, media or a tool reference")


def _no_citations(block: Mapping[str, Any], allowed: frozenset[str]) -> bool:
    """A text block whose only other key is an empty ``citations`` (Claude Code writes
    ``"citations": []`` on the text it makes up for an interrupted tool use): the model reads
    the same without it, so it is carried, the key left out. Citations that cite something
    are not: the request goes as it came."""
    return (
        block.get("type") == "text"
        and set(block) - allowed == {"citations"}
        and (block["citations"] is None or block["citations"] == [])
    )


def check_messages(messages: Sequence[Any], start: int = 0, offset: int = 0) -> None:
    """Unsupported unless every message from ``start`` on is one the conversion carries
    whole; ``messages[0]`` is the conversation's message ``offset`` (what a refusal names)."""
    for k in range(start, len(messages)):
        message = messages[k]
        i = offset + k
        if not isinstance(message, Mapping) or message.get("role") not in _ROLES:
            raise Unsupported(f"messages[{i}] is not a user, assistant or system message")
        content = message.get("content")
        if isinstance(content, str):
            continue
        if not isinstance(content, list):
            raise Unsupported(f"messages[{i}].content is neither text nor a list")
        for j, block in enumerate(content):
            _check_block(block, f"messages[{i}].content[{j}]")
            if message["role"] == "system" and block.get("type") != "text":
                raise Unsupported(f"messages[{i}].content[{j}] is not text in a system message")


def from_messages(messages: list[Any]) -> list[IContent]:
    """The importer's reading of each message, and a ``system`` message (which Claude Code
    sends among the others) as a ``human`` entry marked ``metadata.role: system``, the way
    IContent carries a system message in place (the exporter gives it its role back)."""
    names: dict[str, str] = {}
    out: list[IContent] = []
    for message in messages:
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        role = message["role"]
        if role == "assistant":
            made = [entry("ai", importer.assistant_blocks(blocks, names))]
        elif role == "user":
            made = user_entries(*importer.user_blocks(blocks, names))
        else:
            texts = [TextBlock(text=str(b.get("text", ""))) for b in blocks]
            made = [entry("human", texts, role_metadata("system"))]
        extras = {k: v for k, v in message.items() if k not in _MESSAGE_KEYS}
        if extras:
            made[-1] = _with_extras(made[-1], extras)
        out.extend(made)
    return out


def _with_extras(item: IContent, extras: dict[str, Any]) -> IContent:
    meta = item.metadata.model_dump(exclude_unset=True) if item.metadata is not None else {}
    return item.model_copy(
        update={"metadata": Metadata.model_validate({**meta, EXTRAS_KEY: extras})}
    )


class AnthropicApi:
    name = "anthropic"
    upstream = "anthropic"
    key = "messages"
    prompt_roles: frozenset[str] = frozenset()

    def as_sent(self, body: Mapping[str, Any]) -> str | None:
        return None

    def opens(self, element: object, previous: object) -> bool:
        return isinstance(element, Mapping) and element.get("role") == "assistant"

    def refresh_fields(self, conversation: list[dict[str, Any]], line: str) -> dict[str, Any]:
        return {"messages": user_line(self, conversation, line), "max_tokens": 1}

    def messages(self, body: Mapping[str, Any]) -> list[Any]:
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            raise Unsupported("no 'messages' list")
        return messages

    def head(self, messages: Sequence[Any]) -> int:
        return 0

    def check(self, messages: Sequence[Any], offset: int) -> None:
        check_messages(messages, 0, offset)

    def import_messages(self, messages: list[Any], offset: int = 0) -> list[IContent]:
        return from_messages(messages)

    def start(self, body: Mapping[str, Any], head: Sequence[Any]) -> object:
        """What names the conversation besides its first message: the system text and the
        tools' names, less the deferred ones (``defer_loading``): Claude Code adds those to
        ``tools`` as the model loads them (ToolSearch), and the conversation goes on."""
        system = body.get("system")
        tools = body.get("tools")
        names = (
            [
                t.get("name")
                for t in tools
                if isinstance(t, Mapping) and t.get("defer_loading") is not True
            ]
            if isinstance(tools, list)
            else []
        )
        return {"system": text_of_parts(system) if system is not None else None, "tools": names}

    def export_mode(self, body: Mapping[str, Any], messages: Sequence[Any], before: str) -> str:
        return ""

    def export_entry(self, item: IContent, mode: str) -> list[dict[str, Any]]:
        return _export(item)

    def shape(self, message: Mapping[str, Any]) -> Shape:
        role = message["role"]
        kinds = [b.get("type") for b in _blocks(message)]
        results = sum(1 for k in kinds if k == "tool_result")
        return Shape(
            role=role,
            merges=role in ("user", "assistant") and _MESSAGE_KEYS.issuperset(message),
            results=results > 0,
            only_results=0 < results == len(kinds),
            thinking=any(k in _NO_BREAKPOINT for k in kinds),
            markable=any(k not in _NO_BREAKPOINT for k in kinds),
        )

    def turn(self, message: Mapping[str, Any]) -> Turn | None:
        return anthropic_turn(message)

    def merge(self, first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
        """Anthropic reads two messages of one role in a row as one: their blocks in order."""
        return {**first, **second, "content": [*_blocks(first), *_blocks(second)]}

    def assemble(
        self,
        body: Mapping[str, Any],
        shapes: Sequence[Shape],
        last_of: Sequence[int],
        breakpoints: Sequence[int],
        ttls: Sequence[str],
    ) -> list[tuple[int, str]]:
        at: list[int] = []
        lifetimes: list[str] = []
        for k, index in enumerate(breakpoints):
            if 0 <= index < len(last_of) and last_of[index] >= 0:
                at.append(last_of[index])
                lifetimes.append(ttls[k] if k < len(ttls) else marks.FIVE_MINUTES)
        placed = marks.place(
            marks.read_marks(body),
            at,
            lifetimes,
            len(shapes) - 1,
            [shape.markable for shape in shapes],
        )
        return [(index, ttl) for index, ttl in placed.marks]

    def mark(self, message: Mapping[str, Any], ttl: str) -> dict[str, Any]:
        messages = [dict(message)]
        _mark(messages, 0, marks.ONE_HOUR if ttl == marks.ONE_HOUR else marks.FIVE_MINUTES)
        return messages[0]

    def body_edits(self, body: Mapping[str, Any], marked: Sequence[str]) -> dict[str, Any]:
        agent = marks.read_marks(body)
        long = marks.ONE_HOUR in marked or agent.automatic == marks.ONE_HOUR
        if long and marks.FIVE_MINUTES in agent.head:
            return marks.lift_head(body)
        return {}

    def billed(self, usage: object) -> Billed | None:
        return anthropic_billed(usage)


def _export(item: IContent) -> list[dict[str, Any]]:
    """One entry's messages (a system message in place keeps its role)."""
    exported = exporter.export(Conversation((item,))).payload
    assert isinstance(exported, dict)
    messages: list[dict[str, Any]] = exported["messages"]
    if entry_role(item.metadata) == "system":
        messages = [{**m, "role": "system"} for m in messages]
    extras = (item.metadata.model_extra or {}).get(EXTRAS_KEY) if item.metadata else None
    if messages and isinstance(extras, dict):
        messages[-1] = {**messages[-1], **extras, "role": messages[-1]["role"]}
    return messages


def _blocks(message: Mapping[str, Any]) -> list[Any]:
    content = message["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _mark(messages: list[dict[str, Any]], at: int, ttl: marks.Ttl) -> bool:
    """Put a breakpoint on the last block of ``messages[at]`` that may carry one."""
    blocks = _blocks(messages[at])
    for k in range(len(blocks) - 1, -1, -1):
        if blocks[k].get("type") not in _NO_BREAKPOINT:
            blocks[k] = {**copy.copy(blocks[k]), "cache_control": marks.control(ttl)}
            messages[at] = {**messages[at], "content": blocks}
            return True
    return False
