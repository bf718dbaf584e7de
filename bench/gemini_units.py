"""A Gemini request as ``billing.py`` bills one: its units and their tokens.

The units are the prompt (system instruction and tools: one unit, the model's name in it,
since a cache is the model's own) and then each content, as its JSON with the keys sorted: a
content the proxy sends as the CLI did is the same unit in both bills, and one whose signature
changed is not (Gemini caches what it was sent). Gemini's implicit cache reads any prefix two
requests share, so a request carries no breakpoint but its end.

A content's tokens are what the model reads of it, counted with the daemon's tokenizer
(``core/tokens.py``): each text, a call's name and arguments, a response's name and its
``response`` object as JSON, ``FRAMING`` for the content. An image or a PDF page is
``MEDIA_TOKENS`` (Gemini's figure for an image of up to 384 pixels a side, and for a page); a
thought signature counts nothing (it is opaque to the tokenizer, and the files keep none but
the stand-ins). What the files do not show (the system instruction, the tools' schemas, the
directory listing of the preamble) is the prompt unit, sized from the real usage
(``responses_units.hidden_prompt``: the median of the recorded prompt less what is counted).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from hdcontext.core.tokens import count_text

FRAMING = 4
MEDIA_TOKENS = 258
_PAGE = re.compile(rb"/Type\s*/Page(?!s)")


@dataclass(frozen=True)
class Units:
    """One request as the bill reads it."""

    blobs: list[bytes]
    tokens: list[int]

    @property
    def total(self) -> int:
        return sum(self.tokens)

    @property
    def breakpoints(self) -> list[int]:
        return [len(self.blobs)]

    @property
    def blocks(self) -> list[int]:
        """Content blocks per unit (an implicit cache finds a prefix however far back)."""
        return [1] * len(self.blobs)


class Counts:
    """Each content's bytes and tokens, counted once however many requests send it."""

    def __init__(self) -> None:
        self._tokens: dict[bytes, int] = {}
        self._by_id: dict[int, tuple[object, bytes]] = {}

    def blob(self, content: Mapping[str, Any]) -> bytes:
        known = self._by_id.get(id(content))
        if known is not None and known[0] is content:
            return known[1]
        data = encoded(content)
        self._by_id[id(content)] = (content, data)  # kept: its id is not reused
        return data

    def units(
        self, model: str, prompt: int, contents: Sequence[Mapping[str, Any]], own: bool = True
    ) -> Units:
        """``contents`` after the prompt unit (``prompt`` tokens); ``own``: the contents are
        the CLI's objects, kept (else their encodings are not remembered by id)."""
        blobs = [b"prompt:" + model.encode()]
        tokens = [prompt]
        for content in contents:
            data = self.blob(content) if own else encoded(content)
            count = self._tokens.get(data)
            if count is None:
                count = self._tokens[data] = content_tokens(content)
            blobs.append(data)
            tokens.append(count)
        return Units(blobs, tokens)


def encoded(content: Mapping[str, Any]) -> bytes:
    return orjson.dumps(content, option=orjson.OPT_SORT_KEYS)


def content_tokens(content: Mapping[str, Any]) -> int:
    parts = content.get("parts")
    return (
        FRAMING + sum(part_tokens(p) for p in parts if isinstance(p, Mapping))
        if isinstance(parts, list)
        else FRAMING
    )


def part_tokens(part: Mapping[str, Any]) -> int:
    if isinstance(part.get("text"), str):
        return count_text(part["text"])
    call = part.get("functionCall")
    if isinstance(call, Mapping):
        return count_text(str(call.get("name"))) + count_text(_json(call.get("args")))
    response = part.get("functionResponse")
    if isinstance(response, Mapping):
        return count_text(str(response.get("name"))) + count_text(_json(response.get("response")))
    media = part.get("inlineData") or part.get("fileData")
    if isinstance(media, Mapping):
        return MEDIA_TOKENS * _pages(media)
    return count_text(_json({k: v for k, v in part.items() if k != "thoughtSignature"}))


def _json(value: object) -> str:
    return orjson.dumps(value).decode() if value is not None else ""


def _pages(media: Mapping[str, Any]) -> int:
    """The pages of an inline PDF (one for anything else)."""
    if media.get("mimeType") != "application/pdf" or not isinstance(media.get("data"), str):
        return 1
    try:
        data = base64.b64decode(media["data"])
    except ValueError:
        return 1
    return max(1, len(_PAGE.findall(data)))
