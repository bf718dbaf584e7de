"""The high-density strategy: properties, optimize composition, compress (REQ-HD-004, 005-008)."""

from __future__ import annotations

import math

from hdcontext.core.compression.high_density import HighDensityStrategy
from hdcontext.core.compression.types import CompressionContext, StrategyTrigger
from hdcontext.core.content import IContent
from hdcontext.core.density.inclusions import omitted_note
from hdcontext.core.density.types import DensityConfig, DensityMetadata, DensityResult
from hdcontext.core.tokens import count_entry
from hdcontext.core.tools.summary import PRUNED_POINTER, summarize_response, summary_line

from .builders import (
    ai,
    ai_call,
    ai_text,
    call,
    human,
    inclusion,
    response,
    tool_result,
    tools,
)

READS = frozenset({"read_file", "read_many_files"})
WRITES = frozenset({"write_file", "replace"})


def config(**overrides: object) -> DensityConfig:
    base: dict[str, object] = {
        "workspace_root": "/w",
        "read_tools": READS,
        "write_tools": WRITES,
        "recency_pruning": True,
        "recency_retention": 2,
    }
    base.update(overrides)
    return DensityConfig(**base)  # type: ignore[arg-type]


def test_req_hd_004_3_strategy_properties() -> None:
    strategy = HighDensityStrategy()
    assert strategy.name == "high-density"
    assert strategy.requires_llm is False
    assert strategy.trigger == StrategyTrigger("continuous", 0.85)


# --- optimize ---------------------------------------------------------------------------


def mixed_history() -> list[IContent]:
    return [
        ai(call("r1", "read_file", {"file_path": "a.py"}), call("g1", "grep", {"pattern": "x"})),
        tools(response("r1", "read_file", "A"), response("g1", "grep", "G1")),
        ai_call("g2", "grep", {"pattern": "y"}),
        tool_result("g2", "grep", "G2"),
        ai_call("g3", "grep", {"pattern": "z"}),
        tool_result("g3", "grep", "G3"),
        ai_call("w1", "write_file", {"file_path": "/w/a.py"}),
        tool_result("w1", "write_file", "ok"),
        human(inclusion("a.py", "v1")),
        human(inclusion("/w/a.py", "v2")),
    ]


def test_req_hd_005_006_007_passes_compose_and_merge_replacements() -> None:
    result = HighDensityStrategy().optimize(mixed_history(), config())
    assert result == DensityResult(
        removals=(),
        replacements={
            0: ai(call("g1", "grep", {"pattern": "x"})),
            # read_write removed r1's response, then recency pointed g1's: one merged entry.
            1: tools(response("g1", "grep", PRUNED_POINTER)),
            8: human(omitted_note("a.py")),
        },
        metadata=DensityMetadata(
            read_write_pairs_pruned=2, file_deduplications_pruned=1, recency_pruned=1
        ),
    )


def test_req_hd_007_1_recency_does_not_count_reads_already_pruned() -> None:
    history = [
        ai_call("r1", "read_file", {"file_path": "/w/a.py"}),
        tool_result("r1", "read_file", "A"),
        ai_call("r2", "read_file", {"file_path": "/w/b.py"}),
        tool_result("r2", "read_file", "B"),
        ai_call("r3", "read_file", {"file_path": "/w/c.py"}),
        tool_result("r3", "read_file", "C"),
        ai_call("w1", "write_file", {"file_path": "/w/a.py"}),
        tool_result("w1", "write_file", "ok"),
    ]
    result = HighDensityStrategy().optimize(history, config())
    assert result.removals == (0, 1)
    assert result.replacements == {}
    assert result.metadata == DensityMetadata(read_write_pairs_pruned=2)


def test_req_hd_005_10_006_4_007_6_disabled_passes_do_nothing() -> None:
    strategy = HighDensityStrategy()
    history = mixed_history()
    off = config(read_write_pruning=False, file_dedupe=False, recency_pruning=False)
    assert strategy.optimize(history, off) == DensityResult()

    only_rw = strategy.optimize(history, config(file_dedupe=False, recency_pruning=False))
    assert set(only_rw.replacements) == {0, 1}
    assert only_rw.metadata == DensityMetadata(read_write_pairs_pruned=2)

    only_dedup = strategy.optimize(history, config(read_write_pruning=False, recency_pruning=False))
    assert set(only_dedup.replacements) == {8}
    assert only_dedup.metadata == DensityMetadata(file_deduplications_pruned=1)

    only_recency = strategy.optimize(history, config(read_write_pruning=False, file_dedupe=False))
    assert only_recency.replacements == {
        1: tools(response("r1", "read_file", "A"), response("g1", "grep", PRUNED_POINTER))
    }
    assert only_recency.metadata == DensityMetadata(recency_pruned=1)


