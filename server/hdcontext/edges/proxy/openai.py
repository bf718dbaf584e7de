"""OpenAI chat completions (``POST /v1/chat/completions``) at the proxy.

The leading ``system``/``developer`` messages are the client's prompt: they stay as sent, like
Anthropic's ``system``, and only the messages after them go through the importer. What the
importer would leave out or rewrite (a message's ``name``, the legacy ``function_call``, a
``file`` given by id, refusals) makes the request Unsupported: it goes upstream as it came. An
assistant message the client sends back as the API answered it (``annotations: []``,
``audio: null``, ``function_call: null``: the ``openai`` client writes them) is carried.
``reasoning_content`` (DeepSeek, vLLM) is carried when the client sends it.

Breakpoints: OpenAI caches at explicit breakpoints from GPT-5.6 on (``prompt_cache_breakpoint:
{"mode": "explicit"}`` on a content part of a system, user or tool message; assistant output
cannot carry one); older models match any shared prefix, and a field they do not know could
be refused, so for them none is placed. A breakpoint named on an assistant entry goes to the
nearest message before it that can carry one. At most three go into a request (four cache
writes, one of them OpenAI's own at the end), the client's in its system messages counted.

Two user or two assistant messages left in a row (pruning took what stood between them) are
merged into one: their content parts in order, an assistant's tool calls and reasoning after
the first one's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...core.cache.pricing import caches_at_breakpoints
from ...core.content import IContent
from ...core.validity import OPENAI_PROMPT_ROLES, Turn, openai_turn
from ...formats.conversation import Conversation, FormatError
from ...formats.exporters import openai as exporter
from ...formats.importers import openai_chat as importer
from .anthropic import kind_name
from .api import Shape, Unsupported, user_line
from .openai_cache import RETENTION_KEY, retention_to_ask
from .usage import Billed, openai_billed

BREAKPOINT_KEY = "prompt_cache_breakpoint"
BREAKPOINT = {"mode": "explicit"}
MAX_BREAKPOINTS = 3

_SYSTEM_ROLES = ("system", "developer")
_MESSAGE_KEYS = {
    "user": frozenset({"role", "content"}),
    "assistant": frozenset({"role", "content", "tool_calls", "reasoning_content", "refusal"}),
    "tool": frozenset({"role", "content", "tool_call_id"}),
    "system": frozenset({"role", "content"}),
    "developer": frozenset({"role", "content"}),
}
_MARKS = frozenset({"cache_control", BREAKPOINT_KEY})
_PART_KEYS = {
    "text": frozenset({"type", "text"}) | _MARKS,
    "image_url": frozenset({"type", "image_url"}) | _MARKS,
    "input_audio": frozenset({"type", "input_audio"}) | _MARKS,
    "file": frozenset({"type", "file"}) | _MARKS,
}
_CALL_KEYS = frozenset({"id", "type", "function"})


def split(body: Mapping[str, Any]) -> tuple[list[Any], list[Any]]:
    """(the leading system messages, the conversation after them)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise Unsupported("no 'messages' list")
    head = prompt_length(messages)
    return messages[:head], messages[head:]


def prompt_length(messages: Sequence[Any]) -> int:
    """How many leading messages are system or developer messages (the client's prompt)."""
    head = 0
    while (
        head < len(messages)
        and isinstance(messages[head], Mapping)
        and messages[head].get("role") in _SYSTEM_ROLES
    ):
        head += 1
    return head


def _check_parts(content: object, role: str, where: str) -> None:
    if content is None and role == "assistant":
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise Unsupported(f"{where}.content is neither text nor a list")
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        allowed = _PART_KEYS.get(kind) if isinstance(kind, str) else None
        if allowed is None or (role != "user" and kind != "text"):
            raise Unsupported(f"{where}.content[{k}] has part type {kind_name(kind)}")
        if not allowed.issuperset(part):
            raise Unsupported(f"{where}.content[{k}] ({kind}) has keys the conversion leaves out")
        if kind == "file":
            file = part.get("file")
            if not isinstance(file, Mapping) or not isinstance(file.get("file_data"), str):
                raise Unsupported(f"{where}.content[{k}] is a file given by id")


