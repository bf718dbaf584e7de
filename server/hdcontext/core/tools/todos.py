"""The agent's todo list, from the two places it can come from (REQ-HD-011.2).

A client may push the list (``history/todos``): that is wire input, so a bad shape is an error
that names its JSON path. Or the daemon finds it in the history, in the agent's latest
``todo_write`` call: that is whatever the model produced, so a shape we cannot read is
skipped, never an error (as REQ-HD-013.5 asks of tool parameters in general).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from ..content import ContentError, IContent, ToolCallBlock, ToolResponseBlock, validation_messages

# Tool names agents give their todo writer, compared after ``_tool_key``: llxprt's
# ``todo_write``, Claude Code's ``TodoWrite``, opencode's ``todowrite``.
_TODO_WRITE_KEY = "todowrite"


@dataclass(frozen=True)
class Todo:
    """One item of the agent's todo list (a subtask has its own): what compression keeps
    in view, wherever the list came from."""

    id: str
    content: str
    status: str = "pending"
    subtasks: tuple[Todo, ...] = ()

    @property
    def active(self) -> bool:
        return self.status not in ("completed", "cancelled", "done")


class _Subtask(BaseModel):
    """A subtask: llxprt's have an id and content only, so status and id are optional."""

    model_config = ConfigDict(extra="ignore", frozen=True, coerce_numbers_to_str=True)

    id: str | None = None
    content: str
    status: str = "pending"
    subtasks: list[_Subtask] = Field(default_factory=list)


class _WireTodo(BaseModel):
    """PROTOCOL.md ``history/todos``: the client is ours to hold to the documented shape."""

    model_config = ConfigDict(extra="ignore", frozen=True, coerce_numbers_to_str=True)

    id: str
    content: str
    status: str
    subtasks: list[_Subtask] = Field(default_factory=list)


class _ToolTodo(BaseModel):
    """A todo as agents write it: Claude Code has no id, and a missing status means pending."""

    model_config = ConfigDict(extra="ignore", frozen=True, coerce_numbers_to_str=True)

    id: str | None = None
    content: str
    status: str = "pending"
    subtasks: list[_Subtask] = Field(default_factory=list)


def _status(raw: str) -> str:
    # ``Todo.active`` compares lower-case names; "Completed" from a model means completed.
    return raw.strip().lower() or "pending"


def _subtasks(items: Sequence[_Subtask], parent_id: str) -> tuple[Todo, ...]:
    # Ids for subtasks without one follow the parent's, so they stay unique and stable.
    out: list[Todo] = []
    for pos, item in enumerate(items, start=1):
        sub_id = item.id if item.id else f"{parent_id}.{pos}"
        out.append(
            Todo(
                id=sub_id,
                content=item.content,
                status=_status(item.status),
                subtasks=_subtasks(item.subtasks, sub_id),
            )
        )
    return tuple(out)


def _todo(item: _WireTodo | _ToolTodo, fallback_id: str) -> Todo:
    todo_id = item.id if item.id else fallback_id
    return Todo(
        id=todo_id,
        content=item.content,
        status=_status(item.status),
        subtasks=_subtasks(item.subtasks, todo_id),
    )


_WIRE_TODOS: TypeAdapter[list[_WireTodo]] = TypeAdapter(list[_WireTodo])
_TOOL_TODOS: TypeAdapter[list[_ToolTodo]] = TypeAdapter(list[_ToolTodo])


def parse_todos(raw: object, path: str = "todos") -> list[Todo]:
    """Validate a ``history/todos`` list; ContentError (a ValueError) names each bad path,
    e.g. ``todos[1].content: field required``, so the edge can answer -32602 as is."""
    try:
        items = _WIRE_TODOS.validate_python(raw)
    except ValidationError as exc:
        raise ContentError(validation_messages(exc, path)) from None
    return [_todo(item, str(pos)) for pos, item in enumerate(items, start=1)]


def _tool_key(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def is_todo_write(name: str) -> bool:
    """Whether a tool is an agent's todo writer (each call carries the whole list)."""
    return _tool_key(name) == _TODO_WRITE_KEY


def _todos_from_parameters(parameters: object) -> list[Todo] | None:
    """The todos of one todo-write call, or None when the model's parameters are unusable."""
    if not isinstance(parameters, Mapping):
        return None
    raw = parameters.get("todos")
    if isinstance(raw, str):
        # Models sometimes send the list as a JSON string; the tool itself accepted it.
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    if not isinstance(raw, list):
        return None
    try:
        items = _TOOL_TODOS.validate_python(raw)
    except ValidationError:
        return None
    return [_todo(item, str(pos)) for pos, item in enumerate(items, start=1)]


def _failed_calls(history: Sequence[IContent]) -> set[str]:
    # A todo write the tool rejected did not change the list the agent works from.
    return {
        block.call_id
        for entry in history
        for block in entry.blocks
        if isinstance(block, ToolResponseBlock) and block.error
    }


def latest_todo_write(history: Sequence[IContent]) -> tuple[int, list[Todo]] | None:
    """The todo list of the newest readable todo-write call: (its entry's index, todos).

    Each call replaces the whole list, so the newest one is the state. A call whose
    parameters cannot be read, or whose response is an error, is passed over for the one
    before it. A call not yet answered counts: the agent has already committed to it.
    """
    failed: set[str] | None = None
    for index in range(len(history) - 1, -1, -1):
        calls = [
            block
            for block in history[index].blocks
            if isinstance(block, ToolCallBlock) and _tool_key(block.name) == _TODO_WRITE_KEY
        ]
        for call in reversed(calls):
            if failed is None:
                failed = _failed_calls(history)
            if call.id in failed:
                continue
            todos = _todos_from_parameters(call.parameters)
            if todos is not None:
                return index, todos
    return None


@dataclass(frozen=True)
class TodoList:
    """The list the client pushed last, with the transcript's length when it came: the newer
    of it and the history's latest todo-write call is the agent's list (REQ-HD-011.2)."""

    todos: tuple[Todo, ...] = ()
    since: int = 0
    """Entries in the transcript when the client pushed the list."""

    def active(self, transcript: Sequence[IContent]) -> list[Todo]:
        """The agent's todos still to do, as of ``transcript``."""
        todos: Sequence[Todo] = self.todos
        latest = latest_todo_write(transcript)
        if latest is not None and latest[0] >= self.since:
            todos = latest[1]
        return [t for t in todos if t.active]
