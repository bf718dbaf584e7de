"""TopDownTruncationStrategy: drop the oldest entries, never a tool pair's half, no model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.compression.top_down import TopDownTruncationStrategy
from hdcontext.core.compression.types import StrategyTrigger, can_optimize
from hdcontext.core.content import IContent
from tests.examples import examples

from .strategy_builders import RecordingSummarizer, ai, call, chat, ctx, human, response, todo

strategy = TopDownTruncationStrategy()


def test_req_hd_001_3_declares_threshold_trigger_085() -> None:
    assert strategy.name == "top-down-truncation"
    assert strategy.requires_llm is False
    assert strategy.trigger == StrategyTrigger(mode="threshold", default_threshold=0.85)


def test_req_hd_001_4_does_not_optimize() -> None:
    assert not can_optimize(strategy)


async def test_at_or_under_target_returns_history_unchanged() -> None:
    history = chat(6)
    # target = int(0.85 * 1000 * 0.6) = 510
    context = ctx(history, tokens=[85] * 6)
    assert context.target_tokens == 510
    result = await strategy.compress(context)
    assert result.new_history == tuple(history)
    assert all(a is b for a, b in zip(result.new_history, history, strict=True))
    assert result.llm_call_made is False


async def test_drops_fewest_oldest_entries_to_reach_target_using_context_tokens() -> None:
    history = chat(10)
    # The real counts are tiny; the strategy must go by the counts it is given.
    tokens = [100] * 10
    result = await strategy.compress(ctx(history, tokens=tokens))
    # 1000 > 510; dropping 5 leaves 500 <= 510, dropping 4 leaves 600.
    assert result.new_history == tuple(history[5:])
    assert all(a is b for a, b in zip(result.new_history, history[5:], strict=True))
    assert result.llm_call_made is False
    assert result.summarized == 0


async def test_remaining_may_equal_target() -> None:
    history = chat(4)
    result = await strategy.compress(ctx(history, tokens=[10, 200, 200, 110]))
    # total 520 > 510; without the first entry, exactly 510 remain.
    assert result.new_history == tuple(history[1:])


async def test_cut_moves_forward_past_a_tool_pair() -> None:
    history = [human("go"), ai("ok"), call("c1"), response("c1"), human("next"), ai("done")]
    # Dropping 3 entries would leave 300 <= 510 but cut between c1's call and its response.
    result = await strategy.compress(ctx(history, tokens=[100, 100, 100, 200, 150, 150]))
    assert result.new_history == tuple(history[4:])
    assert pairing_problems(result.new_history) <= pairing_problems(history)


async def test_keeps_at_least_two_entries_even_over_target() -> None:
    history = chat(5)
    result = await strategy.compress(ctx(history, tokens=[1000] * 5))
    assert result.new_history == tuple(history[3:])


async def test_keeps_the_single_entry_of_a_one_entry_history() -> None:
    history = [human("huge")]
    result = await strategy.compress(ctx(history, tokens=[5000]))
    assert result.new_history == tuple(history)


async def test_when_forward_cut_would_keep_too_few_uses_the_last_valid_cut_before() -> None:
    history = [human("a"), human("b"), call("c1"), response("c1"), human("c")]
    # The minimum-keep cut (3) splits c1; forward (4) keeps one entry, so back to 2.
    result = await strategy.compress(ctx(history, tokens=[1000] * 5))
    assert result.new_history == tuple(history[2:])
    assert pairing_problems(result.new_history) == set()


async def test_req_hd_011_4_ignores_todos_and_summarizer() -> None:
    summarizer = RecordingSummarizer()
    history = chat(10)
    context = ctx(
        history,
        tokens=[100] * 10,
        summarizer=summarizer,
        active_todos=(todo("1", "x"),),
        transcript_path="/t.jsonl",
    )
    result = await strategy.compress(context)
    assert summarizer.requests == []
    assert result.new_history == tuple(history[5:])


async def test_token_counts_must_match_entries() -> None:
    with pytest.raises(ValueError, match="3 token counts for 2 entries"):
        await strategy.compress(ctx(chat(2), tokens=[1, 2, 3]))


# Histories of text turns and call/response exchanges, with arbitrary token counts.
_unit = st.one_of(
    st.just("text"),
    st.just("pair"),
    st.just("split_pair"),  # a call, a text turn, then the response
)


def _build(units: list[str]) -> list[IContent]:
    out: list[IContent] = []
    for i, kind in enumerate(units):
        if kind == "text":
            out.append(human(f"t{i}") if i % 2 else ai(f"t{i}"))
        elif kind == "pair":
            out += [call(f"c{i}"), response(f"c{i}")]
        else:
            out += [call(f"c{i}"), ai(f"between {i}"), response(f"c{i}")]
    return out


@settings(max_examples=examples(200), deadline=None)
@given(
    units=st.lists(_unit, min_size=0, max_size=12),
    sizes=st.lists(st.integers(min_value=0, max_value=400), min_size=36, max_size=36),
)
async def test_property_never_splits_pairs_and_reaches_target_when_possible(
    units: list[str], sizes: list[int]
) -> None:
    history = _build(units)
    tokens = sizes[: len(history)]
    context = ctx(history, tokens=tokens)
    out = (await strategy.compress(context)).new_history
    cut = len(history) - len(out)

    assert out == tuple(history[cut:])
    assert pairing_problems(out) <= pairing_problems(history)
    assert len(out) >= min(2, len(history))
    if sum(tokens[cut:]) > context.target_tokens:
        # Over target only when every cut that reaches it keeps too few or splits a pair.
        for k in range(cut + 1, len(history) - min(2, len(history)) + 1):
            rest = history[k:]
            assert pairing_problems(rest) - pairing_problems(history), k
    else:
        # And never more than needed: keeping one more entry would not have fit, or split.
        if cut > 0:
            longer = history[cut - 1 :]
            assert sum(tokens[cut - 1 :]) > context.target_tokens or pairing_problems(
                longer
            ) - pairing_problems(history)