_EMPTY_ANSWER_KEYS = frozenset({"annotations", "audio", "function_call"})
"""Keys of an assistant message as the API answers it and the ``openai`` client sends it back
when an agent appends the message it got (``annotations: []``, and from ``model_dump()``
``audio: null``, ``function_call: null``)."""


def _says_nothing_more(message: Mapping[str, Any], keys: frozenset[str], role: str) -> bool:
    """An assistant message whose only other keys are answer keys left empty (no citation,
    no audio, no legacy call): the model reads the same without them, so it is carried and
    they are left out. Filled, they make the request go as it came."""
    extra = set(message) - keys
    return role == "assistant" and all(
        k in _EMPTY_ANSWER_KEYS and message[k] in (None, []) for k in extra
    )


def check(messages: Sequence[Any], offset: int = 0) -> None:
    for i, message in enumerate(messages, offset):
        where = f"messages[{i}]"
        role = message.get("role") if isinstance(message, Mapping) else None
        keys = _MESSAGE_KEYS.get(role) if isinstance(role, str) else None
        if keys is None or not isinstance(role, str):
            raise Unsupported(f"{where} has role {kind_name(role)}")
        if not keys.issuperset(message) and not _says_nothing_more(message, keys, role):
            raise Unsupported(f"{where} ({role}) has keys the conversion leaves out")
        if message.get("refusal") is not None:
            raise Unsupported(f"{where} is a refusal")
        _check_parts(message.get("content"), role, where)
        calls = message.get("tool_calls")
        if calls is None:
            continue
        if not isinstance(calls, list):
            raise Unsupported(f"{where}.tool_calls is not a list")
        for call in calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if (
                not isinstance(function, Mapping)
                or not _CALL_KEYS.issuperset(call)
                or not {"name", "arguments"}.issuperset(function)
                or not isinstance(function.get("arguments"), str)
            ):
                raise Unsupported(f"{where}.tool_calls has a call the conversion rewrites")


