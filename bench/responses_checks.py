"""Whether a request the proxy would send is one OpenAI takes, checked against the one Codex sent.

OpenAI refuses a Responses request whose calls and outputs do not pair up by ``call_id``, and
one whose ``reasoning`` or ``compaction`` item is not one it wrote, byte for byte (their
``encrypted_content`` is checked server-side), or is not followed by the item it led. A proxy
that passes the first check on its own items could still fail the others; so each request is
read as OpenAI would and compared with Codex's:

* the provider's pairing rules (``core.validity.payload_problems``), beyond any Codex's own
  request already broke;
* each reasoning item sent is one of Codex's, the same JSON in the same key order, in Codex's
  order, and followed by the item that followed it in Codex's request (the same item by its
  kind and ids: an edit may have made its content shorter, as a call whose written content a
  later whole view repeats is sent with its content left out);
* everything up to the latest ``compaction`` item is Codex's, item for item (the compaction's
  summary stands for all that came before it);
* the body's other members are Codex's, but for the retention the proxy may ask where it is
  free (``prompt_cache_retention``).

Each problem is named by a short kind (what the report counts), never by content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hdcontext.core.validity import payload_problems
from hdcontext.edges.proxy.openai_cache import RETENTION_KEY

ADDED_KEYS = frozenset({RETENTION_KEY})
"""Body members the proxy may add to what Codex sent."""


def problems(
    raw_items: Sequence[Mapping[str, Any]],
    raw_blobs: Sequence[bytes],
    raw_rest: Mapping[str, Any],
    sent: Mapping[str, Any],
    sent_blobs: Sequence[bytes],
) -> list[str]:
    """What is wrong with ``sent`` (a body, parsed) against Codex's request: its items
    (``raw_items``, each item's JSON in ``raw_blobs``) and its other members (``raw_rest``);
    ``sent_blobs``: each sent item's JSON, breakpoints left out."""
    found: list[str] = []
    items = sent.get("input")
    if not isinstance(items, list):
        return ["no input"]
    before = {(p.kind, p.key) for p in payload_problems("openai-responses", {"input": raw_items})}
    for p in payload_problems("openai-responses", sent):
        if (p.kind, p.key) not in before:
            found.append(f"provider rules: {p.kind}")
    found += _reasoning(raw_items, raw_blobs, items, sent_blobs)
    head = _head(raw_items)
    if list(sent_blobs[:head]) != list(raw_blobs[:head]):
        found.append("changed before the latest compaction item")
    rest = {k: v for k, v in sent.items() if k != "input" and k not in ADDED_KEYS}
    if rest != dict(raw_rest) or list(rest) != list(raw_rest):
        found.append("other members changed")
    return found


def _head(items: Sequence[Mapping[str, Any]]) -> int:
    """Items up to and with the latest compaction item (0: none)."""
    for index in range(len(items) - 1, -1, -1):
        if items[index].get("type") == "compaction":
            return index + 1
    return 0


def _reasoning(
    raw_items: Sequence[Mapping[str, Any]],
    raw_blobs: Sequence[bytes],
    items: Sequence[Any],
    sent_blobs: Sequence[bytes],
) -> list[str]:
    where = {
        str(item.get("encrypted_content")): i
        for i, item in enumerate(raw_items)
        if item.get("type") == "reasoning"
    }
    found: list[str] = []
    last = -1
    for j, item in enumerate(items):
        if not isinstance(item, Mapping) or item.get("type") != "reasoning":
            continue
        i = where.get(str(item.get("encrypted_content")))
        if i is None or raw_blobs[i] != sent_blobs[j]:
            found.append("reasoning not Codex's, byte for byte")
            continue
        if i <= last:
            found.append("reasoning out of Codex's order")
        last = i
        following = raw_items[i + 1] if i + 1 < len(raw_items) else None
        after = items[j + 1] if j + 1 < len(items) else None
        if following is not None and (
            not isinstance(after, Mapping) or _identity(after) != _identity(following)
        ):
            found.append("reasoning without the item it led")
    return found


def _identity(item: Mapping[str, Any]) -> tuple[object, ...]:
    """Which item an item is, whatever an edit made of its content (a call whose input a
    later view repeats is sent shorter): its kind, its id and its call's id."""
    return (item.get("type"), item.get("id"), item.get("call_id"), item.get("role"))
