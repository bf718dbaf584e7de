"""Masking: tool output the model has already read becomes a pointer to it.

Once the model has answered after a tool output, what it needed from it is in its answer: on
the following calls the output is carried again and again for little. Agents that mask old
observations (Claude Code after an hour's pause, the "Complexity Trap" study's masking) cost
far less and solve as much; but they also take away the file the model is editing, and few
let the model get an output back. So this rule masks the output of every tool call the model
has answered, except:

* the current views of files (what ``stale_reads.py`` protects under ``keepLatestView``: a
  read no later view covers); an ``Edit`` is never made blind by masking;
* the newest ``maskRetention`` outputs, whatever they are (responses an earlier pass drops
  leave that window, as in ``recency.py``);
* outputs shorter than their pointer (with recency's margin, ``MIN_GAIN_CHARS``), outputs
  already one of our one-liners, and any block an earlier pass edits;
* outputs whose call id another response shares (``history/retrieve`` could not tell which
  one to give back);
* what the model has not answered yet (no AI entry after it).

The pointer (``summary.masked_pointer``, core/tools/) names the call and how to get the output back,
and is the same for the same output every time. With ``masking: cold`` the edits are
``free_only``: they apply when nothing cached is lost for them (a cold cache, compression, or
past the prefix the provider holds), so a warm call only appends; ``always`` lets the
schedule weigh them like any other edit.

The pass keeps, per response, only its position and the facts its pointer states
(``OutputFacts``), per call id its calls' key parameters, and the keys of the AI entries. A
masked output is a one-liner of ours, so it leaves the index when the edit is applied.
"""

from __future__ import annotations

import json
from bisect import bisect_left, insort
from collections.abc import Callable, Iterable, Mapping

from ..content import Block, IContent, ToolCallBlock, ToolResponseBlock
from ..tools.files import KEY_PARAM_KEYS, key_parameter
from ..tools.shell.commands import COMMAND_KEYS, command_of, exit_status
from ..tools.summary import OutputFacts, first_line, is_compact, loads_tools, masked_pointer
from .edits import Edit, Position, Replacements, Rule, dropped_by, touched_by
from .file_rules import RANGE_KEYS
from .passes import PassContext
from .recency import MIN_GAIN_CHARS


