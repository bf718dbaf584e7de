"""READ → WRITE pair pruning (REQ-HD-005, REQ-HD-013.5, REQ-HD-013.7)."""

from __future__ import annotations

from pydantic import JsonValue

from hdcontext.core.content import IContent
from hdcontext.core.density.edits import PassEdits
from hdcontext.core.density.optimize import prune_stale_reads
from hdcontext.core.density.types import DensityConfig, FileWrite

from .builders import ai, ai_call, ai_text, call, human, response, tool_result, tools

READS = frozenset({"read_file", "read_line_range", "read_many_files", "ast_read_file"})
WRITES = frozenset({"write_file", "ast_edit", "replace", "insert_at_line", "delete_line_range"})


def config(root: str = "/w", external: tuple[FileWrite, ...] = ()) -> DensityConfig:
    return DensityConfig(
        workspace_root=root, read_tools=READS, write_tools=WRITES, external_writes=external
    )


def read(call_id: str, path: JsonValue, tool: str = "read_file") -> list[IContent]:
    params: JsonValue = {"file_path": path}
    return [ai_call(call_id, tool, params), tool_result(call_id, tool, "content")]


def write(
    call_id: str, path: str, tool: str = "write_file", error: str | None = None
) -> list[IContent]:
    return [ai_call(call_id, tool, {"file_path": path}), tool_result(call_id, tool, "ok", error)]


def removed(*indices: int) -> PassEdits:
    return PassEdits(frozenset(indices), {})


def test_req_hd_005_1_and_005_6_read_then_write_removes_call_and_response() -> None:
    history = [human("fix a"), *read("r1", "/w/a.py"), *write("w1", "/w/a.py")]
    assert prune_stale_reads(history, config()) == removed(1, 2)


def test_req_hd_005_2_every_seed_read_tool_is_pruned() -> None:
    for tool in sorted(READS):
        history = [*read("r1", "/w/a.py", tool), *write("w1", "/w/a.py")]
        assert prune_stale_reads(history, config()) == removed(0, 1), tool


def test_req_hd_005_3_every_seed_write_tool_makes_reads_stale() -> None:
    for tool in sorted(WRITES):
        history = [*read("r1", "/w/a.py"), *write("w1", "/w/a.py", tool)]
        assert prune_stale_reads(history, config()) == removed(0, 1), tool


def test_req_hd_005_2_tool_names_match_exactly() -> None:
    history = [*read("r1", "/w/a.py", "Read_File"), *write("w1", "/w/a.py", "Write_File")]
    assert prune_stale_reads(history, config()).is_empty


def test_req_hd_005_3_a_non_write_tool_naming_the_file_is_no_write() -> None:
    history = [
        *read("r1", "/w/a.py"),
        ai_call("s1", "run_shell_command", {"file_path": "/w/a.py", "command": "cat"}),
        tool_result("s1", "run_shell_command", "x"),
    ]
    assert prune_stale_reads(history, config()).is_empty


def test_req_hd_005_4_path_keys_in_order_file_path_then_absolute_path_then_path() -> None:
    history = [
        ai_call("r1", "read_file", {"absolute_path": "/w/a.py", "path": "/w/b.py"}),
        tool_result("r1", "read_file", "a"),
        ai_call("r2", "read_file", {"path": "/w/b.py"}),
        tool_result("r2", "read_file", "b"),
        ai_call("r3", "read_file", {"file_path": "/w/c.py", "absolute_path": "/w/a.py"}),
        tool_result("r3", "read_file", "c"),
        *write("w1", "/w/a.py"),
    ]
    # r1 reads a.py (absolute_path wins over path); r3 reads c.py (file_path wins).
    assert prune_stale_reads(history, config()) == removed(0, 1)


def test_req_hd_005_5_paths_are_normalized_before_comparison() -> None:
    history = [*read("r1", "/w/src/../a.py"), *write("w1", "/w/./a.py")]
    assert prune_stale_reads(history, config()) == removed(0, 1)


def test_req_hd_005_5_no_case_folding() -> None:
    history = [*read("r1", "/w/A.py"), *write("w1", "/w/a.py")]
    assert prune_stale_reads(history, config()).is_empty


def test_req_hd_005_11_relative_paths_resolve_against_workspace_root() -> None:
    history = [*read("r1", "a.py"), *write("w1", "/w/a.py"), *read("r2", "./b.py")]
    history += write("w2", "b.py")
    assert prune_stale_reads(history, config(root="/w")) == removed(0, 1, 4, 5)
    assert prune_stale_reads(history, config(root="/elsewhere")) == removed(4, 5)


