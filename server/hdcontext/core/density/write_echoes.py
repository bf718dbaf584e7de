"""Write echoes: what an edit tool shows back, once the model has read it.

Claude Code's ``Edit`` answers with the lines around the change, numbered (``cat -n``), and its
``Write`` of an existing file with the file; other agents' edit tools do the same or less. The
model reads that once, in the call right after the edit, to check the change. After it has
answered, the echo only repeats its own edit; on the real sessions here, write results are 9%
of the tokens every request carries, call after call (``bench/ceiling.py``). So the result of
a successful write becomes its first line (the tool saying what it did) and a pointer to the
rest, once an AI entry follows it. The model's own call (``old_string``, ``new_string``) stays,
and the latest full view of the file is untouched: no edit is made blind by this.

An echo whose rest is only numbered lines of the file (the ``cat -n`` snippet) is trimmed at
once, before the model sees it: it repeats the model's own edit with the lines around it, and
Claude Code itself stopped sending it (its 2.1 ``Edit`` answers "has been updated
successfully"). Trimmed later, it would cost the cache the model's answer before it (a provider
that caches at breakpoints, ``cache/prompt_cache.py``); trimmed at once, nothing. An echo with
anything else in it (SWE-agent's "please review the changes", a linter's complaint) waits for
the model to read it.

The pass keeps the write responses whose result is still more than one line, and the keys of
the AI entries; a trimmed result is one line, so it leaves the index when the edit is applied.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_left, insort

from ..content import Block, IContent, ToolResponseBlock
from .edits import Edit, Position, Replacements, Rule, dropped_by
from .passes import PassContext

MAX_FIRST_LINE = 200
"""A first line longer than this is cut too (it is the tool's message, not content)."""
MIN_REST_CHARS = 80
"""A rest shorter than this is left alone: not worth a change of the history."""
_NUMBERED = re.compile(r"\s*\d+(?:→|\t)")
"""A line of a ``cat -n`` listing (Claude Code numbers its lines with an arrow)."""


def trimmed_echo(result: str, call_id: str, retrieve_tool: str | None) -> str:
    """The first line of a write's result, and a pointer to the rest (one line), which says
    what the rest was: the file's lines around the change, or output the model has read."""
    first = result.lstrip().split("\n", 1)[0].rstrip()
    if len(first) > MAX_FIRST_LINE:
        first = first[:MAX_FIRST_LINE] + "…"
    listing = is_listing(result)
    if retrieve_tool:
        them = "them" if listing else "it"
        how = f"call {retrieve_tool} with callId {json.dumps(call_id)} to get {them} back"
    else:
        how = "read the file to see them" if listing else "read the file for its current content"
    if listing:
        return f"{first} [the file's numbered lines around the change are left out — {how}]"
    return f"{first} [the rest of this output, already read, was pruned — {how}]"


def is_echo(block: ToolResponseBlock, write_tools: frozenset[str]) -> bool:
    """A successful write's result with more than its first line."""
    if block.tool_name not in write_tools or block.error or not isinstance(block.result, str):
        return False
    rest = block.result.strip().partition("\n")[2]
    return len(rest) >= MIN_REST_CHARS


def is_listing(result: str) -> bool:
    """Whether an echo's rest is only numbered lines of the file (blank lines aside)."""
    rest = result.strip().partition("\n")[2]
    return all(_NUMBERED.match(line) for line in rest.split("\n") if line.strip())


class WriteEchoPass:
    rule: Rule = "readWrite"

    def __init__(self, write_tools: frozenset[str], retrieve_tool: str | None = None) -> None:
        self._write_tools = write_tools
        self._retrieve_tool = retrieve_tool
        self._echoes: set[Position] = set()
        self._listings: set[Position] = set()  # echoes trimmed at once
        self._ai: list[int] = []  # keys of AI entries, in order
        self._edits = Replacements(self.rule, lambda block, _: self._trimmed(block))

    def add(self, key: int, entry: IContent) -> None:
        if entry.speaker == "ai":
            insort(self._ai, key)
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolResponseBlock) and is_echo(block, self._write_tools):
                self._echoes.add((key, j))
                if is_listing(str(block.result)):
                    self._listings.add((key, j))

    def remove(self, key: int, entry: IContent) -> None:
        if entry.speaker == "ai":
            del self._ai[bisect_left(self._ai, key)]
        for j in range(len(entry.blocks)):
            self._echoes.discard((key, j))
            self._listings.discard((key, j))
            self._edits.forget((key, j))

    def protected(self) -> frozenset[Position]:
        return frozenset()

    def propose(self, context: PassContext) -> list[Edit]:
        """One edit per echo that is a listing or that an AI entry follows (not one an
        earlier pass drops)."""
        last_ai = self._ai[-1] if self._ai else -1
        left = context.protected | dropped_by(context.earlier)
        built, entry_of = self._edits.built, context.entry_of
        return [
            edit
            if (edit := built.get(position)) is not None
            else self._edits.edit(position, entry_of)
            for position in sorted(self._echoes)
            if (position[0] < last_ai or position in self._listings) and position not in left
        ]

    def _trimmed(self, block: Block) -> Block:
        assert isinstance(block, ToolResponseBlock) and isinstance(block.result, str)
        result = trimmed_echo(block.result, block.call_id, self._retrieve_tool)
        return block.model_copy(update={"result": result})
