"""OpenAI's Responses API (``POST /v1/responses``) at the proxy: Codex CLI, opencode's
``openai`` provider, the ``openai`` SDKs' ``responses.create``.

The conversation is the body's ``input`` items (``formats/importers/openai_responses.py``
reads them, ``exporters/openai_responses.py`` writes them back). What leads it stays as sent,
never read into the session: the developer and system messages (and ``additional_tools`` items,
Codex's code mode's tool declarations) before the first other item, and everything up to the latest
``compaction`` item (Codex's remote compaction: its encrypted summary stands for all that came
before it, so nothing before it may change). So does everything else of the body: ``instructions``,
``tools``, ``reasoning``, ``include``, ``store``, ``prompt_cache_key``, ``text``, keys hdcontext
does not know.

A request is carried only when its items come back from IContent exactly as they came (the
check imports the new items and exports them again): an item kind hdcontext does not know, an
image given by file id, a key that would not survive, and the request goes as it came, the
reason naming the item's index and kind. So does one that asks the provider for something
the conversation alone does not say: a ``compaction_trigger`` (the provider compacts what it
is sent, and one ``compaction`` item must come back for exactly that), a
``previous_response_id`` or a server-stored ``conversation`` (the provider holds the history:
there is nothing here to prune).

Items of one turn of the model (reasoning, message, calls) are one ``ai`` entry; each item is
sent as its own element, never merged with another (the API takes any run of items). A
``reasoning`` item keeps its ``encrypted_content`` byte for byte and its place before the item
it led; one whose call pruning took goes with it.

Breakpoints, as on chat completions: OpenAI caches at explicit breakpoints from GPT-5.6 on
(``prompt_cache_breakpoint: {"mode": "explicit"}`` on a content part of a user, system or
developer message, or of a tool's output; the model's own items cannot carry one); older
models match any shared prefix and get none. Three a request besides OpenAI's own implicit
one, four when the agent turned that off (``prompt_cache_options.mode: explicit``), the
agent's own marks counted first and kept. The agent's ``prompt_cache_key``,
``prompt_cache_options`` and ``prompt_cache_retention`` go as sent; where the agent chose no
lifetime and the model offers a day at no charge, the proxy asks it, as on chat completions
(``openai_cache.py``), never beside ``prompt_cache_options``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...core.cache.pricing import caches_at_breakpoints
from ...core.content import IContent
from ...core.validity import OPENAI_PROMPT_ROLES, Turn, responses_turn
from ...formats.conversation import FormatError
from ...formats.exporters import openai_responses as exporter
from ...formats.importers import openai_responses as importer
from .api import Shape, Unsupported
from .openai import BREAKPOINT, BREAKPOINT_KEY
from .openai_cache import OPTIONS_KEY, RETENTION_KEY, retention_to_ask
from .usage import Billed, responses_billed

WRITES: Final = 4
"""Breakpoints a request may write, OpenAI's implicit one among them unless turned off."""
COMPACTION: Final = "compaction"
ADDITIONAL_TOOLS: Final = "additional_tools"
_WITHOUT_HISTORY: Final = ("previous_response_id", "conversation")
"""Body keys by which the provider holds the history itself."""
_MARKABLE_OUTPUTS: Final = frozenset({"function_call_output", "custom_tool_call_output"})


def head_length(items: Sequence[Any]) -> int:
    """How many leading items stay as sent: the developer and system messages and the
    ``additional_tools`` items before any other (Codex's code mode declares its tools so, a
    developer's item of its own), and everything up to the latest ``compaction`` item."""
    head = 0
    while head < len(items) and _prompt(items[head]):
        head += 1
    for index in range(len(items) - 1, head - 1, -1):
        item = items[index]
        if isinstance(item, Mapping) and item.get("type") == COMPACTION:
            return index + 1
    return head


def _prompt(item: object) -> bool:
    """An item of the agent's prompt, when it leads the items."""
    if not isinstance(item, Mapping) or item.get("role") not in OPENAI_PROMPT_ROLES:
        return False
    return importer.kind_of(item) in ("message", ADDITIONAL_TOOLS)


def asks_the_provider(body: Mapping[str, Any]) -> str | None:
    """Why a request must go as it came although its items could be carried, or ``None``."""
    for key in _WITHOUT_HISTORY:
        if body.get(key) is not None:
            return f"the provider holds the conversation ({key})"
    items = body.get("input")
    if isinstance(items, list):
        for index, item in enumerate(items):
            if isinstance(item, Mapping) and item.get("type") == "compaction_trigger":
                return f"input[{index}] asks the provider to compact (compaction_trigger)"
    return None


