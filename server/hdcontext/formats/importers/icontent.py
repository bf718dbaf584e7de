"""hdcontext's own form: a JSON array of IContent entries (PROTOCOL.md "Wire shapes").

Also accepted: the ``{"entries": […]}`` of ``history/get`` and the ``{"history": […]}`` of
``history/compact``, so a reply saved from the daemon can be fed back. A leading ``human``
entry marked ``metadata.role = "system"`` (how the exporter writes a system prompt) becomes
the conversation's system prompt again.
"""

from __future__ import annotations

from collections.abc import Mapping

from ...core.content import ContentError, IContent, TextBlock, parse_entries
from ..conversation import Conversation, FormatError, entry_role


def load(data: object) -> Conversation:
    raw = data
    if isinstance(data, Mapping):
        raw = data.get("entries", data.get("history"))
    if not isinstance(raw, list):
        raise FormatError("an IContent history is a JSON array of entries")
    try:
        entries = parse_entries(raw, path="")
    except ContentError as exc:
        raise FormatError("; ".join(exc.errors[:20])) from None
    if entries and _is_system(entries[0]):
        first = entries[0].blocks[0]
        assert isinstance(first, TextBlock)
        return Conversation(tuple(entries[1:]), system=first.text)
    return Conversation(tuple(entries))


def _is_system(entry: IContent) -> bool:
    return (
        entry.speaker == "human"
        and entry_role(entry.metadata) == "system"
        and len(entry.blocks) == 1
        and isinstance(entry.blocks[0], TextBlock)
    )
