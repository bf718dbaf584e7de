"""Tool result recency pruning (REQ-HD-007, REQ-HD-013.6, REQ-HD-013.7)."""

from __future__ import annotations

from hdcontext.core.content import IContent
from hdcontext.core.density.optimize import prune_old_results
from hdcontext.core.tools.summary import PRUNED_POINTER

from .builders import ai, ai_call, call, human, response, tool_result, tools


def runs(tool: str, count: int, prefix: str = "c") -> list[IContent]:
    out: list[IContent] = []
    for n in range(count):
        out.append(ai_call(f"{prefix}{n}", tool, {"command": f"run {n}"}))
        out.append(tool_result(f"{prefix}{n}", tool, f"output {n}"))
    return out


def test_req_hd_007_2_pointer_text_is_exact() -> None:
    assert PRUNED_POINTER == "[Result pruned \N{EM DASH} re-run tool to retrieve]"


def test_req_hd_007_1_results_beyond_the_window_get_the_pointer() -> None:
    history = runs("run_shell_command", 5)
    edits = prune_old_results(history, 3)
    assert edits.removals == frozenset()
    assert edits.replacements == {
        1: tool_result("c0", "run_shell_command", PRUNED_POINTER),
        3: tool_result("c1", "run_shell_command", PRUNED_POINTER),
    }
    assert edits.count == 2


def test_req_hd_007_1_window_is_per_tool_name() -> None:
    history = [*runs("grep", 2, "g"), *runs("ls", 3, "l"), human("next")]
    edits = prune_old_results(history, 2)
    assert edits.replacements == {5: tool_result("l0", "ls", PRUNED_POINTER)}


def test_req_hd_007_3_call_callid_toolname_and_error_are_kept() -> None:
    history = [
        ai_call("c0", "grep", {"pattern": "x"}),
        tool_result("c0", "grep", {"output": "lots"}, error="exit 2"),
        *runs("grep", 1, "n"),
    ]
    edits = prune_old_results(history, 1)
    assert 0 not in edits.replacements
    assert edits.replacements == {1: tool_result("c0", "grep", PRUNED_POINTER, error="exit 2")}


def test_req_hd_007_1_parallel_responses_count_in_reverse_block_order() -> None:
    history = [
        ai(call("a", "grep"), call("b", "grep"), call("c", "grep")),
        tools(response("a", "grep", "A"), response("b", "grep", "B"), response("c", "grep", "C")),
    ]
    edits = prune_old_results(history, 2)
    assert edits.replacements == {
        1: tools(
            response("a", "grep", PRUNED_POINTER),
            response("b", "grep", "B"),
            response("c", "grep", "C"),
        )
    }
    assert edits.count == 1


def test_req_hd_013_6_retention_below_one_counts_as_one() -> None:
    history = runs("grep", 3)
    expected = {
        1: tool_result("c0", "grep", PRUNED_POINTER),
        3: tool_result("c1", "grep", PRUNED_POINTER),
    }
    assert prune_old_results(history, 0).replacements == expected
    assert prune_old_results(history, -4).replacements == expected


def test_req_hd_007_1_pruned_results_still_fill_the_window() -> None:
    history = runs("grep", 4)
    history[5] = tool_result("c2", "grep", PRUNED_POINTER)
    edits = prune_old_results(history, 2)
    # c3 and the already pruned c2 are the window; c1 and c0 are new replacements.
    assert edits.replacements == {
        1: tool_result("c0", "grep", PRUNED_POINTER),
        3: tool_result("c1", "grep", PRUNED_POINTER),
    }
    applied = [edits.replacements.get(i, e) for i, e in enumerate(history)]
    assert prune_old_results(applied, 2).is_empty


def test_req_hd_007_1_within_the_window_nothing_changes() -> None:
    assert prune_old_results(runs("grep", 3), 3).is_empty