class OpenAiApi:
    name = "openai"
    upstream = "openai"
    key = "messages"
    prompt_roles = OPENAI_PROMPT_ROLES

    def as_sent(self, body: Mapping[str, Any]) -> str | None:
        return None

    def opens(self, element: object, previous: object) -> bool:
        return isinstance(element, Mapping) and element.get("role") == "assistant"

    def refresh_fields(self, conversation: list[dict[str, Any]], line: str) -> dict[str, Any]:
        return {"messages": user_line(self, conversation, line), "max_tokens": 1}

    def messages(self, body: Mapping[str, Any]) -> list[Any]:
        _, rest = split(body)
        return rest

    def head(self, messages: Sequence[Any]) -> int:
        return prompt_length(messages)

    def check(self, messages: Sequence[Any], offset: int) -> None:
        check(messages, offset)

    def import_messages(self, messages: list[Any], offset: int = 0) -> list[IContent]:
        try:
            return list(importer.from_messages(messages).entries)
        except FormatError as exc:
            raise Unsupported("not an OpenAI conversation") from exc

    def start(self, body: Mapping[str, Any], head: Sequence[Any]) -> object:
        tools = body.get("tools")
        names = (
            [t.get("function", {}).get("name") for t in tools if isinstance(t, Mapping)]
            if isinstance(tools, list)
            else []
        )
        return {"system": list(head), "tools": names}

    def export_mode(self, body: Mapping[str, Any], messages: Sequence[Any], before: str) -> str:
        """Thinking goes back as ``reasoning_content`` when the client sends that field (in
        any message: ``before`` says whether the earlier ones did)."""
        if before == REASONING:
            return REASONING
        sends = any(isinstance(m, Mapping) and m.get(REASONING) for m in messages)
        return REASONING if sends else "drop"

    def export_entry(self, item: IContent, mode: str) -> list[dict[str, Any]]:
        thinking: exporter.ThinkingMode = "reasoning_content" if mode == REASONING else "drop"
        exported = exporter.export(Conversation((item,)), thinking=thinking).payload
        assert isinstance(exported, list)
        return exported

    def shape(self, message: Mapping[str, Any]) -> Shape:
        role = message["role"]
        content = message.get("content")
        parts = content if isinstance(content, list) else [content] if content else []
        return Shape(
            role=role,
            merges=role in ("user", "assistant") and _MERGED_KEYS.issuperset(message),
            thinking=bool(message.get(REASONING)),
            markable=role != "assistant" and bool(parts),
        )

    def turn(self, message: Mapping[str, Any]) -> Turn | None:
        return openai_turn(message)

    def merge(self, first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
        """Two messages of one role as one: content parts in order (a text alone stays a
        string), then the tool calls and the reasoning of both, in order."""
        merged: dict[str, Any] = {"role": first["role"]}
        parts = [*_parts(first.get("content")), *_parts(second.get("content"))]
        if parts:
            texts = all(set(p) == {"type", "text"} and p["type"] == "text" for p in parts)
            merged["content"] = parts[0]["text"] if texts and len(parts) == 1 else parts
        else:
            merged["content"] = None
        reasoning = [r for r in (first.get(REASONING), second.get(REASONING)) if r]
        if reasoning:
            merged[REASONING] = "\n".join(reasoning)
        calls = [*(first.get("tool_calls") or []), *(second.get("tool_calls") or [])]
        if calls:
            merged["tool_calls"] = calls
        return merged

    def assemble(
        self,
        body: Mapping[str, Any],
        shapes: Sequence[Shape],
        last_of: Sequence[int],
        breakpoints: Sequence[int],
        ttls: Sequence[str],
    ) -> list[tuple[int, str]]:
        model = body.get("model")
        if not caches_at_breakpoints(model if isinstance(model, str) else None):
            return []
        messages = body.get("messages")
        head = messages[: prompt_length(messages)] if isinstance(messages, list) else []
        room = MAX_BREAKPOINTS - _own_breakpoints(head)
        # OpenAI's entries all live as long: a breakpoint asks no lifetime.
        return [(at, "5m") for at in _place(shapes, last_of, breakpoints, room)]

    def mark(self, message: Mapping[str, Any], ttl: str) -> dict[str, Any]:
        return _marked(dict(message))

    def body_edits(self, body: Mapping[str, Any], marked: Sequence[str]) -> dict[str, Any]:
        retention = retention_to_ask(body)
        return {} if retention is None else {RETENTION_KEY: retention}

    def billed(self, usage: object) -> Billed | None:
        return openai_billed(usage)


REASONING: Final = "reasoning_content"
_MERGED_KEYS = frozenset({"role", "content", "tool_calls", REASONING})


def _parts(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return list(content) if isinstance(content, list) else []


def _own_breakpoints(head: Sequence[Any]) -> int:
    n = 0
    for message in head:
        content = message.get("content") if isinstance(message, Mapping) else None
        if isinstance(content, list):
            n += sum(1 for p in content if isinstance(p, Mapping) and p.get(BREAKPOINT_KEY))
    return n


def _place(
    shapes: Sequence[Shape], last_of: Sequence[int], breakpoints: Sequence[int], room: int
) -> list[int]:
    """The daemon's breakpoints, latest first, each on the nearest message at or before its
    entry's last one that can carry it (one that falls on or after a later mark is dropped)."""
    marked: list[int] = []
    for index in sorted(set(breakpoints))[::-1]:
        if len(marked) >= room or not 0 <= index < len(last_of):
            continue
        at = last_of[index]
        while at >= 0 and shapes[at].role == "assistant":
            at -= 1
        if at < 0 or (marked and at >= marked[-1]):
            continue
        marked.append(at)
    return marked


def _marked(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    parts = [{"type": "text", "text": content}] if isinstance(content, str) else list(content or [])
    if not parts:
        return message
    parts[-1] = {**parts[-1], BREAKPOINT_KEY: dict(BREAKPOINT)}
    return {**message, "content": parts}
