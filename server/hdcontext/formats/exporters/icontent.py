"""A conversation as hdcontext's own JSON: the IContent array the daemon takes and returns.

A system prompt, which IContent has no speaker for, goes first as a ``human`` entry marked
``metadata.role = "system"``; the IContent importer lifts it back out.
"""

from __future__ import annotations

from ...core.content import IContent, TextBlock, dump_entries
from ..conversation import Conversation, Exported, role_metadata


def export(conversation: Conversation) -> Exported:
    entries = list(conversation.entries)
    if conversation.system is not None:
        system = IContent(
            speaker="human",
            blocks=(TextBlock(text=conversation.system),),
            metadata=role_metadata("system"),
        )
        entries.insert(0, system)
    return Exported(dump_entries(entries))
