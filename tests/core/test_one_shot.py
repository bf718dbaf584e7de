"""OneShotStrategy: summarize everything but the recent tail in one summarizer call."""

from __future__ import annotations

import pytest

from hdcontext.core.compression import llm_request
from hdcontext.core.compression.one_shot import ACKNOWLEDGMENT, OneShotStrategy
from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.compression.types import (
    CompressionError,
    StrategyTrigger,
    SummarizeRequest,
    SummarizerError,
    can_optimize,
)
from hdcontext.core.content import IContent, ToolCallBlock, ToolResponseBlock

from .strategy_builders import (
    SNAPSHOT,
    RecordingSummarizer,
    ai,
    call,
    chat,
    ctx,
    human,
    response,
    texts,
    todo,
)

strategy = OneShotStrategy()
POINTER = "Full pre-compression transcript available at: "


def test_req_hd_001_3_declares_threshold_trigger_085() -> None:
    assert strategy.name == "one-shot"
    assert strategy.requires_llm is True
    assert strategy.trigger == StrategyTrigger(mode="threshold", default_threshold=0.85)


def test_req_hd_001_4_does_not_optimize() -> None:
    assert not can_optimize(strategy)


async def test_summarizes_the_head_and_keeps_the_tail() -> None:
    history = chat(20)
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer, prompt="PROMPT"))

    # split = floor(20 * 0.7) = 14
    out = result.new_history
    assert out[0].speaker == "human" and texts(out[0]) == SNAPSHOT
    assert out[1].speaker == "ai" and texts(out[1]) == ACKNOWLEDGMENT
    assert out[2:] == tuple(history[14:])
    assert all(a is b for a, b in zip(out[2:], history[14:], strict=True))
    assert result.llm_call_made is True
    assert result.summarized == 14

    request = summarizer.request
    assert request.strategy == "one-shot"
    assert request.prompt == "PROMPT"
    assert request.messages[:14] == tuple(history[:14])
    assert len(request.messages) == 15
    assert request.messages[-1].speaker == "human"
    assert texts(request.messages[-1]) == llm_request.TRIGGER_INSTRUCTION


async def test_preserve_threshold_sets_the_split() -> None:
    summarizer = RecordingSummarizer()
    history = chat(10)
    result = await strategy.compress(ctx(history, summarizer=summarizer, preserve_threshold=0.5))
    assert result.new_history[2:] == tuple(history[5:])
    assert result.summarized == 5


async def test_too_small_head_is_left_alone_without_a_call() -> None:
    history = chat(5)  # split = floor(3.5) = 3
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer))
    assert result.new_history == tuple(history)
    assert result.llm_call_made is False
    assert summarizer.requests == []


async def test_split_moves_back_so_the_tail_keeps_a_boundary_pair() -> None:
    history = chat(20)
    history[13], history[14] = call("a"), response("a")
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer))
    assert result.new_history[2:] == tuple(history[13:])
    assert result.summarized == 13
    assert pairing_problems(result.new_history) <= pairing_problems(history)


async def test_split_moved_back_rechecks_the_minimum_head() -> None:
    history = [human("a"), ai("b"), human("c"), call("x"), response("x"), ai("d")]
    # split = floor(6 * 0.7) = 4 splits x; back to 3 leaves too small a head.
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer))
    assert result.new_history == tuple(history)
    assert summarizer.requests == []


async def test_request_is_provider_safe() -> None:
    history: list[IContent] = [human("task")]
    for i in range(9):
        history += [call(f"c{i}"), response(f"c{i}", result={"lines": i})]
    history.append(ai("done"))
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer))
    for message in summarizer.request.messages:
        assert message.speaker != "tool"
        assert not any(isinstance(b, ToolCallBlock | ToolResponseBlock) for b in message.blocks)
    assert pairing_problems(result.new_history) <= pairing_problems(history)


async def test_req_hd_011_3_active_todos_are_listed_before_the_trigger() -> None:
    todos = (todo("1", "Port the CLI", "in_progress"), todo("2", "Old work", "cancelled"))
    summarizer = RecordingSummarizer()
    await strategy.compress(ctx(chat(20), summarizer=summarizer, active_todos=todos))
    messages = summarizer.request.messages
    assert texts(messages[-1]) == llm_request.TRIGGER_INSTRUCTION
    assert texts(messages[-2]).endswith("\n\n- [IN_PROGRESS] Port the CLI")
    assert "Old work" not in texts(messages[-2])


async def test_req_hd_012_2_summary_ends_with_the_transcript_pointer() -> None:
    result = await strategy.compress(
        ctx(chat(20), summarizer=RecordingSummarizer(), transcript_path="/x/t.jsonl")
    )
    assert texts(result.new_history[0]).splitlines()[-1] == POINTER + "/x/t.jsonl"


@pytest.mark.parametrize("answer", ["", "  "])
async def test_req_hd_013_4_empty_summary_raises(answer: str) -> None:
    with pytest.raises(CompressionError):
        await strategy.compress(ctx(chat(20), summarizer=RecordingSummarizer(answer)))


async def test_req_hd_013_4_missing_summarizer_raises() -> None:
    with pytest.raises(SummarizerError, match="no summarizer configured"):
        await strategy.compress(ctx(chat(20)))


async def test_req_hd_013_4_summarizer_errors_propagate_unchanged() -> None:
    failure = TimeoutError("model timed out")

    async def failing(request: SummarizeRequest) -> str:
        raise failure

    with pytest.raises(TimeoutError) as info:
        await strategy.compress(ctx(chat(20), summarizer=failing))
    assert info.value is failure
