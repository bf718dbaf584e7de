"""A session's compression: its strategy run over its history near the limit.

The session says when to compress; this runs it. The high-density strategy runs as the
history stores it, reading only what changed since its last run (``incremental.py``); an LLM
strategy is handed the history, the transcript written where the agent can read it, the active
todos and the session's summarizer. Either way ``history/thinking.py``'s rules hold: no
compression while the latest turn's bound thinking may be neither kept nor dropped (rule 1),
the entries of a turn still calling tools are kept, and the turns kept after what changed lose
their bound thinking (rule 2).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from ..density.types import DensityResult
from ..history.history import History
from ..history.stored import Blob
from ..history.thinking import Turn, compression_waits, first_change, keeps, latest_turn, unbound
from ..settings import Resolved, Settings
from ..tools.todos import Todo
from .high_density import HighDensityStrategy
from .incremental import Summaries
from .types import CompressionContext, CompressionStrategy, SummarizeRequest, target_tokens

SessionSummarizer = Callable[[SummarizeRequest, Settings], Awaitable[str]]
"""Writes a summary for an LLM strategy, with the session's settings of the moment (which
say which provider to ask)."""

TranscriptExporter = Callable[[Sequence[Blob]], Awaitable[str | None]]
"""Writes the whole transcript (each entry's stored JSON) where the agent can read it; its path."""


class Compressor:
    """One session's compression, run after run (what the high-density runs learnt is kept)."""

    def __init__(
        self,
        summarizer: SessionSummarizer | None,
        prompt: str,
        export_transcript: TranscriptExporter | None,
    ) -> None:
        self.summaries = Summaries()
        self._summarizer = summarizer
        self._prompt = prompt
        self._export_transcript = export_transcript

    async def compress(
        self,
        strategy: CompressionStrategy,
        r: Resolved,
        view: History,
        bound: bool,
        todos: Callable[[], Sequence[Todo]],
    ) -> tuple[bool, str | None]:
        """Compress ``view`` with ``strategy``, for a model whose thinking is ``bound`` or not:
        whether the history changed, and where the transcript was written (an LLM strategy's,
        when the session can export it). ``todos``: the active todos, asked for only by an LLM
        strategy."""
        turn = latest_turn(view.raw_json)
        if compression_waits(turn, bound):  # thinking.py, rule 1: it waits for the turn's end
            return False, None
        if isinstance(strategy, HighDensityStrategy):
            return self._cut_old_output(r, view, turn, bound), None
        llm = strategy.requires_llm
        transcript_path: str | None = None
        if llm and self._export_transcript is not None:
            transcript_path = await self._export_transcript(view.transcript_json)
        current = list(view.raw)  # parsed once, for the strategy to read
        summarizer = self._summarizer
        values = r.values

        async def summarize(request: SummarizeRequest) -> str:
            assert summarizer is not None
            return await summarizer(request, values)

        context = CompressionContext(
            history=current,
            tokens=view.tokens,
            context_limit=values.context_limit,
            threshold=r.threshold,
            preserve_threshold=values.preserve_threshold,
            top_preserve_threshold=values.top_preserve_threshold,
            prompt=self._prompt if llm else "",
            active_todos=todos() if llm else (),
            transcript_path=transcript_path,
            summarizer=summarize if summarizer is not None else None,
        )
        result = await strategy.compress(context)
        new = list(result.new_history)
        if new == current or not keeps(turn, current, new):
            return False, transcript_path
        view.replace_all(new, parsed=current)
        changed = first_change(current, new) if bound else None
        if changed is not None:  # the turns kept after what changed lose their thinking
            stripped = unbound(view.raw_json, changed)
            if stripped:
                view.apply_density_result(DensityResult((), stripped))
        return True, transcript_path

    def _cut_old_output(self, r: Resolved, view: History, turn: Turn | None, bound: bool) -> bool:
        """The high-density strategy's ``compress`` as the history stores it: what it
        does to ``list(raw)``, reading only the entries changed since its last run
        (``compression/incremental.py``); a turn still calling tools keeps its entries.
        Whether it changed anything."""
        values = r.values
        changes, stop = self.summaries.run(
            view.raw_json,
            view.tokens,
            target_tokens(r.threshold, values.context_limit),
            values.preserve_threshold,
        )
        if not changes or (turn is not None and turn.calls and turn.touched_by(changes)):
            self.summaries.settle(view.raw_json, min(changes, default=stop))
            return False
        if bound:  # the turns kept after what changed lose their thinking
            changes = unbound(view.raw_json, min(changes), (), changes)
        # Rewritten in place, as a density edit's replacement: each entry keeps its key, and
        # the density engine and the store take in only these.
        view.apply_density_result(DensityResult((), changes))
        self.summaries.settle(view.raw_json, stop)
        return True
