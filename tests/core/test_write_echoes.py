"""What writes leave behind, with the latest views kept (density/write_echoes.py,
density/todo_lists.py and the covered inputs of density/stale_reads.py).

An edit tool's echo of the lines it changed is cut to its first line: at once when it only
lists those lines, once the model has answered after it otherwise. A write's own content (an
edit's old and new text, a whole file) becomes a pointer once a later whole view of the file
shows it; a todo list, once a later todo call carries the list. None ever takes the latest view
of a file or the latest list, and the seeds' rule (``keep_latest_view`` off) does none of it.
"""

from __future__ import annotations

import dataclasses

from pydantic import JsonValue

from hdcontext.core.content import IContent, ToolCallBlock, ToolResponseBlock
from hdcontext.core.density.optimize import optimize
from hdcontext.core.density.types import DensityConfig, DensityResult
from hdcontext.core.density.write_echoes import MIN_REST_CHARS
from hdcontext.core.tools.summary import INPUT_POINTER, TODO_POINTER

from .builders import ai_call, ai_text, human, tool_result

KEEP = DensityConfig(
    read_write_pruning=True,
    file_dedupe=False,
    workspace_root="/w",
    read_tools=frozenset({"Read"}),
    write_tools=frozenset({"Write", "Edit", "MultiEdit"}),
    keep_latest_view=True,
)
SEEDS = dataclasses.replace(KEEP, keep_latest_view=False)

SNIPPET = "".join(f"{n:>6}\u2192    total = total + item.price  # line {n}\n" for n in range(1, 9))
ECHO = "The file /w/a.py has been updated. Here's a snippet of the edited file:\n" + SNIPPET
EDIT = {"file_path": "a.py", "old_string": "total += p", "new_string": "total = total + p"}


def read(cid: str, path: str = "a.py") -> list[IContent]:
    return [
        ai_call(cid, "Read", {"file_path": path}),
        tool_result(cid, "Read", f"1\u2192content of {path}"),
    ]


def edit(cid: str, result: str = ECHO, error: str | None = None) -> list[IContent]:
    return [ai_call(cid, "Edit", EDIT), tool_result(cid, "Edit", result, error=error)]


def write(cid: str, content: str) -> list[IContent]:
    params: dict[str, JsonValue] = {"file_path": "a.py", "content": content}
    return [ai_call(cid, "Write", params), tool_result(cid, "Write", "File written")]


def _result_of(history: list[IContent], result: DensityResult, cid: str) -> JsonValue:
    for i, entry in enumerate(history):
        for block in entry.blocks:
            if isinstance(block, ToolResponseBlock) and block.call_id == cid:
                edited = result.replacements.get(i, entry)
                found = [
                    b
                    for b in edited.blocks
                    if isinstance(b, ToolResponseBlock) and b.call_id == cid
                ]
                return found[0].result
    raise AssertionError(cid)


def _parameters_of(history: list[IContent], result: DensityResult, cid: str) -> JsonValue:
    for i, entry in enumerate(history):
        if i in result.removals:
            continue
        edited = result.replacements.get(i, entry)
        for block in edited.blocks:
            if isinstance(block, ToolCallBlock) and block.id == cid:
                return block.parameters
    raise AssertionError(cid)


def test_an_echo_the_model_answered_after_is_cut_to_its_first_line() -> None:
    history = [human("fix the total"), *read("r1"), *edit("e1"), ai_text("Done: it adds up now.")]
    result = optimize(history, KEEP)
    trimmed = _result_of(history, result, "e1")
    assert isinstance(trimmed, str) and "\n" not in trimmed
    assert trimmed.startswith("The file /w/a.py has been updated.")
    assert "line 3" not in trimmed and "left out" in trimmed
    assert result.metadata.read_write_pairs_pruned == 1
    # The read before the partial edit is the latest view of the file: it stays.
    assert _result_of(history, result, "r1") == "1\u2192content of a.py"
    assert _parameters_of(history, result, "e1") == EDIT
    assert optimize(history, SEEDS).replacements == {}


REVIEW = (
    "Replaced 1 occurrences. Please review the changes and make sure they are correct.\n"
    "[File: /w/a.py (8 lines total)]\n" + SNIPPET
)


