"""The high-density strategy (REQ-HD-004, 005-008): dense history without a model.

``optimize`` runs after every change and takes out what is provably dead weight (stale reads,
repeated ``@file`` inclusions, and, when asked, old tool output). ``compress`` runs near the
context limit and, still without a model, cuts tool output outside the recent tail to one
line each until the history fits the target.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..content import Block, IContent, ToolCallBlock, ToolResponseBlock
from ..density.optimize import optimize
from ..density.types import DensityConfig, DensityResult
from ..settings import DEFAULT_THRESHOLDS
from ..tokens import count_entry
from ..tools.summary import summarize_response
from .types import CompressionContext, CompressionResult, StrategyTrigger


class HighDensityStrategy:
    """REQ-HD-004.3: continuous, no LLM, 0.85 by default."""

    @property
    def name(self) -> str:
        return "high-density"

    @property
    def requires_llm(self) -> bool:
        return False

    @property
    def trigger(self) -> StrategyTrigger:
        return StrategyTrigger("continuous", DEFAULT_THRESHOLDS["high-density"])

    def optimize(self, history: Sequence[IContent], config: DensityConfig) -> DensityResult:
        """The enabled density rules, folded over the history (``density/optimize.py``)."""
        return optimize(history, config)

    async def compress(self, context: CompressionContext) -> CompressionResult:
        """Summarize tool output outside the recent tail, oldest first, until it fits.

        Best effort: when every response outside the tail is a one-liner and the history is
        still over the target, that is what it returns; the caller decides what comes next.
        An entry whose summary would not be smaller than its output keeps its output.
        """
        return summarize_old_tool_output(context)


def summarize_old_tool_output(context: CompressionContext) -> CompressionResult:
    """``compress`` as a plain function, so the session's emergency path can call it too."""
    history = tuple(context.history)
    if len(context.tokens) != len(history):
        raise ValueError(
            f"compress got {len(context.tokens)} token counts for {len(history)} entries"
        )
    calls = _calls_by_id(history)
    changes, _ = summarize_from(
        history.__getitem__,
        context.tokens,
        context.target_tokens,
        context.preserve_threshold,
        calls.get,
    )
    out = list(history)
    for i, entry in changes.items():
        out[i] = entry
    return CompressionResult(new_history=tuple(out), summarized=len(changes))


def summarize_from(
    entry_at: Callable[[int], IContent],
    tokens: Sequence[int],
    target: int,
    preserve_threshold: float,
    call_of: Callable[[str], ToolCallBlock | None],
    start: int = 0,
) -> tuple[dict[int, IContent], int]:
    """The entries ``compress`` cuts (index -> new entry), and how far it went: every entry
    before that index is now as compressing leaves it.

    ``start`` skips entries already so. That is exact because a summary is a fixed point
    (summarizing twice is once) and an entry it left alone is left alone again while it and
    the calls before it stay the same: the entries skipped change no count. Only the entries
    read are asked of ``entry_at``, so a caller can parse them on demand.
    """
    running = sum(tokens)
    tail = _tail_start(tokens, preserve_threshold)
    changes: dict[int, IContent] = {}
    for i in range(start, tail):
        if running <= target:
            return changes, i
        entry = entry_at(i)
        blocks = [_summarize(block, call_of) for block in entry.blocks]
        if all(new is old for new, old in zip(blocks, entry.blocks, strict=True)):
            continue
        candidate = entry.with_blocks(blocks)
        saved = tokens[i] - count_entry(candidate)
        if saved <= 0:
            continue  # a short output is cheaper than its summary: keep the real thing
        changes[i] = candidate
        running -= saved
    return changes, max(start, tail)


def _tail_start(tokens: Sequence[int], preserve_threshold: float) -> int:
    """First index of the recent tail: at least ``preserve_threshold`` of the tokens, and
    never less than the last entry (REQ-HD-008.2)."""
    if not tokens:
        return 0
    need = preserve_threshold * sum(tokens)
    start = len(tokens) - 1
    held = tokens[start]
    while start > 0 and held < need:
        start -= 1
        held += tokens[start]
    return start


def _calls_by_id(history: Sequence[IContent]) -> dict[str, ToolCallBlock]:
    found: dict[str, ToolCallBlock] = {}
    for entry in history:
        for block in entry.blocks:
            if isinstance(block, ToolCallBlock):
                found.setdefault(block.id, block)
    return found


def _summarize(block: Block, call_of: Callable[[str], ToolCallBlock | None]) -> Block:
    if isinstance(block, ToolResponseBlock):
        return summarize_response(block, call_of(block.call_id))
    return block
