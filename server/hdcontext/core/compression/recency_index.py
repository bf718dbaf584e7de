"""Tool result recency pruning (``recency.py``) kept up to date across turns.

``prune_old_results`` walks every response after every turn. This index keeps, per tool, the
positions of its responses in order, and apart from them the responses whose output is still
there (not yet the pointer). Only those can be pruned, and once the session has applied the
pointers they are the newest few of each tool: what a turn costs is the window and the new
responses, not the session.

It runs after pass 1: the responses that pass drops leave the window to the next ones, which
is why ``outdated`` takes them. Positions are ``(entry key, block index)`` (``journal.py``).
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Set

from ..content import IContent, ToolResponseBlock
from .shell_runs import Position
from .tool_summary import PRUNED_POINTER


class RecencyIndex:
    def __init__(self) -> None:
        self._by_tool: dict[str, list[Position]] = {}
        self._live: dict[str, set[Position]] = {}  # responses whose output is not the pointer

    def add(self, key: int, entry: IContent) -> None:
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolResponseBlock):
                insort(self._by_tool.setdefault(block.tool_name, []), (key, j))
                if block.result != PRUNED_POINTER:
                    self._live.setdefault(block.tool_name, set()).add((key, j))

    def remove(self, key: int, entry: IContent) -> None:
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolResponseBlock):
                tool = block.tool_name
                positions = self._by_tool[tool]
                del positions[bisect_left(positions, (key, j))]
                if not positions:
                    del self._by_tool[tool]
                live = self._live.get(tool)
                if live is not None:
                    live.discard((key, j))
                    if not live:
                        del self._live[tool]

    def outdated(self, retention: int, dropped: Set[Position]) -> dict[int, set[int]]:
        """Entry key -> response blocks older than the newest ``retention`` of their tool
        (``dropped`` responses left out), whose output is not the pointer yet."""
        keep = max(1, retention)
        out: dict[int, set[int]] = {}
        for tool, live in self._live.items():
            oldest_kept = None
            seen = 0
            for position in reversed(self._by_tool[tool]):
                if position in dropped:
                    continue
                seen += 1
                if seen == keep:
                    oldest_kept = position
                    break
            if oldest_kept is None:
                continue
            for key, j in live:
                if (key, j) < oldest_kept and (key, j) not in dropped:
                    out.setdefault(key, set()).add(j)
        return out
