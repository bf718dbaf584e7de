"""Todo lists a later one replaced: each ``todo_write`` (Claude Code's ``TodoWrite``) carries
the agent's whole list, so only the latest call's list is the list. Earlier calls keep their
place (the call and its response stay paired) and their list becomes a pointer, as a whole
file written again makes the earlier write's content a pointer (``stale_reads.py``). The
daemon reads the agent's list from the transcript, which keeps every call whole.

The pass keeps the positions of the todo calls and, apart from them, those whose list is still
there; a pointed call has nothing left to take.
"""

from __future__ import annotations

from bisect import bisect_left, insort

from ..content import Block, IContent, ToolCallBlock
from ..tools.summary import without_todo_list
from ..tools.todos import is_todo_write
from .edits import Edit, Position, Replacements, Rule
from .passes import PassContext


class TodoListPass:
    rule: Rule = "readWrite"

    def __init__(self) -> None:
        self._calls: list[Position] = []
        self._full: set[Position] = set()  # calls whose list is not the pointer yet
        self._edits = Replacements(self.rule, lambda block, _: _without_list(block))

    def add(self, key: int, entry: IContent) -> None:
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock) and is_todo_write(block.name):
                insort(self._calls, (key, j))
                if without_todo_list(block.parameters) != block.parameters:
                    self._full.add((key, j))

    def remove(self, key: int, entry: IContent) -> None:
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock) and is_todo_write(block.name):
                del self._calls[bisect_left(self._calls, (key, j))]
                self._full.discard((key, j))
                self._edits.forget((key, j))

    def protected(self) -> frozenset[Position]:
        return frozenset()

    def propose(self, context: PassContext) -> list[Edit]:
        """One edit per todo call with a later one (the latest keeps its list)."""
        if not self._calls:
            return []
        latest = self._calls[-1]
        return [self._edits.edit(p, context.entry_of) for p in sorted(self._full) if p < latest]


def _without_list(block: Block) -> Block:
    assert isinstance(block, ToolCallBlock)
    return block.model_copy(update={"parameters": without_todo_list(block.parameters)})