def test_req_hd_005_7_reads_after_the_latest_write_are_kept() -> None:
    history = [*read("r1", "/w/a.py"), *write("w1", "/w/a.py"), *read("r2", "/w/a.py")]
    assert prune_stale_reads(history, config()) == removed(0, 1)


def test_req_hd_005_7_a_read_between_two_writes_is_stale() -> None:
    history = [
        *write("w1", "/w/a.py"),
        *read("r1", "/w/a.py"),
        *write("w2", "/w/a.py"),
        *read("r2", "/w/a.py"),
    ]
    assert prune_stale_reads(history, config()) == removed(2, 3)


def test_req_hd_005_6_a_failed_write_did_not_change_the_file() -> None:
    history = [*read("r1", "/w/a.py"), *write("w1", "/w/a.py", "replace", error="no match")]
    assert prune_stale_reads(history, config()).is_empty


def test_req_hd_005_6_a_write_without_response_is_not_known_to_have_happened() -> None:
    history = [*read("r1", "/w/a.py"), ai_call("w1", "write_file", {"file_path": "/w/a.py"})]
    assert prune_stale_reads(history, config()).is_empty


def test_req_hd_005_8_block_level_granularity() -> None:
    history = [
        ai(
            call("r1", "read_file", {"file_path": "/w/a.py"}),
            call("r2", "read_file", {"file_path": "/w/b.py"}),
        ),
        tools(response("r1", "read_file", "A"), response("r2", "read_file", "B")),
        *write("w1", "/w/a.py"),
    ]
    edits = prune_stale_reads(history, config())
    assert edits.removals == frozenset()
    assert edits.replacements == {
        0: ai(call("r2", "read_file", {"file_path": "/w/b.py"})),
        1: tools(response("r2", "read_file", "B")),
    }
    assert edits.count == 2


def test_req_hd_005_8_ai_text_stays_when_its_only_call_goes() -> None:
    history = [
        ai(ai_text("let me look").blocks[0], call("r1", "read_file", {"file_path": "/w/a.py"})),
        tool_result("r1", "read_file", "A"),
        *write("w1", "/w/a.py"),
    ]
    edits = prune_stale_reads(history, config())
    assert edits.removals == frozenset({1})
    assert edits.replacements == {0: ai_text("let me look")}


def test_req_hd_005_6_parallel_calls_are_ordered_by_block_position() -> None:
    read_then_write = [
        ai(
            call("r1", "read_file", {"file_path": "/w/a.py"}),
            call("w1", "write_file", {"file_path": "/w/a.py"}),
        ),
        tools(response("r1", "read_file", "A"), response("w1", "write_file", "ok")),
    ]
    write_then_read = [
        ai(
            call("w1", "write_file", {"file_path": "/w/a.py"}),
            call("r1", "read_file", {"file_path": "/w/a.py"}),
        ),
        tools(response("w1", "write_file", "ok"), response("r1", "read_file", "A")),
    ]
    assert prune_stale_reads(read_then_write, config()).replacements == {
        0: ai(call("w1", "write_file", {"file_path": "/w/a.py"})),
        1: tools(response("w1", "write_file", "ok")),
    }
    assert prune_stale_reads(write_then_read, config()).is_empty


def test_req_hd_005_6_an_unanswered_stale_read_goes_alone() -> None:
    history = [ai_call("r1", "read_file", {"file_path": "/w/a.py"}), *write("w1", "/w/a.py")]
    assert prune_stale_reads(history, config()) == removed(0)


def test_req_hd_005_9_multi_file_read_needs_every_path_written() -> None:
    many = [
        ai_call("m1", "read_many_files", {"paths": ["/w/a.py", "b.py"]}),
        tool_result("m1", "read_many_files", "both"),
    ]
    only_a = [*many, *write("w1", "/w/a.py")]
    both = [*only_a, *write("w2", "/w/b.py")]
    assert prune_stale_reads(only_a, config()).is_empty
    assert prune_stale_reads(both, config()) == removed(0, 1)


def test_req_hd_005_9_multi_file_read_with_a_glob_is_kept() -> None:
    for glob in ("src/*.py", "src/?.py", "src/**/x.py"):
        history = [
            ai_call("m1", "read_many_files", {"paths": ["/w/a.py", glob]}),
            tool_result("m1", "read_many_files", "files"),
            *write("w1", "/w/a.py"),
        ]
        assert prune_stale_reads(history, config()).is_empty, glob


