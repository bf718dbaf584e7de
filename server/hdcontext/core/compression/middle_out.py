"""Middle-out: keep the opening and the recent tail verbatim, summarize what lies between.

The opening usually states the task and the tail is the work in progress; the middle is the
path from one to the other, which a snapshot can tell in far fewer tokens. Splits are by entry
count (as the reference strategy does), then moved so that no tool call is cut from its
response, and the user's latest request is kept verbatim when it is short enough to afford.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..content import IContent
from ..settings import DEFAULT_THRESHOLDS
from . import llm_request
from .pairs import cut_at_or_after, cut_at_or_before, valid_cuts
from .types import CompressionContext, CompressionResult, StrategyTrigger

MIN_MIDDLE = 4
"""Fewer entries than this are not worth a model call."""

SHORT_REQUEST_TOKENS = 500
"""A last user request under this many tokens moves to the kept tail instead of the summary."""


class MiddleOutStrategy:
    name = "middle-out"
    requires_llm = True
    trigger = StrategyTrigger(mode="threshold", default_threshold=DEFAULT_THRESHOLDS["middle-out"])

    async def compress(self, context: CompressionContext) -> CompressionResult:
        history = context.history
        split = self._split(context)
        if split is None:
            return CompressionResult(new_history=tuple(history))
        top, bottom, long_request = split
        middle = history[top:bottom]

        notes = [llm_request.last_request_note(long_request)] if long_request else []
        messages = llm_request.request_messages(middle, context.active_todos, notes)
        summary = await llm_request.summarize(context, self.name, messages)

        last = llm_request.last_user_request(history)
        new_history = (
            *history[:top],
            llm_request.summary_entry(summary, context.transcript_path),
            llm_request.continuation_entry(
                context.active_todos, history[last] if last is not None else None
            ),
            *history[bottom:],
        )
        return CompressionResult(
            new_history=new_history, llm_call_made=True, summarized=len(middle)
        )

    def _split(self, context: CompressionContext) -> tuple[int, int, IContent | None] | None:
        """(end of the kept head, start of the kept tail, a long last request left in the
        middle), or None when the middle is too small to summarize."""
        history = context.history
        n = len(history)
        top = math.ceil(n * context.top_preserve_threshold)
        bottom = math.floor(n * (1 - context.preserve_threshold))
        if bottom - top < MIN_MIDDLE:
            return None

        # Each cut moves towards keeping more verbatim: the head grows forward and the tail
        # grows backward, so a pair on a boundary is kept whole rather than summarized away.
        valid = valid_cuts(history)
        top = cut_at_or_after(valid, top)
        bottom = cut_at_or_before(valid, bottom)
        if bottom - top < MIN_MIDDLE:
            return None

        bottom, long_request = self._keep_last_request(history, context.tokens, top, bottom, valid)
        if bottom - top < MIN_MIDDLE:
            return None
        return top, bottom, long_request

    @staticmethod
    def _keep_last_request(
        history: Sequence[IContent],
        tokens: Sequence[int],
        top: int,
        bottom: int,
        valid: Sequence[bool],
    ) -> tuple[int, IContent | None]:
        """Losing the user's latest words to a paraphrase is the costliest loss a summary can
        make, so a short request moves into the tail (with what follows it) and a long one,
        too big to keep, comes with a note asking the model to restate it faithfully."""
        last = llm_request.last_user_request(history)
        if last is None or not top <= last < bottom:
            return bottom, None
        if tokens[last] < SHORT_REQUEST_TOKENS:
            # At or before ``last``, and ``top`` is itself valid, so never above the head.
            return cut_at_or_before(valid, last), None
        return bottom, history[last]
