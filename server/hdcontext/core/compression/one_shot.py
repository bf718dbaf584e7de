"""One-shot: summarize everything but the recent tail in a single model call.

Where middle-out keeps the opening verbatim, one-shot folds it into the snapshot too, which
frees more room at the price of the exact opening words. The summary becomes the new first
turn, followed by a short acknowledgment so the tail continues a normal exchange.
"""

from __future__ import annotations

import math

from ..content import text_entry
from ..settings import DEFAULT_THRESHOLDS
from . import llm_request
from .pairs import cut_at_or_before, valid_cuts
from .types import CompressionContext, CompressionResult, StrategyTrigger

MIN_HEAD = 4
"""Fewer entries than this are not worth a model call."""

ACKNOWLEDGMENT = "Got it. Thanks for the additional context!"


class OneShotStrategy:
    name = "one-shot"
    requires_llm = True
    trigger = StrategyTrigger(mode="threshold", default_threshold=DEFAULT_THRESHOLDS["one-shot"])

    async def compress(self, context: CompressionContext) -> CompressionResult:
        history = context.history
        split = self._split(context)
        if split is None:
            return CompressionResult(new_history=tuple(history))
        head = history[:split]

        messages = llm_request.request_messages(head, context.active_todos)
        summary = await llm_request.summarize(context, self.name, messages)

        new_history = (
            llm_request.summary_entry(summary, context.transcript_path),
            text_entry("ai", ACKNOWLEDGMENT),
            *history[split:],
        )
        return CompressionResult(new_history=new_history, llm_call_made=True, summarized=split)

    @staticmethod
    def _split(context: CompressionContext) -> int | None:
        """Where the kept tail starts, or None when the head is too small to summarize.

        A pair on the boundary moves backward, into the tail: the tail is the work in
        progress, and the user asked for at least ``preserve_threshold`` of it verbatim, so
        it may grow but never shrink. The head shrinks instead, and is checked again.
        """
        n = len(context.history)
        split = math.floor(n * (1 - context.preserve_threshold))
        if split < MIN_HEAD:
            return None
        split = cut_at_or_before(valid_cuts(context.history), split)
        return split if split >= MIN_HEAD else None