def test_req_hd_005_9_brackets_in_a_single_file_read_name_a_file() -> None:
    """REQ-HD-005.9 is about read_many_files patterns: a Next.js route file is a file."""
    for path in ("app/[slug]/page.tsx", "src/{a}.ts", "/w/pages/[...all].tsx"):
        history = [*read("r1", path), *write("w1", path)]
        assert prune_stale_reads(history, config()) == removed(0, 1), path
    other = [*read("r1", "app/[slug]/page.tsx"), *write("w1", "app/s/page.tsx")]
    assert prune_stale_reads(other, config()).is_empty  # the route is not its expansion


def test_req_hd_005_9_brackets_in_a_many_file_read_are_a_pattern() -> None:
    for pattern in ("app/[slug]/page.tsx", "src/{a,b}.ts"):
        history = [
            ai_call("m1", "read_many_files", {"paths": ["/w/a.py", pattern]}),
            tool_result("m1", "read_many_files", "files"),
            *write("w1", "/w/a.py"),
            *write("w2", pattern),
        ]
        assert prune_stale_reads(history, config()).is_empty, pattern


def test_windows_paths_resolve_against_a_windows_root_and_compare_exactly() -> None:
    root = "C:\\Users\\dev\\shop"
    history = [
        *read("r1", "app\\[slug]\\page.tsx"),
        *write("w1", "C:\\Users\\dev\\shop\\app\\[slug]\\page.tsx"),
        *read("r2", "C:/Users/dev/shop/src/a.ts"),
        *write("w2", "src/a.ts"),
        *read("r3", "c:\\Users\\dev\\shop\\b.ts"),  # another drive letter case
        *write("w3", "b.ts"),
    ]
    assert prune_stale_reads(history, config(root=root)) == removed(0, 1, 4, 5)


def test_req_hd_013_5_malformed_parameters_are_skipped_not_raised() -> None:
    bad: list[JsonValue] = [None, "a.py", ["/w/a.py"], 3, {}, {"file_path": 7}, {"paths": "x"}]
    for i, params in enumerate(bad):
        history = [
            ai_call(f"r{i}", "read_file", params),
            tool_result(f"r{i}", "read_file", "?"),
            ai_call(f"w{i}", "write_file", params),
            tool_result(f"w{i}", "write_file", "ok"),
            *write("w", "/w/a.py"),
        ]
        assert prune_stale_reads(history, config()).is_empty, params


def test_req_hd_005_6_external_write_after_the_read_makes_it_stale() -> None:
    history = [ai_call("r1", "read_file", {"file_path": "a.py"}, ts=100)]
    history.append(tool_result("r1", "read_file", "A", ts=200))
    assert prune_stale_reads(history, config(external=(FileWrite("/w/a.py", 201),))) == removed(
        0, 1
    )
    # The read's time is its response's: a write at 150 came before the content was taken.
    assert prune_stale_reads(history, config(external=(FileWrite("/w/a.py", 150),))).is_empty
    assert prune_stale_reads(history, config(external=(FileWrite("/w/a.py", 200),))).is_empty
    assert prune_stale_reads(history, config(external=(FileWrite("/w/b.py", 900),))).is_empty


def test_req_hd_005_6_external_write_falls_back_to_the_call_time() -> None:
    history = [
        ai_call("r1", "read_file", {"file_path": "/w/a.py"}, ts=100),
        tool_result("r1", "read_file", "A"),
    ]
    assert prune_stale_reads(history, config(external=(FileWrite("/w/a.py", 101),))) == removed(
        0, 1
    )
    assert prune_stale_reads(history, config(external=(FileWrite("/w/a.py", 100),))).is_empty


def test_req_hd_005_6_external_write_cannot_order_an_untimed_read() -> None:
    history = read("r1", "/w/a.py")
    assert prune_stale_reads(history, config(external=(FileWrite("/w/a.py", 10**15),))).is_empty


def test_req_hd_005_6_repeated_call_ids_are_ambiguous_and_kept() -> None:
    history = [*read("r1", "/w/a.py"), *read("r1", "/w/a.py"), *write("w1", "/w/a.py")]
    assert prune_stale_reads(history, config()).is_empty


def test_req_hd_013_7_count_is_entries_not_blocks() -> None:
    history = [
        ai(
            call("r1", "read_file", {"file_path": "/w/a.py"}),
            call("r2", "read_file", {"file_path": "/w/b.py"}),
        ),
        tools(response("r1", "read_file", "A"), response("r2", "read_file", "B")),
        *read("r3", "/w/a.py"),
        *write("w1", "/w/a.py"),
        *write("w2", "/w/b.py"),
    ]
    edits = prune_stale_reads(history, config())
    assert edits == removed(0, 1, 2, 3)
    assert edits.count == 4