def test_req_hd_007_4_007_5_recency_is_off_by_default_with_retention_three() -> None:
    defaults = DensityConfig()
    assert (defaults.recency_pruning, defaults.recency_retention) == (False, 3)
    history = [e for n in range(6) for e in (ai_call(f"c{n}", "ls"), tool_result(f"c{n}", "ls"))]
    assert HighDensityStrategy().optimize(history, defaults).is_empty


def test_req_hd_013_7_removals_sorted_and_disjoint_from_replacements() -> None:
    history = [
        ai_call("r1", "read_file", {"file_path": "/w/b.py"}),
        tool_result("r1", "read_file", "B"),
        human(inclusion("b.py", "1")),
        ai_call("r2", "read_file", {"file_path": "/w/a.py"}),
        tool_result("r2", "read_file", "A"),
        human(inclusion("b.py", "2")),
        ai_call("w1", "write_file", {"file_path": "/w/b.py"}),
        tool_result("w1", "write_file", "ok"),
        ai_call("w2", "replace", {"file_path": "/w/a.py"}),
        tool_result("w2", "replace", "ok"),
    ]
    result = HighDensityStrategy().optimize(history, config())
    assert result.removals == (0, 1, 3, 4)
    assert result.replacements == {2: human(omitted_note("b.py"))}
    assert result.metadata == DensityMetadata(4, 1, 0)


def test_req_hd_001_input_history_is_not_modified() -> None:
    history = mixed_history()
    before = list(history)
    HighDensityStrategy().optimize(history, config())
    assert history == before
    assert all(a is b for a, b in zip(history, before, strict=True))


# --- compress ---------------------------------------------------------------------------

BIG = "".join(f"line {n} of a long file\n" for n in range(400))


def compress_history() -> list[IContent]:
    return [
        human("task"),
        ai_call("r1", "read_file", {"file_path": "/w/a.py"}),
        tool_result("r1", "read_file", BIG),
        ai_call("s1", "run_shell_command", {"command": "pytest -q\n--tb=short"}),
        tool_result("s1", "run_shell_command", BIG, error="FAILED tests/x.py::y\nmore details"),
        ai_call("r2", "read_file", {"file_path": "/w/b.py"}),
        tool_result("r2", "read_file", BIG),
        human("recent"),
        ai_text("done"),
    ]


def context_for(history: list[IContent], target: int, preserve: float = 0.3) -> CompressionContext:
    """A context whose target_tokens is ``target`` (or a token more: float rounding)."""
    return CompressionContext(
        history=history,
        tokens=[count_entry(e) for e in history],
        context_limit=math.ceil(target / 0.6),
        threshold=1.0,
        preserve_threshold=preserve,
    )


SUMMARY_READ_A = "[read_file /w/a.py — success, 400 lines]"
SUMMARY_SHELL = "[run_shell_command pytest -q — error: FAILED tests/x.py::y]"


async def test_req_hd_008_3_one_line_summaries_outside_the_tail() -> None:
    history = compress_history()
    result = await HighDensityStrategy().compress(context_for(history, 0))
    assert result.llm_call_made is False
    assert result.summarized == 2
    assert result.new_history[2] == tool_result("r1", "read_file", SUMMARY_READ_A)
    assert result.new_history[4] == tool_result(
        "s1", "run_shell_command", SUMMARY_SHELL, error="FAILED tests/x.py::y"
    )


async def test_req_hd_008_2_recent_tail_is_preserved() -> None:
    history = compress_history()
    result = await HighDensityStrategy().compress(context_for(history, 0))
    # entries 6..8 hold more than 30% of the tokens: the tail, returned as the same objects.
    assert all(result.new_history[i] is history[i] for i in (6, 7, 8))
    result_all_tail = await HighDensityStrategy().compress(context_for(history, 0, preserve=0.99))
    assert result_all_tail.summarized == 0
    assert all(a is b for a, b in zip(result_all_tail.new_history, history, strict=True))


