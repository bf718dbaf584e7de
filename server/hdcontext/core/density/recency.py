"""Tool result recency pruning (REQ-HD-007).

A session that runs the same tool many times carries every old output, though the model acts
on the latest few. Past ``recency_retention`` results per tool name, the output is swapped for
a pointer that tells the model to run the tool again; the call and the response stay, so the
history keeps its shape and its pairs (REQ-HD-007.3). Results already pointed still take their
place in the window, so proposing again changes nothing; responses an earlier pass drops leave
the window to the next ones.

The pass keeps, per tool, the positions of its responses in order, and apart from them the
responses whose output is still there. Only those can be pointed, and once the pointers are
applied they are the newest few of each tool: what a turn costs is the window and the new
responses, not the session.

With ``keep_small`` (the keep-latest-view rules), an output too short to be worth a change of
the history stays: a pointer would save a few tokens or add some, and under prompt caching
every change has a price. The seeds point every output, whatever its size.
"""

from __future__ import annotations

from bisect import bisect_left, insort

from ..content import Block, IContent, ToolResponseBlock
from ..tools.summary import (
    is_agent_masked,
    is_pruned,
    loads_tools,
    pruned_pointer,
    result_chars,
)
from .edits import Edit, Position, Replacements, Rule, dropped_by
from .passes import PassContext

MIN_GAIN_CHARS = 60
"""With ``keep_small``, how much longer than its pointer an output must be to be pointed
(measured on the replay: from 50 to 150 the cost moves by less than 0.1%; below, a pointer
can cost more than the output)."""


class RecencyPass:
    rule: Rule = "recency"

    def __init__(
        self, retention: int, retrieve_tool: str | None = None, keep_small: bool = False
    ) -> None:
        self._keep = max(1, retention)
        self._retrieve_tool = retrieve_tool
        self._keep_small = keep_small
        self._by_tool: dict[str, list[Position]] = {}
        self._live: dict[str, set[Position]] = {}  # responses whose output is not the pointer
        self._edits = Replacements(self.rule, lambda block, _: self._pointed(block))

    def add(self, key: int, entry: IContent) -> None:
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolResponseBlock):
                insort(self._by_tool.setdefault(block.tool_name, []), (key, j))
                if (
                    not is_pruned(block.result)
                    and not is_agent_masked(block.result)
                    and not loads_tools(block.result)
                    and self._worth_pointing(block)
                ):
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
                self._edits.forget((key, j))

    def protected(self) -> frozenset[Position]:
        return frozenset()

    def propose(self, context: PassContext) -> list[Edit]:
        """One edit per response older than the newest ``retention`` of its tool, except the
        current views of files (``context.protected``): pruning those would blind an edit."""
        dropped = dropped_by(context.earlier)
        protected = context.protected
        edits: list[Edit] = []
        for tool, live in self._live.items():
            oldest_kept = None
            seen = 0
            for position in reversed(self._by_tool[tool]):
                if position in dropped:
                    continue
                seen += 1
                if seen == self._keep:
                    oldest_kept = position
                    break
            if oldest_kept is None:
                continue
            for position in live:
                if position < oldest_kept and position not in dropped | protected:
                    edits.append(self._edits.edit(position, context.entry_of))
        return edits

    def _worth_pointing(self, block: ToolResponseBlock) -> bool:
        if not self._keep_small:
            return True
        pointer = pruned_pointer(block.call_id, self._retrieve_tool)
        return result_chars(block.result) >= len(pointer) + MIN_GAIN_CHARS

    def _pointed(self, block: Block) -> Block:
        assert isinstance(block, ToolResponseBlock)
        pointer = pruned_pointer(block.call_id, self._retrieve_tool)
        return block.model_copy(update={"result": pointer})
