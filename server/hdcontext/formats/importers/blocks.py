"""Small helpers every importer needs: blocks with provider extras, data URLs, times, JSON.

Provider formats carry attributes IContent has no field for (Anthropic's thinking
``signature``, Gemini's ``thoughtSignature``, OpenAI's image ``detail``). IContent keeps
unknown keys on a block, so they ride along as extras and the exporter of the same format
writes them back; exporters to other formats leave them out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, JsonValue

from ...core.content import IContent, Metadata, Speaker

B = TypeVar("B", bound=BaseModel)

_DATA_URL = re.compile(r"^data:([^;,]+)?(?:;[^;,]*)*;base64,(.*)$", re.DOTALL)


def make(cls: type[B], fields: Mapping[str, Any], **extras: Any) -> B:
    """A block of ``cls`` with ``fields``, plus every extra that is not ``None``."""
    data = dict(fields)
    data.update({k: v for k, v in extras.items() if v is not None})
    return cls.model_validate(data)


def entry(speaker: Speaker, blocks: list[Any], metadata: Metadata | None = None) -> IContent:
    if metadata is None:
        return IContent(speaker=speaker, blocks=tuple(blocks))
    return IContent(speaker=speaker, blocks=tuple(blocks), metadata=metadata)


def user_entries(responses: list[Any], others: list[Any]) -> list[IContent]:
    """A provider's user message as IContent: its tool responses become a ``tool`` entry,
    placed first (they answer the calls just made), the rest a ``human`` entry."""
    out: list[IContent] = []
    if responses:
        out.append(entry("tool", responses))
    if others or not responses:
        out.append(entry("human", others))
    return out


def parse_data_url(url: str) -> tuple[str, str] | None:
    """``(mime type, base64 data)`` of a ``data:…;base64,…`` URL."""
    match = _DATA_URL.match(url)
    if match is None:
        return None
    return match.group(1) or "application/octet-stream", match.group(2)


def iso_ms(stamp: object) -> int | None:
    """Milliseconds since the epoch from an ISO-8601 string (``…Z`` allowed)."""
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def seconds_ms(stamp: object) -> int | None:
    """Milliseconds from a Unix time in seconds (an int or a float)."""
    if isinstance(stamp, bool) or not isinstance(stamp, int | float):
        return None
    return int(stamp * 1000)


def json_arguments(raw: object) -> JsonValue:
    """Tool-call arguments: a JSON string is parsed; one that does not parse is kept as text
    (the model wrote it; the pairing matters more than the shape)."""
    if isinstance(raw, str):
        try:
            parsed: JsonValue = json.loads(raw)
        except ValueError:
            return raw
        return parsed
    if raw is None or isinstance(raw, dict | list | int | float | bool):
        return raw
    return str(raw)


def text_of_parts(content: object, kinds: tuple[str, ...] = ("text",)) -> str | None:
    """The text of a string, or of a list of text parts joined by newlines; ``None`` when the
    list holds anything but text parts of ``kinds``."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for part in content:
        if not isinstance(part, Mapping) or part.get("type") not in kinds:
            return None
        value = part.get("text", part.get(part.get("type", ""), ""))
        texts.append(value if isinstance(value, str) else "")
    return "\n".join(texts)
