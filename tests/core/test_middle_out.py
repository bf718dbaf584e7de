"""MiddleOutStrategy: keep head and tail, summarize the middle through the summarizer."""

from __future__ import annotations

import json

import pytest

from hdcontext.core.compression import llm_request
from hdcontext.core.compression.middle_out import MiddleOutStrategy
from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.compression.prompts import COMPRESSION_PROMPT
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
    media,
    response,
    texts,
    todo,
)

strategy = MiddleOutStrategy()
POINTER = "Full pre-compression transcript available at: "
DIRECTIVE = "Understood. Continuing with the current task."


def test_req_hd_001_3_declares_threshold_trigger_085() -> None:
    assert strategy.name == "middle-out"
    assert strategy.requires_llm is True
    assert strategy.trigger == StrategyTrigger(mode="threshold", default_threshold=0.85)


def test_req_hd_001_4_does_not_optimize() -> None:
    assert not can_optimize(strategy)


async def test_splits_by_entry_count_and_summarizes_the_middle() -> None:
    history = chat(20)  # last human turn (18) is in the tail
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer, prompt="PROMPT"))

    # top = ceil(20 * 0.2) = 4, bottom = floor(20 * 0.7) = 14
    out = result.new_history
    assert out[:4] == tuple(history[:4])
    assert all(a is b for a, b in zip(out[:4], history[:4], strict=True))
    assert out[4].speaker == "human" and texts(out[4]) == SNAPSHOT
    assert out[5].speaker == "ai" and texts(out[5]).startswith(DIRECTIVE)
    assert out[6:] == tuple(history[14:])
    assert all(a is b for a, b in zip(out[6:], history[14:], strict=True))
    assert result.llm_call_made is True
    assert result.summarized == 10

    request = summarizer.request
    assert request.strategy == "middle-out"
    assert request.prompt == "PROMPT"
    assert request.messages[:10] == tuple(history[4:14])
    assert len(request.messages) == 11
    assert texts(request.messages[-1]) == llm_request.TRIGGER_INSTRUCTION
    assert request.messages[-1].speaker == "human"


async def test_too_small_middle_is_left_alone_without_a_call() -> None:
    history = chat(8)  # top = 2, bottom = 5: three in the middle
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer))
    assert result.new_history == tuple(history)
    assert result.llm_call_made is False
    assert result.summarized == 0
    assert summarizer.requests == []


async def test_too_small_middle_needs_no_summarizer() -> None:
    result = await strategy.compress(ctx(chat(8)))
    assert result.new_history == tuple(chat(8))


async def test_cuts_move_to_keep_tool_pairs_whole_and_verbatim() -> None:
    history = chat(20)
    # A pair across each boundary: 3|4 (top = 4) and 13|14 (bottom = 14).
    history[3], history[4] = call("a"), response("a")
    history[13], history[14] = call("b"), response("b")
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer))

    out = result.new_history
    # The head grows forward to 5, the tail grows backward to 13.
    assert out[:5] == tuple(history[:5])
    assert out[7:] == tuple(history[13:])
    assert result.summarized == 8
    assert pairing_problems(out) <= pairing_problems(history)
    assert pairing_problems(out) == set()


async def test_request_has_no_tool_blocks_and_no_tool_speaker() -> None:
    history = chat(20)
    history[6] = call("c1", parameters={"file_path": "/a.py", "limit": 5})
    history[7] = response("c1", result={"content": "x = 1"})
    history[8] = call("c2", name="run_shell_command", parameters={"command": "make"})
    history[9] = response("c2", name="run_shell_command", result="boom", error="exit 2")
    history[10] = media("image/png")
    summarizer = RecordingSummarizer()
    await strategy.compress(ctx(history, summarizer=summarizer))

    messages = summarizer.request.messages
    for message in messages:
        assert message.speaker in ("human", "ai")
        assert not any(isinstance(b, ToolCallBlock | ToolResponseBlock) for b in message.blocks)
    assert pairing_problems(messages) == set()
    by_text = [texts(m) for m in messages]
    params = json.dumps({"file_path": "/a.py", "limit": 5})
    assert by_text[2] == f"[Tool Call: read_file]\nParameters: {params}"
    assert messages[2].speaker == "ai"
    assert by_text[3] == '[Tool Result: read_file]\nResult: {"content": "x = 1"}'
    assert messages[3].speaker == "human"
    assert by_text[5] == "[Tool Result: run_shell_command]\nError: exit 2\nResult: boom"
    assert by_text[6] == "look at this\n[Attached image/png]"


async def test_short_last_user_request_moves_into_the_tail() -> None:
    history = [human("start")] + [ai(f"a{i}") for i in range(1, 20)]
    history[10] = human("please also fix the tests")  # short, inside [4, 14)
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer))

    out = result.new_history
    assert out[:4] == tuple(history[:4])
    assert out[6:] == tuple(history[10:])
    assert result.summarized == 6
    assert summarizer.request.messages[:6] == tuple(history[4:10])
    assert '"please also fix the tests"' in texts(out[5])


async def test_short_last_request_move_rechecks_minimum_middle() -> None:
    history = [human("start")] + [ai(f"a{i}") for i in range(1, 20)]
    history[6] = human("short")  # moving the tail to 6 leaves two in the middle
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer))
    assert result.new_history == tuple(history)
    assert summarizer.requests == []


