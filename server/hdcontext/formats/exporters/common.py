"""What every exporter needs: a tool result as text, code as a fence, and a loss tally.

Exporters never fail on a block their format cannot carry: they leave it out and count it in
:class:`Losses`, by kind, so the caller can say what a conversion dropped.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from ...core.content import CodeBlock, ToolResponseBlock


class Losses:
    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()

    def drop(self, kind: str, n: int = 1) -> None:
        self.counts[kind] += n

    def as_dict(self) -> dict[str, int]:
        return dict(sorted(self.counts.items()))


def json_text(value: Any) -> str:
    """A JSON value as the text a provider's string field takes (strings as they are)."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def response_text(block: ToolResponseBlock) -> str:
    """A tool response as one text: its result, then its error on a line of its own."""
    result = json_text(block.result)
    if not block.error:
        return result
    return f"{result}\n{block.error}" if result else block.error


def fenced(block: CodeBlock) -> str:
    """A code block as Markdown, for formats that have no code part: the model reads the same."""
    return f"```{block.language or ''}\n{block.code}\n```"


def extra(block: Any, key: str) -> Any:
    """An extra key a block carries (``signature``, ``thoughtSignature``…), or ``None``."""
    extras = getattr(block, "model_extra", None) or {}
    return extras.get(key)
