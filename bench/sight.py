"""What the model can still see: the blind-edit check every replay shares.

An edit is blind when the model changes a file (``Edit``/``MultiEdit``) that the whole history
had a view of, while the request it answered held none: every view pruned. A view is a
successful ``Read`` whose output is still there, or a ``Write`` that carries the whole content.
"""

from __future__ import annotations

from collections.abc import Sequence

from hdcontext.core.content import IContent, ToolCallBlock, ToolResponseBlock
from hdcontext.core.tools.summary import is_compact

EDIT_TOOLS = frozenset({"Edit", "MultiEdit"})


def edited_files(entry: IContent) -> list[str]:
    """The files an AI entry edits."""
    return [
        str(b.parameters["file_path"])
        for b in entry.blocks
        if isinstance(b, ToolCallBlock)
        and b.name in EDIT_TOOLS
        and isinstance(b.parameters, dict)
        and isinstance(b.parameters.get("file_path"), str)
    ]


def viewed_files(entries: Sequence[IContent]) -> set[str]:
    """Files the entries show: a Read answered without error whose output is still there, or
    a Write with the whole content."""
    reads: dict[str, str] = {}
    shown: set[str] = set()
    for entry in entries:
        for b in entry.blocks:
            if isinstance(b, ToolCallBlock) and isinstance(b.parameters, dict):
                path = b.parameters.get("file_path")
                if not isinstance(path, str):
                    continue
                if b.name == "Read":
                    reads[b.id] = path
                elif b.name == "Write" and isinstance(b.parameters.get("content"), str):
                    shown.add(path)
            elif (
                isinstance(b, ToolResponseBlock)
                and b.call_id in reads
                and not b.error
                and not is_compact(b.result)
            ):
                shown.add(reads[b.call_id])
    return shown


def blind(edited: Sequence[str], history: Sequence[IContent], request: Sequence[IContent]) -> int:
    """How many of the ``edited`` files ``history`` (everything before the edit) had a view
    of while ``request`` (what the model was sent) had none."""
    seen = viewed_files(history)
    sent = viewed_files(request)
    return sum(1 for f in edited if f in seen and f not in sent)
