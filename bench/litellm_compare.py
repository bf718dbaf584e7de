"""What differs between two requests sent upstream, said precisely enough to find the cause.

The two paths of ``litellm_replay.py`` must send the same request: the same fields after JSON
decoding (the conversation, the system prompt, the tools, the other fields the agent sent), and
so the same breakpoints with the same lifetimes. A difference is named by its field and, inside
the conversation or the system prompt, by the first element that differs, with whether only the
breakpoints differ there (``marks``: the same content, ``cache_control`` elsewhere or of another
lifetime) or the content itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

MARK = "cache_control"
LISTS = ("messages", "system", "tools")


def differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """Each field in which ``a`` and ``b`` differ, described; empty when they are the same."""
    out: list[str] = []
    for key in sorted(set(a) | set(b), key=lambda k: (k not in LISTS, k)):
        if key not in a or key not in b:
            out.append(f"{key}: only in {'the first' if key in a else 'the second'}")
        elif a[key] != b[key]:
            out.append(_described(key, a[key], b[key]))
    return out


def _described(key: str, a: object, b: object) -> str:
    if not isinstance(a, list) or not isinstance(b, list):
        if unmarked(a) == unmarked(b):
            return f"{key} (marks)"
        return f"{key}: {str(a)[:60]!r} vs {str(b)[:60]!r}"
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            what = "marks" if unmarked(x) == unmarked(y) else "content"
            return f"{key}[{i}] ({what})"
    return f"{key}: {len(a)} vs {len(b)} elements"


def unmarked(value: object) -> object:
    """``value`` without any ``cache_control``, a text given as a string written as the one
    text block it reads as (how a mark is put on a string)."""
    if isinstance(value, Mapping):
        out = {k: unmarked(v) for k, v in value.items() if k != MARK}
        content = out.get("content")
        if isinstance(content, str) and "role" in out:
            out["content"] = [{"type": "text", "text": content}]
        return out
    if isinstance(value, list):
        return [unmarked(v) for v in value]
    return value


def marks(fields: Mapping[str, Any]) -> list[str]:
    """Every breakpoint of a request, in the order Anthropic reads them: where and how long
    (``system[1] 1h``, ``messages[8] 5m``)."""
    out: list[str] = []
    for key in ("tools", "system", "messages"):
        items = fields.get(key)
        for i, item in enumerate(items if isinstance(items, list) else []):
            for block in _blocks(item) if key == "messages" else [item]:
                control = block.get(MARK) if isinstance(block, Mapping) else None
                if isinstance(control, Mapping):
                    out.append(f"{key}[{i}] {control.get('ttl') or '5m'}")
    return out


def _blocks(message: object) -> Sequence[Any]:
    content = message.get("content") if isinstance(message, Mapping) else None
    return content if isinstance(content, list) else []
