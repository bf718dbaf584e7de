"""Keep the latest view (DESIGN.md decision 11, PROTOCOL.md ``keepLatestView``).

A read goes only when a later view of the file covers what it showed (a later read of the
whole file or of a wider range, a write carrying the whole content); a read followed only by
partial edits stays, because it is the model's only sight of the file; a read of a file that
changed on disk (outside the history) becomes a pointer; recency pruning leaves current views
alone. Each test also says what the seeds' rule does with the same history.
"""

from __future__ import annotations

import dataclasses

from pydantic import JsonValue

from hdcontext.core.content import IContent, ToolCallBlock, ToolResponseBlock
from hdcontext.core.density.optimize import optimize
from hdcontext.core.density.types import DensityConfig, DensityResult, FileWrite
from hdcontext.core.tools.summary import DISK_POINTER, PRUNED_POINTER

from .builders import ai_call, human, tool_result

KEEP = DensityConfig(
    read_write_pruning=True,
    file_dedupe=False,
    workspace_root="/w",
    read_tools=frozenset({"Read", "read_file"}),
    write_tools=frozenset({"Write", "Edit", "insert_at_line"}),
    shell_tools=frozenset({"bash"}),
    keep_latest_view=True,
)
SEEDS = dataclasses.replace(KEEP, keep_latest_view=False)


def read(cid: str, path: str = "a.py", ts: int | None = None, **more: JsonValue) -> list[IContent]:
    params: dict[str, JsonValue] = {"file_path": path, **more}
    return [ai_call(cid, "Read", params, ts=ts), tool_result(cid, "Read", f"content {cid}", ts=ts)]


def failed_read(cid: str, path: str = "a.py") -> list[IContent]:
    return [
        ai_call(cid, "Read", {"file_path": path}),
        tool_result(cid, "Read", "", error="no such file"),
    ]


def edit(cid: str, path: str = "a.py", ts: int | None = None) -> list[IContent]:
    params = {"file_path": path, "old_string": "x", "new_string": "y"}
    return [ai_call(cid, "Edit", params, ts=ts), tool_result(cid, "Edit", "ok", ts=ts)]


def write_whole(cid: str, path: str = "a.py") -> list[IContent]:
    params = {"file_path": path, "content": "all of it"}
    return [ai_call(cid, "Write", params), tool_result(cid, "Write", "ok")]


def bash(cid: str, command: str, result: str = "out") -> list[IContent]:
    return [ai_call(cid, "bash", {"command": command}), tool_result(cid, "bash", result)]


def gone(history: list[IContent], result: DensityResult) -> set[str]:
    """Ids of the calls the result removes."""
    out: set[str] = set()
    for i in result.removals:
        out.update(b.id for b in history[i].blocks if isinstance(b, ToolCallBlock))
    for i, entry in result.replacements.items():
        kept = {b.id for b in entry.blocks if isinstance(b, ToolCallBlock)}
        out.update(
            b.id for b in history[i].blocks if isinstance(b, ToolCallBlock) and b.id not in kept
        )
    return out


def pointed(result: DensityResult, text: str) -> set[str]:
    """Ids of the calls whose responses the result replaces with ``text``."""
    return {
        b.call_id
        for entry in result.replacements.values()
        for b in entry.blocks
        if isinstance(b, ToolResponseBlock) and b.result == text
    }


def test_a_read_followed_only_by_partial_edits_stays() -> None:
    history = [human("fix"), *read("r1"), *edit("e1"), *edit("e2")]
    assert gone(history, optimize(history, KEEP)) == set()
    assert gone(history, optimize(history, SEEDS)) == {"r1"}


def test_a_later_read_of_the_whole_file_supersedes_an_earlier_one() -> None:
    history = [*read("r1"), *edit("e1"), *read("r2")]
    assert gone(history, optimize(history, KEEP)) == {"r1"}


def test_a_re_read_without_a_write_between_still_supersedes() -> None:
    history = [*read("r1"), *read("r2"), *read("r3", "b.py")]
    assert gone(history, optimize(history, KEEP)) == {"r1"}
    assert gone(history, optimize(history, SEEDS)) == set()


def test_a_write_of_the_whole_content_is_a_view() -> None:
    history = [*read("r1"), *write_whole("w1"), *edit("e1")]
    assert gone(history, optimize(history, KEEP)) == {"r1"}


def test_an_insertion_with_content_is_not_a_whole_write() -> None:
    insert = [
        ai_call("i1", "insert_at_line", {"file_path": "a.py", "line_number": 3, "content": "x"}),
        tool_result("i1", "insert_at_line", "ok"),
    ]
    history = [*read("r1"), *insert]
    assert gone(history, optimize(history, KEEP)) == set()


def test_ranges_supersede_only_what_they_cover() -> None:
    narrow = read("r1", offset=10, limit=20)
    wide = read("r2", offset=0, limit=100)
    history = [*narrow, *wide]
    assert gone(history, optimize(history, KEEP)) == {"r1"}
    reverse = [*read("w1", offset=0, limit=100), *read("n1", offset=10, limit=20)]
    assert gone(reverse, optimize(reverse, KEEP)) == set()
    whole_first = [*read("a1"), *read("a2", offset=5, limit=5)]
    assert gone(whole_first, optimize(whole_first, KEEP)) == set()