async def test_long_last_user_request_stays_with_a_faithful_restatement_note() -> None:
    long_request = "Refactor the parser. " + "Keep every public name stable. " * 120
    history = [human("start")] + [ai(f"a{i}") for i in range(1, 20)]
    history[10] = human(long_request)
    context = ctx(history, summarizer=(summarizer := RecordingSummarizer()))
    assert context.tokens[10] >= 500
    result = await strategy.compress(context)

    assert result.summarized == 10
    messages = summarizer.request.messages
    assert messages[:10] == tuple(history[4:14])
    note = texts(messages[-2])
    assert messages[-2].speaker == "human"
    assert "restate that request faithfully" in note
    assert "Refactor the parser." in note
    assert texts(messages[-1]) == llm_request.TRIGGER_INSTRUCTION
    directive = texts(result.new_history[5])
    quoted = directive.split('Latest user request: "')[1].rsplit('"', 1)[0]
    assert quoted.startswith("Refactor the parser.")
    assert len(quoted) <= 200


async def test_req_hd_011_3_active_todos_are_listed_before_the_trigger() -> None:
    todos = (
        todo("1", "Write the parser", "completed"),
        todo("2", "Fix the tokenizer", "in_progress", todo("2.1", "handle tabs")),
        todo("3", "Update docs", "pending"),
    )
    history = chat(20)
    summarizer = RecordingSummarizer()
    result = await strategy.compress(ctx(history, summarizer=summarizer, active_todos=todos))

    messages = summarizer.request.messages
    assert texts(messages[-1]) == llm_request.TRIGGER_INSTRUCTION
    todo_text = texts(messages[-2])
    assert messages[-2].speaker == "human"
    assert todo_text.endswith(
        "\n\n- [IN_PROGRESS] Fix the tokenizer\n  - handle tabs\n- [PENDING] Update docs"
    )
    assert "Write the parser" not in todo_text
    assert "explain the context" in todo_text
    assert "Current todo: Fix the tokenizer." in texts(result.new_history[5])


async def test_no_todo_message_when_no_todo_is_active() -> None:
    summarizer = RecordingSummarizer()
    todos = (todo("1", "done", "completed"),)
    await strategy.compress(ctx(chat(20), summarizer=summarizer, active_todos=todos))
    assert len(summarizer.request.messages) == 11


async def test_req_hd_012_2_summary_ends_with_the_transcript_pointer() -> None:
    summarizer = RecordingSummarizer()
    result = await strategy.compress(
        ctx(chat(20), summarizer=summarizer, transcript_path="/data/s1.jsonl")
    )
    summary = texts(result.new_history[4])
    assert summary.startswith(SNAPSHOT)
    assert summary.splitlines()[-1] == POINTER + "/data/s1.jsonl"


async def test_no_transcript_pointer_without_a_path() -> None:
    result = await strategy.compress(ctx(chat(20), summarizer=RecordingSummarizer()))
    assert POINTER not in texts(result.new_history[4])


async def test_previous_snapshot_in_the_middle_asks_to_integrate_it() -> None:
    history = chat(20)
    history[6] = human("<state_snapshot><overall_goal>old</overall_goal></state_snapshot>")
    summarizer = RecordingSummarizer()
    await strategy.compress(ctx(history, summarizer=summarizer))
    trigger = texts(summarizer.request.messages[-1])
    assert trigger.startswith(llm_request.TRIGGER_INSTRUCTION)
    assert "integrate" in trigger


@pytest.mark.parametrize("answer", ["", "   \n\t"])
async def test_req_hd_013_4_empty_summary_raises(answer: str) -> None:
    with pytest.raises(CompressionError, match="empty summary"):
        await strategy.compress(ctx(chat(20), summarizer=RecordingSummarizer(answer)))


async def test_req_hd_013_4_missing_summarizer_raises() -> None:
    with pytest.raises(SummarizerError) as info:
        await strategy.compress(ctx(chat(20)))
    assert info.value.provider == "none"
    assert info.value.reason == "no summarizer configured"


async def test_req_hd_013_4_summarizer_errors_propagate_unchanged() -> None:
    failure = SummarizerError("client", "the editor has no model")

    async def failing(request: SummarizeRequest) -> str:
        raise failure

    with pytest.raises(SummarizerError) as info:
        await strategy.compress(ctx(chat(20), summarizer=failing))
    assert info.value is failure


async def test_empty_prompt_falls_back_to_the_built_in_prompt() -> None:
    summarizer = RecordingSummarizer()
    await strategy.compress(ctx(chat(20), summarizer=summarizer, prompt=""))
    assert summarizer.request.prompt == COMPRESSION_PROMPT


async def test_private_scratchpad_is_left_out_of_the_summary() -> None:
    answer = "<scratchpad>thinking out loud</scratchpad>\n" + SNAPSHOT
    result = await strategy.compress(ctx(chat(20), summarizer=RecordingSummarizer(answer)))
    assert texts(result.new_history[4]) == SNAPSHOT


async def test_output_keeps_preexisting_pairs_valid_on_a_tool_heavy_history() -> None:
    history: list[IContent] = [human("task")]
    for i in range(15):
        history += [call(f"c{i}"), response(f"c{i}")]
    history.append(ai("done"))
    result = await strategy.compress(ctx(history, summarizer=RecordingSummarizer()))
    assert result.llm_call_made
    assert pairing_problems(result.new_history) <= pairing_problems(history)
    # 32 entries: top = ceil(6.4) = 7 (before a call: valid), bottom = floor(22.4) = 22
    # lands between c10's call and response, so the tail grows back to 21.
    assert result.new_history[:7] == tuple(history[:7])
    assert result.new_history[9:] == tuple(history[21:])
    assert result.summarized == 14
