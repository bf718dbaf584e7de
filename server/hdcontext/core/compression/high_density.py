"""The high-density strategy (REQ-HD-004, 005-008): dense history without a model.

``optimize`` runs after every change and takes out what is provably dead weight (stale reads,
repeated ``@file`` inclusions, and, when asked, old tool output). ``compress`` runs near the
context limit and, still without a model, cuts tool output outside the recent tail to one
line each until the history fits the target.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..content import Block, IContent, ToolCallBlock, ToolResponseBlock
from ..density.optimize import optimize
from ..density.types import DensityConfig, DensityResult
from ..settings import DEFAULT_THRESHOLDS
from ..tokens import count_entry
from .tool_summary import summarize_response
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
    running = sum(context.tokens)
    target = context.target_tokens
    calls = _calls_by_id(history)
    out = list(history)
    summarized = 0
    for i in range(_tail_start(context.tokens, context.preserve_threshold)):
        if running <= target:
            break
        entry = history[i]
        blocks = [_summarize(block, calls) for block in entry.blocks]
        if all(new is old for new, old in zip(blocks, entry.blocks, strict=True)):
            continue
        candidate = entry.with_blocks(blocks)
        saved = context.tokens[i] - count_entry(candidate)
        if saved <= 0:
            continue  # a short output is cheaper than its summary: keep the real thing
        out[i] = candidate
        running -= saved
        summarized += 1
    return CompressionResult(new_history=tuple(out), summarized=summarized)


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


def _summarize(block: Block, calls: dict[str, ToolCallBlock]) -> Block:
    if isinstance(block, ToolResponseBlock):
        return summarize_response(block, calls.get(block.call_id))
    return block