def test_a_failed_read_is_no_view() -> None:
    history = [*read("r1"), *failed_read("r2")]
    assert gone(history, optimize(history, KEEP)) == set()


def test_a_disk_change_not_made_by_the_history_turns_the_read_into_a_pointer() -> None:
    history = [*read("r1", ts=100)]
    outside = dataclasses.replace(KEEP, external_writes=(FileWrite("/w/a.py", 150),))
    result = optimize(history, outside)
    assert gone(history, result) == set()
    assert pointed(result, DISK_POINTER) == {"r1"}
    # the seeds' rule removes it instead
    seeds = dataclasses.replace(outside, keep_latest_view=False)
    assert gone(history, optimize(history, seeds)) == {"r1"}


def test_a_disk_change_made_by_the_agents_own_edit_changes_nothing() -> None:
    # The edit reached the disk (mtime 190) before its response was recorded (200).
    history = [*read("r1", ts=100), *edit("e1", ts=200)]
    own = dataclasses.replace(KEEP, external_writes=(FileWrite("/w/a.py", 190),))
    result = optimize(history, own)
    assert gone(history, result) == set() and pointed(result, DISK_POINTER) == set()
    later = dataclasses.replace(KEEP, external_writes=(FileWrite("/w/a.py", 250),))
    assert pointed(optimize(history, later), DISK_POINTER) == {"r1"}


def test_recency_pruning_never_takes_a_files_latest_view() -> None:
    history = [
        *read("r1", "a.py"),
        *read("r2", "b.py"),
        *read("r3", "c.py"),
        *read("r4", "d.py"),
        *read("r5", "a.py"),
    ]
    recency = dataclasses.replace(KEEP, recency_pruning=True, recency_retention=1)
    result = optimize(history, recency)
    assert gone(history, result) == {"r1"}  # superseded by r5
    assert pointed(result, PRUNED_POINTER) == set()  # r2..r4 are the only views of b, c, d
    seeds = dataclasses.replace(recency, keep_latest_view=False)
    assert pointed(optimize(history, seeds), PRUNED_POINTER) == {"r1", "r2", "r3", "r4"}


LISTING = "\n".join(f"-rw-r--r-- 1 user user {n:5} file{n}.py" for n in range(20))


def test_recency_still_prunes_other_output() -> None:
    history = [*bash("b1", "ls", LISTING), *bash("b2", "ls -l", LISTING), *read("r1")]
    recency = dataclasses.replace(KEEP, recency_pruning=True, recency_retention=1)
    assert pointed(optimize(history, recency), PRUNED_POINTER) == {"b1"}


def test_recency_leaves_an_output_no_longer_than_its_pointer() -> None:
    # A pointer in place of "3 passed" takes nothing out and, under prompt caching, still
    # costs a rewrite; the seeds' rule points it all the same.
    history = [
        *bash("b1", "pytest -q", "3 passed"),
        *bash("b2", "ls", LISTING),
        *bash("b3", "ls -l", LISTING),
    ]
    recency = dataclasses.replace(KEEP, recency_pruning=True, recency_retention=1)
    assert pointed(optimize(history, recency), PRUNED_POINTER) == {"b2"}
    seeds = dataclasses.replace(recency, keep_latest_view=False)
    assert pointed(optimize(history, seeds), PRUNED_POINTER) == {"b1", "b2"}


def test_shell_views_count_too() -> None:
    history = [*bash("c1", "cat a.py"), *bash("s1", "sed -i s/x/y/ a.py"), *bash("c2", "cat a.py")]
    assert gone(history, optimize(history, KEEP)) == {"c1"}
    edited_only = history[:4]
    assert gone(edited_only, optimize(edited_only, KEEP)) == set()
    heads = [*bash("h1", "head -n 5 a.py"), *bash("h2", "head -n 5 a.py")]
    assert gone(heads, optimize(heads, KEEP)) == {"h1"}
    other = [*bash("h1", "head -n 5 a.py"), *bash("h2", "tail -n 5 a.py")]
    assert gone(other, optimize(other, KEEP)) == set()


def test_a_heredoc_that_writes_the_file_is_a_view() -> None:
    history = [*bash("c1", "cat a.py"), *bash("w1", "cat <<'EOF' > a.py\nnew\nEOF")]
    assert gone(history, optimize(history, KEEP)) == {"c1"}


def test_a_client_that_can_retrieve_gets_pointers_that_name_the_call() -> None:
    history = [*bash("b1", "ls", LISTING), *bash("b2", "ls -l", LISTING)]
    recency = dataclasses.replace(
        KEEP, recency_pruning=True, recency_retention=1, retrieve_tool="hdcontext_retrieve"
    )
    result = optimize(history, recency)
    pointer = '[Result pruned — call hdcontext_retrieve with callId "b1" to get it back]'
    assert pointed(result, pointer) == {"b1"}
    again = [result.replacements.get(i, e) for i, e in enumerate(history)]
    assert optimize(again, recency).is_empty  # a pointer is not pruned again
