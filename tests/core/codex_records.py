"""Codex rollout records, built as the Codex CLI writes them, for importer and density tests."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable
from typing import Any

from hdcontext.core.content import IContent
from hdcontext.formats.conversation import Conversation
from hdcontext.formats.importers import load

Record = dict[str, Any]
ROOT = "/home/dev/proj"

_CLOCK = itertools.count()


def _record(kind: str, payload: Any) -> Record:
    n = next(_CLOCK)
    stamp = f"2025-11-06T06:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
    return {"timestamp": stamp, "type": kind, "payload": payload}


def meta(cwd: str = ROOT, version: str = "0.55.0", **extra: Any) -> Record:
    payload = {"id": "019a57e9", "cwd": cwd, "originator": "codex_cli_rs", "cli_version": version}
    return _record("session_meta", {**payload, **extra})


def turn(cwd: str = ROOT, model: str = "gpt-5-codex") -> Record:
    return _record("turn_context", {"cwd": cwd, "approval_policy": "on-request", "model": model})


def item(payload: dict[str, Any]) -> Record:
    return _record("response_item", payload)


def event(kind: str, **payload: Any) -> Record:
    return _record("event_msg", {"type": kind, **payload})


def message(role: str, text: str, **extra: Any) -> Record:
    part = "output_text" if role == "assistant" else "input_text"
    return item(
        {"type": "message", "role": role, "content": [{"type": part, "text": text}], **extra}
    )


def context(cwd: str = ROOT) -> Record:
    return message("user", f"<environment_context>\n  <cwd>{cwd}</cwd>\n</environment_context>")


def reasoning(summary: str = "**Reading the file**", secret: str = "gAAAAABp") -> Record:
    parts = [{"type": "summary_text", "text": summary}] if summary else []
    return item(
        {"type": "reasoning", "summary": parts, "content": None, "encrypted_content": secret}
    )


def call(call_id: str, name: str, arguments: dict[str, Any]) -> Record:
    written = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))  # as Codex's
    payload = {"type": "function_call", "name": name, "arguments": written}
    return item({**payload, "call_id": call_id})


def output(call_id: str, text: str) -> Record:
    return item({"type": "function_call_output", "call_id": call_id, "output": text})


def patch(call_id: str, text: str) -> Record:
    payload = {"type": "custom_tool_call", "status": "completed", "call_id": call_id}
    return item({**payload, "name": "apply_patch", "input": text})


def patch_output(call_id: str, text: str) -> Record:
    return item({"type": "custom_tool_call_output", "call_id": call_id, "output": text})


def envelope(text: str, exit_code: int = 0) -> str:
    """What ``shell`` and ``apply_patch`` answer when the command ran."""
    return json.dumps(
        {"output": text, "metadata": {"exit_code": exit_code, "duration_seconds": 0.0}},
        separators=(",", ":"),
    )


def headed(text: str, exit_code: int = 0) -> str:
    """What ``shell_command`` answers."""
    return f"Exit code: {exit_code}\nWall time: 0 seconds\nOutput:\n{text}"


def chunk(text: str, exit_code: int | None = 0) -> str:
    """What ``exec_command`` answers (``None``: the process still runs)."""
    ended = (
        f"Process exited with code {exit_code}"
        if exit_code is not None
        else "Process running with session ID 51677"
    )
    return (
        f"Chunk ID: b727c7\nWall time: 0.0509 seconds\n{ended}\n"
        f"Original token count: 14\nOutput:\n{text}"
    )


def jsonl(records: Iterable[Record]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def rollout(*records: Record) -> Conversation:
    """The conversation the importer reads from these records (after a session_meta and the
    harness's context, unless the first record is a session_meta)."""
    head = [] if records and records[0]["type"] == "session_meta" else [meta(), context()]
    conversation, fmt = load(jsonl([*head, *records]))
    assert fmt == "codex"
    return conversation


def entries(*records: Record) -> tuple[IContent, ...]:
    return rollout(*records).entries