class ResponsesApi:
    name = "responses"
    upstream = "openai"
    key = "input"
    prompt_roles = OPENAI_PROMPT_ROLES

    def head(self, messages: Sequence[Any]) -> int:
        return head_length(messages)

    def opens(self, element: object, previous: object) -> bool:
        return importer.model_side(element) and not importer.model_side(previous)

    def check(self, messages: Sequence[Any], offset: int) -> None:
        """Unsupported unless the items come back exactly as they came."""
        items = list(messages)
        try:
            entries = importer.from_items(items, offset)
        except FormatError as exc:
            raise Unsupported(str(exc)) from None
        again = [item for entry in entries for item in exporter.export_entry(entry)]
        if again == items:
            return
        for k, (came, written) in enumerate(zip(items, again, strict=False)):
            if came != written:
                kind = importer.shown(came.get("type") if isinstance(came, Mapping) else None)
                keys = sorted(set(came) ^ set(written)) if isinstance(came, Mapping) else []
                which = f": keys {', '.join(map(repr, keys))}" if keys else ""
                raise Unsupported(
                    f"input[{offset + k}] (item {kind}) would not be sent as it came{which}"
                )
        raise Unsupported(f"input[{offset + min(len(items), len(again))}] would not be sent")

    def import_messages(self, messages: list[Any], offset: int = 0) -> list[IContent]:
        try:
            return importer.from_items(messages)
        except FormatError as exc:
            raise Unsupported(str(exc)) from None

    def as_sent(self, body: Mapping[str, Any]) -> str | None:
        return asks_the_provider(body)

    def start(self, body: Mapping[str, Any], head: Sequence[Any]) -> object:
        """The instructions, what leads the items, the tools' names and the agent's own
        ``prompt_cache_key`` (Codex's names its conversation: two conversations in one
        repository start alike, with the same instructions and AGENTS.md)."""
        tools = body.get("tools")
        names = (
            [t.get("name") or t.get("type") for t in tools if isinstance(t, Mapping)]
            if isinstance(tools, list)
            else []
        )
        return {
            "instructions": body.get("instructions"),
            "head": list(head),
            "tools": names,
            "key": body.get("prompt_cache_key"),
        }

    def export_mode(self, body: Mapping[str, Any], messages: Sequence[Any], before: str) -> str:
        return ""

    def export_entry(self, item: IContent, mode: str) -> list[dict[str, Any]]:
        return exporter.export_entry(item)

    def shape(self, message: Mapping[str, Any]) -> Shape:
        kind = importer.kind_of(message)
        if importer.model_side(message):
            role = "assistant"
        elif kind in importer.OUTPUT_KINDS:
            role = "tool"
        else:
            role = str(message.get("role"))
        return Shape(
            role=role,
            merges=False,
            results=kind in importer.OUTPUT_KINDS,
            only_results=kind in importer.OUTPUT_KINDS,
            thinking=kind == "reasoning",
            markable=_markable(message),
        )

    def turn(self, message: Mapping[str, Any]) -> Turn | None:
        return responses_turn(message)

    def merge(self, first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
        """Never asked (no item merges): the first, as it is."""
        return dict(first)

    def refresh_fields(self, conversation: list[dict[str, Any]], line: str) -> dict[str, Any]:
        said = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": line}],
        }
        # The API's least output: 16 tokens.
        return {"input": [*conversation, said], "max_output_tokens": 16}

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
        options = body.get(OPTIONS_KEY)
        explicit = isinstance(options, Mapping) and options.get("mode") == "explicit"
        items = body.get("input")
        own = _own_breakpoints(items) if isinstance(items, list) else 0
        room = WRITES - (0 if explicit else 1) - own
        return [(at, "5m") for at in _place(shapes, last_of, breakpoints, room)]

    def mark(self, message: Mapping[str, Any], ttl: str) -> dict[str, Any]:
        return _marked(message)

    def body_edits(self, body: Mapping[str, Any], marked: Sequence[str]) -> dict[str, Any]:
        retention = retention_to_ask(body)
        return {} if retention is None else {RETENTION_KEY: retention}

    def billed(self, usage: object) -> Billed | None:
        return responses_billed(usage)


def _parts_of(message: Mapping[str, Any]) -> object:
    kind = importer.kind_of(message)
    if kind == "message":
        return message.get("content")
    if kind in _MARKABLE_OUTPUTS:
        return message.get("output")
    return None


def _markable(message: Mapping[str, Any]) -> bool:
    kind = importer.kind_of(message)
    if kind == "message" and message.get("role") == "assistant":
        return False
    parts = _parts_of(message)
    return (isinstance(parts, str) and bool(parts)) or (isinstance(parts, list) and bool(parts))


def _own_breakpoints(items: Sequence[Any]) -> int:
    """The marks the agent placed itself, anywhere in its items (kept where they are)."""
    n = 0
    for item in items:
        parts = _parts_of(item) if isinstance(item, Mapping) else None
        if isinstance(parts, list):
            n += sum(1 for p in parts if isinstance(p, Mapping) and p.get(BREAKPOINT_KEY))
    return n


def _place(
    shapes: Sequence[Shape], last_of: Sequence[int], breakpoints: Sequence[int], room: int
) -> list[int]:
    """The daemon's breakpoints, latest first, each on the nearest item at or before its
    entry's last one that can carry one (one that falls on or after a later mark is
    dropped)."""
    marked: list[int] = []
    for index in sorted(set(breakpoints))[::-1]:
        if len(marked) >= room or not 0 <= index < len(last_of):
            continue
        at = last_of[index]
        while at >= 0 and not shapes[at].markable:
            at -= 1
        if at < 0 or (marked and at >= marked[-1]):
            continue
        marked.append(at)
    return marked


def _marked(message: Mapping[str, Any]) -> dict[str, Any]:
    """The item with a breakpoint on its last part (a text given as a string becomes the one
    ``input_text`` part the API reads it as)."""
    key = "content" if importer.kind_of(message) == "message" else "output"
    value = message.get(key)
    parts = [{"type": "input_text", "text": value}] if isinstance(value, str) else list(value or [])
    if not parts or not isinstance(parts[-1], Mapping):
        return dict(message)
    parts[-1] = {**parts[-1], BREAKPOINT_KEY: dict(BREAKPOINT)}
    return {**message, key: parts}