class MaskingPass:
    rule: Rule = "masking"

    def __init__(self, retention: int, retrieve_tool: str | None, free_only: bool) -> None:
        self._keep = max(0, retention)
        self._retrieve_tool = retrieve_tool
        self._responses: list[Position] = []  # every response, in order: the retention window
        self._answers: dict[str, list[Position]] = {}  # call id -> its responses
        self._calls: dict[str, list[Position]] = {}  # call id -> its calls
        """Not their key parameters (``describe_call``): those are read again from the call's
        entry when an output's pointer is weighed or made, once each, rather than held."""
        self._live: dict[Position, OutputFacts] = {}  # outputs a pointer could stand for
        self._order: list[Position] = []  # the same, in order
        self._worth: dict[Position, bool] = {}  # pointer shorter and exit status kept
        self._ai: list[int] = []  # keys of AI entries, in order
        self._edits = Replacements(self.rule, self._masked, free_only)

    # -- changes --------------------------------------------------------------------------

    def add(self, key: int, entry: IContent) -> None:
        if entry.speaker == "ai":
            insort(self._ai, key)
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock):
                insort(self._calls.setdefault(block.id, []), (key, j))
                self._forget_answers(block.id)  # their pointers name the call
            elif isinstance(block, ToolResponseBlock):
                position = (key, j)
                insort(self._responses, position)
                insort(self._answers.setdefault(block.call_id, []), position)
                if not is_compact(block.result) and not loads_tools(block.result):
                    facts = OutputFacts.of(block)
                    if (
                        facts.chars
                        >= len(masked_pointer(facts, None, self._retrieve_tool)) + MIN_GAIN_CHARS
                    ):
                        self._live[position] = facts
                        insort(self._order, position)

    def remove(self, key: int, entry: IContent) -> None:
        if entry.speaker == "ai":
            del self._ai[bisect_left(self._ai, key)]
        for j, block in enumerate(entry.blocks):
            position = (key, j)
            if isinstance(block, ToolCallBlock):
                calls = self._calls[block.id]
                del calls[bisect_left(calls, position)]
                if not calls:
                    del self._calls[block.id]
                self._forget_answers(block.id)
            elif isinstance(block, ToolResponseBlock):
                del self._responses[bisect_left(self._responses, position)]
                answers = self._answers[block.call_id]
                del answers[bisect_left(answers, position)]
                if not answers:
                    del self._answers[block.call_id]
                if self._live.pop(position, None) is not None:
                    del self._order[bisect_left(self._order, position)]
                self._worth.pop(position, None)
                self._edits.forget(position)

    def _forget_answers(self, call_id: str) -> None:
        for position in self._answers.get(call_id, ()):
            self._worth.pop(position, None)
            self._edits.forget(position)

    def protected(self) -> frozenset[Position]:
        return frozenset()

    # -- what to mask ---------------------------------------------------------------------

    def propose(self, context: PassContext) -> list[Edit]:
        """One edit per output the model has answered, outside the retention window, that
        no earlier pass touches and no rule protects, and that its pointer shortens."""
        if not self._live or not self._ai:
            return []
        limit = self._limit(context)
        if limit is None:
            return []
        left = context.protected | touched_by(context.earlier)
        # What each output needs is looked up in place: this walks every live output at
        # every compact, and most of them were weighed and made at an earlier one.
        answers, live, weighed, built = self._answers, self._live, self._worth, self._edits.built
        entry_of = context.entry_of
        edits: list[Edit] = []
        for position in self._order[: bisect_left(self._order, limit)]:
            if position in left or len(answers[live[position].call_id]) != 1:
                continue
            worth = weighed.get(position)
            if worth is None:
                worth = self._worth_masking(position, entry_of)
            if worth:
                edit = built.get(position)
                edits.append(edit if edit is not None else self._edits.edit(position, entry_of))
        return edits

    def _worth_masking(self, position: Position, entry_of: Callable[[int], IContent]) -> bool:
        """The pointer is shorter than the output (by ``MIN_GAIN_CHARS``), and reads as the
        same exit status (a key parameter could read as one: then the output stays)."""
        worth = self._worth.get(position)
        if worth is None:
            facts = self._live[position]
            pointer = masked_pointer(facts, self._key(facts.call_id, entry_of), self._retrieve_tool)
            worth = facts.chars >= len(pointer) + MIN_GAIN_CHARS
            worth = worth and exit_status(pointer) == facts.exit_status
            self._worth[position] = worth
        return worth

    def _limit(self, context: PassContext) -> Position | None:
        """Outputs before this position may be masked: answered (an AI entry after them) and
        older than the newest ``retention`` responses (``None``: there are not that many)."""
        limit: Position = (self._ai[-1], -1)
        if self._keep == 0:
            return limit
        dropped = dropped_by(context.earlier)
        seen = 0
        for position in reversed(self._responses):
            if position in dropped:
                continue
            seen += 1
            if seen == self._keep:
                return min(limit, position)
        return None

    def _key(self, call_id: str, entry_of: Callable[[int], IContent]) -> str | None:
        """The call's key parameters, when exactly one call has this id."""
        calls = self._calls.get(call_id, ())
        if len(calls) != 1:
            return None
        key, j = calls[0]
        call = entry_of(key).blocks[j]
        assert isinstance(call, ToolCallBlock)
        return describe_call(call.parameters)

    def _masked(self, block: Block, entry_of: Callable[[int], IContent]) -> Block:
        assert isinstance(block, ToolResponseBlock)
        key = self._key(block.call_id, entry_of)
        pointer = masked_pointer(OutputFacts.of(block), key, self._retrieve_tool)
        return block.model_copy(update={"result": pointer})


MAX_KEYS = 2
"""How many of a call's key parameters its pointer names (a command and its description, a
path and a pattern…); the range of a read is named besides."""


def describe_call(parameters: object) -> str | None:
    """A call's key parameters on one line, ``name=value`` (values as JSON, first lines cut
    as summaries cut them), and the part of a file a read asked for: what tells the model,
    in a pointer, which of its calls this was."""
    if not isinstance(parameters, Mapping):
        return None
    parts: list[str] = []
    for name in KEY_PARAM_KEYS:
        value = parameters.get(name)
        if name in COMMAND_KEYS and isinstance(value, list):
            value = command_of(parameters)  # an argv (Codex's shell): the command it runs
        if isinstance(value, str) and value and len(parts) < MAX_KEYS:
            parts.append(f"{name}={json.dumps(first_line(value), ensure_ascii=False)}")
    if not parts:
        found = key_parameter(parameters)  # a many-file read's list
        if found is not None:
            parts.append(json.dumps(first_line(found), ensure_ascii=False))
    for name in RANGE_KEYS:
        value = parameters.get(name)
        if value is not None and value != "" and not isinstance(value, bool | dict):
            parts.append(f"{name}={first_line(json.dumps(value, ensure_ascii=False))}")
    return " ".join(parts) if parts else None


def masked_weight(
    edits: Iterable[Edit], entry_of: Callable[[int], IContent], count: Callable[[IContent], int]
) -> tuple[int, int]:
    """(outputs masked, tokens they took out) of ``edits`` (the session's running figures
    for the status bar), counted before they apply: each output against its pointer, in an
    entry of its own so that the rest of its entry is not counted."""
    outputs = tokens = 0
    for edit in edits:
        if edit.rule != "masking":
            continue
        for b in edit.blocks:
            entry = entry_of(b.key)
            old = entry.with_blocks((entry.blocks[b.block],))
            new = entry.with_blocks(() if b.new is None else (b.new,))
            outputs += 1
            tokens += count(old) - count(new)
    return outputs, tokens
