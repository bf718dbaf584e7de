"""A session's state besides its history, and its JSON form (what the store persists)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .compression.types import Todo


@dataclass(frozen=True)
class SessionState:
    overrides: dict[str, object]
    version: int
    saved_tokens: int
    dirty: bool
    todos: tuple[Todo, ...]
    todos_since: int
    writes: dict[str, int]

    def to_json(self) -> str:
        return json.dumps(
            {
                "overrides": self.overrides,
                "version": self.version,
                "savedTokens": self.saved_tokens,
                "dirty": self.dirty,
                "todos": [_todo_to_json(t) for t in self.todos],
                "todosSince": self.todos_since,
                "writes": self.writes,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> SessionState:
        raw = json.loads(text)
        return cls(
            overrides=dict(raw["overrides"]),
            version=int(raw["version"]),
            saved_tokens=int(raw["savedTokens"]),
            dirty=bool(raw["dirty"]),
            todos=tuple(_todo_from_json(t) for t in raw["todos"]),
            todos_since=int(raw["todosSince"]),
            writes={str(k): int(v) for k, v in raw["writes"].items()},
        )


def _todo_to_json(todo: Todo) -> dict[str, Any]:
    return {
        "id": todo.id,
        "content": todo.content,
        "status": todo.status,
        "subtasks": [_todo_to_json(t) for t in todo.subtasks],
    }


def _todo_from_json(raw: dict[str, Any]) -> Todo:
    return Todo(
        id=str(raw["id"]),
        content=str(raw["content"]),
        status=str(raw["status"]),
        subtasks=tuple(_todo_from_json(t) for t in raw.get("subtasks", [])),
    )
