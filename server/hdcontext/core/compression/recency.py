"""Tool result recency pruning (REQ-HD-007).

A session that runs the same tool many times carries every old output, though the model acts
on the latest few. Past ``recency_retention`` results per tool name, the output is swapped for
a pointer that tells the model to run the tool again; the call and the response stay, so the
history keeps its shape and its pairs (REQ-HD-007.3).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..content import Block, IContent, ToolResponseBlock
from .edits import PassEdits, edits_from_blocks
from .tool_summary import PRUNED_POINTER

__all__ = ["PRUNED_POINTER", "prune_old_results"]


def prune_old_results(history: Sequence[IContent], retention: int) -> PassEdits:
    """Point every result older than the newest ``retention`` of its tool at a re-run.

    Results already pruned still take their place in the window, so running the pass again
    changes nothing. ``retention`` below 1 counts as 1 (REQ-HD-013.6).
    """
    keep = max(1, retention)
    seen: dict[str, int] = {}
    new_blocks: dict[int, list[Block]] = {}
    for i in range(len(history) - 1, -1, -1):
        blocks = history[i].blocks
        for j in range(len(blocks) - 1, -1, -1):
            block = blocks[j]
            if not isinstance(block, ToolResponseBlock):
                continue
            seen[block.tool_name] = seen.get(block.tool_name, 0) + 1
            if seen[block.tool_name] <= keep or block.result == PRUNED_POINTER:
                continue
            edited = new_blocks.setdefault(i, list(blocks))
            edited[j] = block.model_copy(update={"result": PRUNED_POINTER})
    return edits_from_blocks(history, new_blocks)