async def test_req_hd_008_2_the_last_entry_is_always_kept() -> None:
    history = [
        ai_call("r1", "read_file", {"file_path": "/w/a.py"}),
        tool_result("r1", "read_file", BIG),
    ]
    result = await HighDensityStrategy().compress(context_for(history, 0, preserve=0.01))
    assert result.new_history[1] is history[1]
    assert result.summarized == 0


async def test_req_hd_008_4_non_tool_content_and_calls_are_untouched() -> None:
    history = compress_history()
    result = await HighDensityStrategy().compress(context_for(history, 0))
    assert [
        i for i, (a, b) in enumerate(zip(result.new_history, history, strict=True)) if a is not b
    ] == [2, 4]


async def test_req_hd_008_6_stops_once_under_the_target() -> None:
    history = compress_history()
    tokens = [count_entry(e) for e in history]
    after_first = (
        sum(tokens) - tokens[2] + count_entry(tool_result("r1", "read_file", SUMMARY_READ_A))
    )
    result = await HighDensityStrategy().compress(context_for(history, after_first))
    assert result.summarized == 1
    assert result.new_history[2] == tool_result("r1", "read_file", SUMMARY_READ_A)
    assert result.new_history[4] is history[4]


async def test_req_hd_008_6_nothing_to_do_when_already_under_the_target() -> None:
    history = compress_history()
    result = await HighDensityStrategy().compress(context_for(history, 10**7))
    assert result.summarized == 0
    assert all(a is b for a, b in zip(result.new_history, history, strict=True))


async def test_req_hd_008_3_already_summarized_responses_are_left_alone() -> None:
    history = [
        ai_call("r1", "read_file", {"file_path": "/w/a.py"}),
        tool_result("r1", "read_file", SUMMARY_READ_A),
        ai_call("r2", "read_file", {"file_path": "/w/a.py"}),
        tool_result("r2", "read_file", PRUNED_POINTER),
        human("x" * 50),
    ]
    result = await HighDensityStrategy().compress(context_for(history, 0, preserve=0.01))
    assert result.summarized == 0
    assert all(a is b for a, b in zip(result.new_history, history, strict=True))


async def test_req_hd_008_3_a_summary_bigger_than_the_output_is_not_applied() -> None:
    history = [
        ai_call("r1", "read_file", {"file_path": "/w/a.py"}),
        tool_result("r1", "read_file", "x"),
    ]
    history.append(human("end"))
    result = await HighDensityStrategy().compress(context_for(history, 0, preserve=0.01))
    assert result.summarized == 0
    assert result.new_history[1] is history[1]


def test_req_hd_008_3_summary_line_shapes() -> None:
    long_error = "E" * 300 + "\nsecond line"
    assert summary_line(response("x", "custom", "a\nb\nc"), call("x", "custom", {})) == (
        "[custom — success, 3 lines]"
    )
    assert summary_line(response("x", "custom", "one"), None) == "[custom — success, 1 line]"
    assert summary_line(
        response("x", "shell", {"output": "a\nb", "stderr": "c"}), call("x", "shell", {"cmd": "ls"})
    ) == ("[shell ls — success, 3 lines]")
    assert summary_line(response("x", "t", None, error=long_error), None) == (
        "[t — error: " + "E" * 119 + "…]"
    )


def test_req_hd_008_3_summarizing_twice_is_summarizing_once() -> None:
    original = response("x", "shell", BIG, error="boom\ntrace")
    once = summarize_response(original, call("x", "shell", {"command": "make"}))
    assert once == response("x", "shell", "[shell make — error: boom]", error="boom")
    assert summarize_response(once, call("x", "shell", {"command": "make"})) is once


def test_req_hd_008_3_compact_results_are_not_summarized_again() -> None:
    read_a = call("r1", "read_file", {"file_path": "/w/a.py"})
    summarized = response("r1", "read_file", SUMMARY_READ_A)
    pruned = response("r1", "read_file", PRUNED_POINTER)
    assert summarize_response(summarized, read_a) is summarized
    assert summarize_response(pruned, read_a) is pruned
    assert summarize_response(response("r1", "read_file", "a\nb"), read_a) == response(
        "r1", "read_file", "[read_file /w/a.py — success, 2 lines]"
    )
