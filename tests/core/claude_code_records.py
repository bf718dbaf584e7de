"""Claude Code log records, built as Claude Code writes them, for importer and CLI tests."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from typing import Any

_COUNTER = itertools.count()

Record = dict[str, Any]


def _base(kind: str, cwd: str, sidechain: bool, agent: str | None) -> Record:
    n = next(_COUNTER)
    record: Record = {
        "parentUuid": None,
        "isSidechain": sidechain,
        "userType": "external",
        "cwd": cwd,
        "sessionId": "5e55-10n",
        "version": "2.0.42",
        "type": kind,
        "uuid": f"uuid-{n}",
        "timestamp": f"2025-11-17T11:{n // 60 % 60:02d}:{n % 60:02d}.000Z",
    }
    if agent is not None:
        record["agentId"] = agent
    return record


def user(
    content: str | list[Any],
    cwd: str = "/w/proj",
    sidechain: bool = False,
    agent: str | None = None,
    **extra: Any,
) -> Record:
    record = _base("user", cwd, sidechain, agent)
    record["message"] = {"role": "user", "content": content}
    record.update(extra)
    return record


def assistant(
    message_id: str,
    *blocks: dict[str, Any],
    cwd: str = "/w/proj",
    sidechain: bool = False,
    agent: str | None = None,
) -> Record:
    record = _base("assistant", cwd, sidechain, agent)
    record["message"] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(blocks),
    }
    return record


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str = "Read", **params: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": params}


def tool_result(call_id: str, content: str = "ok", is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error}


def results(*call_ids: str, **kw: Any) -> Record:
    return user([tool_result(c) for c in call_ids], **kw)


SUMMARY: Record = {"type": "summary", "summary": "Fixing the tests", "leafUuid": "uuid-x"}
SNAPSHOT: Record = {
    "type": "file-history-snapshot",
    "messageId": "m-0",
    "snapshot": {"messageId": "m-0", "trackedFileBackups": {}, "timestamp": "2026-02-16T18:47Z"},
    "isSnapshotUpdate": False,
}
PERMISSION_MODE: Record = {
    "type": "permission-mode",
    "permissionMode": "acceptEdits",
    "sessionId": "5e55-10n",
}


def jsonl(records: Iterable[Record | str]) -> str:
    """One record a line; a string is written as it is (a bad line)."""
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in records)


def session(cwd: str = "/w/proj") -> list[Record]:
    """A small main thread: a question, a read, an edit, an answer."""
    return [
        user("fix a.py", cwd=cwd),
        assistant("m-1", text("Reading it."), tool_use("r1", file_path="a.py"), cwd=cwd),
        results("r1", cwd=cwd),
        assistant("m-2", tool_use("e1", "Edit", file_path="a.py", old_string="x"), cwd=cwd),
        results("e1", cwd=cwd),
        assistant("m-3", text("Fixed."), cwd=cwd),
    ]
