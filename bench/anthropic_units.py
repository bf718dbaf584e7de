"""An Anthropic Messages request as ``billing.py`` bills one: its units, their tokens and content
blocks, its breakpoints and their lifetimes.

The units are the prompt (the tools, then the system prompt: what Anthropic's cache reads first,
one unit, the model's name in it since a cache is the model's own) and then each message as the
model reads it: its JSON with the keys sorted, less any ``cache_control`` (a breakpoint says
where to cache, it is not part of what is cached), a text given as a string written as the one
text block it reads as. So a message hdcontext sends as the agent did is the same unit in every
bill, wherever the marks went.

A breakpoint is a unit whose last mark is on it (the prompt's marks, on the system prompt or the
tools, end the prompt unit), ``"ttl": "1h"`` asking the longer lifetime. Content blocks count for
the cache's lookback (20 blocks): a message's blocks, and the prompt's tools and system blocks.

A message's tokens are what the model reads of it (``core/tokens.py``): a text, a thinking
block's thought, a call's name and input, a result's text (an image ``IMAGE_TOKENS``), four
tokens of framing each. A thinking block of a turn before the conversation's last user turn
(a user message with text of its own, not only results) counts nothing: the API takes earlier
turns' thinking out of the context (and does not bill it) for the models the replay names.
What the log does not show (the real system prompt and tools) is the prompt unit, sized from
the real usage (``responses_units.hidden_prompt``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from hdcontext.core.tokens import count_text

FRAMING = 4
IMAGE_TOKENS = 1600
"""An image as Anthropic counts one at its usual size (about 1.15 megapixels / 750)."""
ONE_HOUR = "1h"
MARK = "cache_control"


@dataclass(frozen=True)
class Mark:
    """A breakpoint: where it is (``system[1]``, ``messages[4]``…) and the lifetime it asks."""

    where: str
    ttl: str


@dataclass(frozen=True)
class Units:
    """One request as the bill reads it."""

    blobs: list[bytes]
    tokens: list[int]
    blocks: list[int]
    breakpoints: list[int]
    """Prefix lengths (in units) that end at a unit carrying a breakpoint."""
    long: list[bool]
    """Whether each breakpoint asks an hour."""
    marks: list[Mark]
    """Every ``cache_control`` of the request, in the order Anthropic reads them."""

    @property
    def total(self) -> int:
        return sum(self.tokens)

    def prefix(self, units: int) -> int:
        """The tokens of the first ``units`` units."""
        return sum(self.tokens[:units])


class Counts:
    """Each message's bytes and tokens, counted once however many requests send it."""

    def __init__(self) -> None:
        self._tokens: dict[tuple[bytes, bool], int] = {}

    def units(self, request: Mapping[str, Any], prompt: int) -> Units:
        """``request``'s units, the prompt unit ``prompt`` tokens."""
        marks: list[Mark] = []
        tools = _list(request.get("tools"))
        system = _list(request.get("system"))
        for where, items in (("tools", tools), ("system", system)):
            marks.extend(
                Mark(f"{where}[{k}]", _ttl(item)) for k, item in enumerate(items) if _marked(item)
            )
        head = orjson.dumps(
            [request.get("model"), [_plain(t) for t in tools], [_plain(s) for s in system]],
            option=orjson.OPT_SORT_KEYS,
        )
        blobs, tokens = [b"prompt:" + head], [prompt]
        blocks = [len(tools) + len(system)]
        ends: list[tuple[int, bool]] = [(1, marks[-1].ttl == ONE_HOUR)] if marks else []
        messages = _list(request.get("messages"))
        last_turn = _last_user_turn(messages)
        for i, message in enumerate(messages):
            content = _content(message)
            blob = orjson.dumps(
                {**message, "content": [_plain(b) for b in content]}, option=orjson.OPT_SORT_KEYS
            )
            blobs.append(blob)
            earlier = i < last_turn
            key = (blob, earlier)
            count = self._tokens.get(key)
            if count is None:
                count = self._tokens[key] = message_tokens(content, earlier)
            tokens.append(count)
            blocks.append(len(content))
            marked = [b for b in content if _marked(b)]
            marks.extend(Mark(f"messages[{i}]", _ttl(b)) for b in marked)
            if marked:
                ends.append((i + 2, _ttl(marked[-1]) == ONE_HOUR))
        return Units(blobs, tokens, blocks, [e for e, _ in ends], [long for _, long in ends], marks)


def _list(value: object) -> list[Any]:
    if isinstance(value, str):
        return [{"type": "text", "text": value}]
    return list(value) if isinstance(value, list) else []


def _content(message: object) -> list[Any]:
    return _list(message.get("content")) if isinstance(message, Mapping) else []


def _marked(item: object) -> bool:
    return isinstance(item, Mapping) and isinstance(item.get(MARK), Mapping)


def _ttl(item: Mapping[str, Any]) -> str:
    ttl = item[MARK].get("ttl")
    return ttl if isinstance(ttl, str) else "5m"


def _plain(item: object) -> object:
    if isinstance(item, Mapping) and MARK in item:
        return {k: v for k, v in item.items() if k != MARK}
    return item


def _last_user_turn(messages: Sequence[Any]) -> int:
    """The index of the last user message with text of its own (a turn the user began)."""
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        if not isinstance(message, Mapping) or message.get("role") != "user":
            continue
        if any(
            isinstance(b, Mapping) and b.get("type") != "tool_result" for b in _content(message)
        ):
            return i
    return 0


def message_tokens(content: Sequence[Any], earlier: bool) -> int:
    """What the model reads of a message's blocks; ``earlier``: before the last user turn."""
    total = FRAMING
    for block in content:
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text":
            total += count_text(str(block.get("text", "")))
        elif kind == "thinking":
            total += 0 if earlier else count_text(str(block.get("thinking", "")))
        elif kind == "redacted_thinking":
            total += 0 if earlier else len(str(block.get("data", ""))) // 4
        elif kind == "tool_use":
            total += count_text(str(block.get("name", "")))
            total += count_text(orjson.dumps(block.get("input")).decode())
        elif kind == "tool_result":
            total += _result_tokens(block.get("content"))
        elif kind in ("image", "document"):
            total += IMAGE_TOKENS
        else:
            total += count_text(orjson.dumps(block).decode())
    return total


def _result_tokens(content: object) -> int:
    if isinstance(content, str):
        return count_text(content)
    total = 0
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") in ("image", "document"):
            total += IMAGE_TOKENS
        elif part.get("type") == "text":
            total += count_text(str(part.get("text", "")))
        else:
            total += count_text(orjson.dumps(part).decode())
    return total