def test_an_echo_that_asks_for_a_review_stays_until_the_model_has_answered_after_it() -> None:
    history = [human("fix the total"), *read("r1"), *edit("e1", result=REVIEW)]
    assert _result_of(history, optimize(history, KEEP), "e1") == REVIEW
    answered = [*history, ai_text("Looks right.")]
    trimmed = _result_of(answered, optimize(answered, KEEP), "e1")
    assert trimmed == (
        "Replaced 1 occurrences. Please review the changes and make sure they are correct."
        " [the rest of this output, already read, was pruned — read the file for its current"
        " content]"
    )


def test_an_echo_that_only_lists_the_lines_it_changed_is_cut_before_the_model_sees_it() -> None:
    # Claude Code 2.1's Edit sends no such listing at all; the model wrote the change itself.
    history = [human("fix the total"), *read("r1"), *edit("e1")]
    trimmed = _result_of(history, optimize(history, KEEP), "e1")
    assert trimmed == (
        "The file /w/a.py has been updated. Here's a snippet of the edited file:"
        " [the file's numbered lines around the change are left out — read the file to see them]"
    )
    assert _result_of(history, optimize(history, SEEDS), "e1") == ECHO


def test_short_results_and_failed_writes_are_left_alone() -> None:
    short = "The file has been updated.\n" + "x" * (MIN_REST_CHARS - 1)
    history = [
        *read("r1"),
        *edit("e1", result=short),
        *edit("e2", result=ECHO, error="old_string not found"),
        ai_text("next"),
    ]
    result = optimize(history, KEEP)
    assert _result_of(history, result, "e1") == short
    assert _result_of(history, result, "e2") == ECHO


def test_with_a_retrieve_tool_the_pointer_names_it_and_the_call() -> None:
    history = [*read("r1"), *edit("e1"), ai_text("ok")]
    config = dataclasses.replace(KEEP, retrieve_tool="hdcontext_retrieve")
    trimmed = _result_of(history, optimize(history, config), "e1")
    assert isinstance(trimmed, str) and 'hdcontext_retrieve with callId "e1"' in trimmed


def test_an_edit_s_text_goes_once_a_later_read_shows_the_file() -> None:
    history = [*read("r1"), *edit("e1"), ai_text("let me look again"), *read("r2")]
    result = optimize(history, KEEP)
    assert _parameters_of(history, result, "e1") == {"file_path": "a.py", "pruned": INPUT_POINTER}
    assert _result_of(history, result, "r2") == "1\u2192content of a.py"  # the latest view
    applied = [
        result.replacements.get(i, entry)
        for i, entry in enumerate(history)
        if i not in result.removals
    ]
    assert optimize(applied, KEEP).is_empty  # once pointed, nothing more to take


def test_a_whole_write_is_covered_by_a_later_one_and_the_latest_stays() -> None:
    history = [*write("w1", "first version"), *write("w2", "second version")]
    result = optimize(history, KEEP)
    assert _parameters_of(history, result, "w1") == {"file_path": "a.py", "pruned": INPUT_POINTER}
    assert _parameters_of(history, result, "w2") == {
        "file_path": "a.py",
        "content": "second version",
    }


def test_an_edit_with_no_later_whole_view_keeps_its_text() -> None:
    history = [*read("r1"), *edit("e1"), *edit("e2")]
    result = optimize(history, KEEP)
    assert _parameters_of(history, result, "e1") == EDIT
    assert _parameters_of(history, result, "e2") == EDIT
    assert optimize(history, SEEDS).removals  # the seeds' rule drops the read instead


def todo(cid: str, *items: str) -> list[IContent]:
    todos: list[JsonValue] = [
        {"id": str(n), "content": item, "status": "pending"} for n, item in enumerate(items)
    ]
    return [
        ai_call(cid, "TodoWrite", {"todos": todos}),
        tool_result(cid, "TodoWrite", "Todos have been modified successfully."),
    ]


def test_only_the_latest_todo_list_keeps_its_items() -> None:
    history = [
        *todo("t1", "read the code"),
        *todo("t2", "read the code", "fix the total"),
        ai_text("working on it"),
        *todo("t3", "fix the total", "run the tests"),
    ]
    result = optimize(history, KEEP)
    assert _parameters_of(history, result, "t1") == {"pruned": TODO_POINTER}
    assert _parameters_of(history, result, "t2") == {"pruned": TODO_POINTER}
    latest = _parameters_of(history, result, "t3")
    assert isinstance(latest, dict) and len(latest["todos"]) == 2  # type: ignore[arg-type]
    assert optimize(history, SEEDS).replacements == {}
