"""The contract between the session and the strategies (REQ-HD-001, REQ-HD-011, REQ-HD-012).

Strategies are pure: ``optimize`` is a synchronous function of (raw history, config) that
returns index edits; ``compress`` is a function of a CompressionContext that returns a new
history. The only effect a strategy may have is the awaited summarizer call of the LLM
strategies. Everything a strategy needs (settings, token counts, prompt text, todos) arrives
in its arguments, so tests drive them with plain lists.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeAlias

from ..content import IContent
from ..density.types import DensityConfig, DensityResult
from ..tools.todos import Todo

TriggerMode: TypeAlias = Literal["threshold", "continuous"]


@dataclass(frozen=True)
class StrategyTrigger:
    """REQ-HD-001.1: when the orchestrator runs a strategy."""

    mode: TriggerMode
    default_threshold: float


@dataclass(frozen=True)
class SummarizeRequest:
    """What an LLM strategy asks the model: PROTOCOL.md ``history/summarize`` params."""

    strategy: str
    prompt: str
    messages: tuple[IContent, ...]


Summarizer: TypeAlias = Callable[[SummarizeRequest], Awaitable[str]]


class SummarizerError(RuntimeError):
    """No summary could be had: the provider tried and why it failed (-32002 on the wire)."""

    def __init__(self, provider: str, reason: str) -> None:
        self.provider = provider
        self.reason = reason
        super().__init__(f"summarizer '{provider}' failed: {reason}")


class CompressionError(RuntimeError):
    """A strategy could not compress (e.g. the model returned an empty summary)."""


def target_tokens(threshold: float, context_limit: int) -> int:
    """REQ-HD-008.6: threshold x limit x 0.6, headroom before the next trigger."""
    return int(threshold * context_limit * 0.6)


@dataclass(frozen=True)
class CompressionContext:
    """Everything ``compress`` may use. ``tokens[i]`` is the count of ``history[i]``."""

    history: Sequence[IContent]
    tokens: Sequence[int]
    context_limit: int
    threshold: float
    preserve_threshold: float = 0.3
    top_preserve_threshold: float = 0.2
    prompt: str = ""
    active_todos: Sequence[Todo] = ()
    transcript_path: str | None = None
    summarizer: Summarizer | None = None

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)

    @property
    def target_tokens(self) -> int:
        return target_tokens(self.threshold, self.context_limit)


@dataclass(frozen=True)
class CompressionResult:
    new_history: tuple[IContent, ...]
    llm_call_made: bool = False
    summarized: int = 0
    """Entries folded into a summary or whose tool output was cut to one line."""


class CompressionStrategy(Protocol):
    """REQ-HD-001: every strategy names itself, says whether it needs a model, and when it runs."""

    @property
    def name(self) -> str: ...

    @property
    def requires_llm(self) -> bool: ...

    @property
    def trigger(self) -> StrategyTrigger: ...

    async def compress(self, context: CompressionContext) -> CompressionResult: ...


class OptimizingStrategy(CompressionStrategy, Protocol):
    """A continuous strategy: also has the synchronous ``optimize`` (REQ-HD-001.2)."""

    def optimize(self, history: Sequence[IContent], config: DensityConfig) -> DensityResult: ...


def can_optimize(strategy: CompressionStrategy) -> bool:
    return callable(getattr(strategy, "optimize", None))
