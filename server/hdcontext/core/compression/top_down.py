"""Top-down truncation: drop the oldest entries until the history fits, no model involved.

It is the strategy of last resort when no model may be asked: cheap, predictable, and lossy
in the working view only (the transcript keeps everything). It aims below the trigger, at
``target_tokens``, so the next few turns do not trigger it again at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate

from ..settings import DEFAULT_THRESHOLDS
from .pairs import cut_at_or_after, cut_at_or_before, valid_cuts
from .types import CompressionContext, CompressionResult, StrategyTrigger

MIN_KEEP = 2
"""Entries always kept (fewer when the history is shorter): the latest exchange."""


class TopDownTruncationStrategy:
    name = "top-down-truncation"
    requires_llm = False
    trigger = StrategyTrigger(
        mode="threshold", default_threshold=DEFAULT_THRESHOLDS["top-down-truncation"]
    )

    async def compress(self, context: CompressionContext) -> CompressionResult:
        history = context.history
        tokens = context.tokens
        if len(tokens) != len(history):
            raise ValueError(
                f"top-down-truncation: {len(tokens)} token counts for {len(history)} entries"
            )
        target = context.target_tokens
        if sum(tokens) <= target:
            return CompressionResult(new_history=tuple(history))

        cut = self._cut(tokens, target, valid_cuts(history))
        return CompressionResult(new_history=tuple(history[cut:]))

    @staticmethod
    def _cut(tokens: Sequence[int], target: int, valid: Sequence[bool]) -> int:
        """The first entry to keep: the smallest cut whose remainder fits the target, moved
        forward to the next cut that splits no tool pair. When that would keep fewer than
        ``MIN_KEEP`` entries, the last valid cut before it wins: a history over the target is
        better than one that has lost its latest exchange or a tool call's response."""
        n = len(tokens)
        latest = n - min(MIN_KEEP, n)
        total = sum(tokens)
        cut = latest
        for k, dropped in enumerate(accumulate(tokens, initial=0)):
            if k > latest:
                break
            if total - dropped <= target:
                cut = k
                break
        forward = cut_at_or_after(valid, cut)
        return forward if forward <= latest else cut_at_or_before(valid, cut)
