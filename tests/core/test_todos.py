"""Todos (REQ-HD-011.2): the ``history/todos`` shape, and the latest todo write in history."""

from __future__ import annotations

import json

import pytest

from hdcontext.core.content import ContentError, IContent, ToolCallBlock
from hdcontext.core.tools.todos import Todo, latest_todo_write, parse_todos

from .strategy_builders import ai, call, human, response


def test_parse_todos_reads_the_protocol_shape() -> None:
    raw = [
        {"id": "1", "content": "Write parser", "status": "completed"},
        {
            "id": 2,
            "content": "Fix lexer",
            "status": "In_Progress",
            "subtasks": [{"id": "2a", "content": "tabs"}, {"content": "unicode"}],
            "priority": "high",
        },
    ]
    assert parse_todos(raw) == [
        Todo(id="1", content="Write parser", status="completed"),
        Todo(
            id="2",
            content="Fix lexer",
            status="in_progress",
            subtasks=(Todo(id="2a", content="tabs"), Todo(id="2.2", content="unicode")),
        ),
    ]


def test_parse_todos_accepts_an_empty_list() -> None:
    assert parse_todos([]) == []


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (
            [{"id": "1", "content": "a", "status": "pending"}, {"id": "2", "status": "pending"}],
            "todos[1].content: field required",
        ),
        ([{"content": "a", "status": "pending"}], "todos[0].id: field required"),
        ([{"id": "1", "content": "a"}], "todos[0].status: field required"),
        (
            [{"id": "1", "content": "a", "status": "pending", "subtasks": [{"id": "x"}]}],
            "todos[0].subtasks[0].content: field required",
        ),
        ({"id": "1"}, "todos: "),
        (["nope"], "todos[0]: "),
    ],
)
def test_parse_todos_names_the_bad_path(raw: object, message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_todos(raw)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, ContentError)


def _todo_call(call_id: str, params: object, name: str = "todo_write") -> IContent:
    return call(call_id, name=name, parameters=params)  # type: ignore[arg-type]


def test_latest_todo_write_reads_llxprt_todo_write() -> None:
    params = {
        "todos": [
            {"id": "t1", "content": "Plan", "status": "completed", "priority": "high"},
            {
                "id": "t2",
                "content": "Build",
                "status": "in_progress",
                "priority": "medium",
                "subtasks": [{"id": "s1", "content": "lexer", "toolCalls": []}],
            },
        ]
    }
    history = [human("go"), _todo_call("c1", params), response("c1", "todo_write")]
    assert latest_todo_write(history) == (
        1,
        [
            Todo(id="t1", content="Plan", status="completed"),
            Todo(
                id="t2",
                content="Build",
                status="in_progress",
                subtasks=(Todo(id="s1", content="lexer"),),
            ),
        ],
    )


def test_latest_todo_write_reads_claude_code_todowrite_with_position_ids() -> None:
    params = {
        "todos": [
            {"content": "Run tests", "status": "pending", "activeForm": "Running tests"},
            {"content": "Fix bug", "status": "in_progress", "activeForm": "Fixing bug"},
        ]
    }
    history = [human("go"), _todo_call("c1", params, name="TodoWrite")]
    assert latest_todo_write(history) == (
        1,
        [
            Todo(id="1", content="Run tests", status="pending"),
            Todo(id="2", content="Fix bug", status="in_progress"),
        ],
    )


def test_latest_call_wins() -> None:
    first = {"todos": [{"id": "1", "content": "old", "status": "pending"}]}
    second = {"todos": [{"id": "1", "content": "new", "status": "pending"}]}
    history = [
        _todo_call("c1", first),
        response("c1", "todo_write"),
        ai("working"),
        _todo_call("c2", second),
        response("c2", "todo_write"),
        ai("more"),
    ]
    found = latest_todo_write(history)
    assert found is not None
    assert found[0] == 3
    assert [t.content for t in found[1]] == ["new"]


@pytest.mark.parametrize(
    "bad",
    [
        None,
        "not an object",
        {},
        {"todos": "not json ["},
        {"todos": {"id": "1"}},
        {"todos": [{"id": "1", "status": "pending"}]},
        {"todos": ["text"]},
        {"todos": [{"content": "a", "subtasks": [42]}]},
    ],
)
def test_malformed_latest_call_is_skipped_for_the_one_before(bad: object) -> None:
    good = {"todos": [{"id": "1", "content": "good", "status": "pending"}]}
    history = [_todo_call("c1", good), _todo_call("c2", bad)]
    assert latest_todo_write(history) == (0, [Todo(id="1", content="good")])


def test_malformed_only_call_gives_none() -> None:
    assert latest_todo_write([_todo_call("c1", {"todos": 3})]) is None


def test_no_todo_call_gives_none() -> None:
    assert latest_todo_write([human("a"), call("c1"), response("c1")]) is None
    assert latest_todo_write([]) is None


def test_rejected_call_is_skipped() -> None:
    good = {"todos": [{"id": "1", "content": "kept", "status": "pending"}]}
    rejected = {"todos": [{"id": "1", "content": "rejected", "status": "pending"}]}
    history = [
        _todo_call("c1", good),
        response("c1", "todo_write"),
        _todo_call("c2", rejected),
        response("c2", "todo_write", result=None, error="invalid status"),
    ]
    assert latest_todo_write(history) == (0, [Todo(id="1", content="kept")])


def test_todos_sent_as_a_json_string_are_read() -> None:
    params = {"todos": json.dumps([{"content": "x", "status": "completed"}])}
    assert latest_todo_write([_todo_call("c1", params)]) == (
        0,
        [Todo(id="1", content="x", status="completed")],
    )


def test_empty_list_clears_the_todos() -> None:
    old = {"todos": [{"id": "1", "content": "x", "status": "pending"}]}
    history = [_todo_call("c1", old), _todo_call("c2", {"todos": []})]
    assert latest_todo_write(history) == (1, [])


def test_missing_status_means_pending_and_name_variants_match() -> None:
    params = {"todos": [{"content": "x"}]}
    for name in ("todo_write", "TodoWrite", "todowrite"):
        assert latest_todo_write([_todo_call("c1", params, name=name)]) == (
            0,
            [Todo(id="1", content="x")],
        )


def test_last_of_several_calls_in_one_entry_wins() -> None:
    entry = IContent(
        speaker="ai",
        blocks=(
            ToolCallBlock(id="a", name="todo_write", parameters={"todos": [{"content": "one"}]}),
            ToolCallBlock(id="b", name="todo_write", parameters={"todos": [{"content": "two"}]}),
        ),
    )
    assert latest_todo_write([entry]) == (0, [Todo(id="1", content="two")])
