"""A Responses API request as ``billing.py`` bills one: its units, their tokens, its breakpoints.

The units are the prompt (instructions and tools: one unit, the model's name in it, since a
cache is the model's own) and then each ``input`` item as the model reads it: its JSON with the
keys sorted, less any cache breakpoint the proxy put on it (a breakpoint says where to cache, it
is not part of what is cached; to carry one, a text given as a string becomes the one
``input_text`` part it reads as, which reads the same). So an item the proxy sends as Codex did
is the same unit in both bills, whatever order its keys come in.

An item's tokens are what the model reads of it, counted with the daemon's tokenizer
(``core/tokens.py``, cl100k; GPT-5's o200k counts CJK text lower): a message's text, a call's
name and arguments (or a custom call's input), an output's text, four tokens of framing each.
An encrypted item (``reasoning``, ``compaction``) counts what Codex estimates of its hidden
text from its length (``estimate_reasoning_length``: three quarters of the base64, less 650
bytes, four bytes a token). A reasoning item before the conversation's last user message counts
nothing: OpenAI renders earlier turns' reasoning into the prompt only when asked
(``reasoning.context: "all_turns"``, which Codex's models did not ask). Counted so, the rebuilt
requests grow call by call as the real usage Codex recorded does (within a few percent on the
English sessions; cl100k counts the Korean and Chinese ones 5 to 10% higher); what the rollouts
do not record (the base instructions, the tools' schemas) is the prompt unit, sized from that
usage (``hidden_prompt``).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from hdcontext.core.tokens import count_text
from hdcontext.edges.proxy.openai import BREAKPOINT_KEY

FRAMING = 4
IMAGE_TOKENS = 765
ENCRYPTED = frozenset({"reasoning", "compaction"})
_MARK = BREAKPOINT_KEY.encode()
PARTS = ("content", "output")


@dataclass(frozen=True)
class Units:
    """One request as the bill reads it."""

    blobs: list[bytes]
    tokens: list[int]
    breakpoints: list[int]
    """Prefix lengths (in units) that end at an item carrying a breakpoint, the end always."""

    @property
    def total(self) -> int:
        return sum(self.tokens)


class Counts:
    """Each item's bytes and tokens, counted once however many requests send it."""

    def __init__(self) -> None:
        self._tokens: dict[bytes, int] = {}
        self._by_id: dict[int, tuple[Any, bytes, bool]] = {}

    def blob(self, item: Mapping[str, Any]) -> tuple[bytes, bool]:
        """``encoded(item)``, once for each of Codex's items (which many requests share)."""
        known = self._by_id.get(id(item))
        if known is not None and known[0] is item:
            return known[1], known[2]
        data, marked = encoded(item)
        self._by_id[id(item)] = (item, data, marked)  # the item is kept: its id is not reused
        return data, marked

    def tokens(self, blob: bytes, item: Mapping[str, Any]) -> int:
        count = self._tokens.get(blob)
        if count is None:
            count = self._tokens[blob] = item_tokens(item)
        return count

    def units(
        self, model: str, prompt: int, items: Sequence[Mapping[str, Any]], own: bool = True
    ) -> Units:
        """``items`` after the prompt unit (``prompt`` tokens); ``own``: the items are
        Codex's objects, kept (else their encodings are not remembered by id)."""
        blobs = [b"prompt:" + model.encode()]
        tokens = [prompt]
        breakpoints: list[int] = []
        last_user = max((i for i, item in enumerate(items) if is_user_message(item)), default=-1)
        for i, item in enumerate(items):
            data, marked = self.blob(item) if own else encoded(item)
            blobs.append(data)
            dropped = item.get("type") == "reasoning" and i < last_user
            tokens.append(0 if dropped else self.tokens(data, item))
            if marked:
                breakpoints.append(i + 2)
        breakpoints.append(len(blobs))
        return Units(blobs, tokens, breakpoints)


def encoded(item: Mapping[str, Any]) -> tuple[bytes, bool]:
    """The item as the model reads it (``plain``, its JSON with the keys sorted), and whether
    it carried a breakpoint."""
    data = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
    marked = _MARK in data
    if marked or any(_one_part(item.get(key)) for key in PARTS):
        data = orjson.dumps(plain(item), option=orjson.OPT_SORT_KEYS)
    return data, marked


def is_user_message(item: Mapping[str, Any]) -> bool:
    kind = item.get("type", "message" if "role" in item else None)
    return kind == "message" and item.get("role") == "user"


def plain(item: Mapping[str, Any]) -> dict[str, Any]:
    """The item without the cache breakpoints on its parts, a text given as its one
    ``input_text`` part written as the string it reads as (how a mark is put on a string,
    ``responses._marked``)."""
    out = dict(item)
    for key in PARTS:
        parts = out.get(key)
        if isinstance(parts, list):
            parts = [
                {k: v for k, v in p.items() if k != BREAKPOINT_KEY} if isinstance(p, dict) else p
                for p in parts
            ]
            out[key] = parts[0]["text"] if _one_part(parts) else parts
    return out


def _one_part(value: object) -> bool:
    if not isinstance(value, list) or len(value) != 1 or not isinstance(value[0], Mapping):
        return False
    part = value[0]
    return part.get("type") == "input_text" and set(part) - {BREAKPOINT_KEY} == {"type", "text"}


def item_tokens(item: Mapping[str, Any]) -> int:
    kind = item.get("type", "message" if "role" in item else None)
    if kind == "message":
        return FRAMING + _parts(item.get("content"))
    if kind == "function_call":
        return FRAMING + count_text(str(item.get("name"))) + count_text(str(item.get("arguments")))
    if kind == "custom_tool_call":
        return FRAMING + count_text(str(item.get("name"))) + count_text(str(item.get("input")))
    if isinstance(kind, str) and kind.endswith("_output"):
        return FRAMING + _parts(item.get("output"))
    if kind in ENCRYPTED:
        hidden = len(str(item.get("encrypted_content") or "")) * 3 // 4 - 650
        return FRAMING + max(0, hidden) // 4
    return FRAMING + count_text(orjson.dumps(item).decode())


def _parts(value: object) -> int:
    if isinstance(value, str):
        return count_text(value)
    total = 0
    for part in value if isinstance(value, list) else []:
        if not isinstance(part, Mapping):
            continue
        if part.get("type") in ("input_image", "input_file"):
            total += IMAGE_TOKENS
        else:
            total += count_text(str(part.get("text") or part.get("refusal") or ""))
    return total


def hidden_prompt(counted: Iterable[tuple[int, int | None]], floor: int) -> int:
    """The prompt's tokens the rollout does not show: of each request, what it counted (its
    items) and what the provider billed (``None``: not known), the median difference; at
    least ``floor`` (what the stand-ins themselves count)."""
    gaps = [real - mine for mine, real in counted if real is not None]
    return max(floor, int(statistics.median(gaps))) if gaps else floor
