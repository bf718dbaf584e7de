"""The scripted model behind the agent tests: it works on ``notes.txt`` in a workspace over
several turns with real tool calls (read the file, edit it, run a command, read it again,
then answer), in Claude Code's tool names, whatever the proxy pruned from what it sends.

Which step comes next is read from the newest tool result's call id (``toolu_step<N>_…``),
which is always in the request: it is the conversation's last entry. A request with no tools
(a client's side request: a title, a summary) gets a plain short answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

_STEP = re.compile(r"step(\d+)_")
DONE_TEXT = "All done: notes.txt now says beta."


def last_result_step(body: dict[str, Any]) -> int | None:
    """The step of the newest tool result in an Anthropic, OpenAI chat, Responses API or
    Gemini request, if any."""
    if "input" in body:
        return _last_output_step(body["input"])
    if "contents" in body:
        return _last_response_step(body["contents"])
    messages = body.get("messages") or []
    for message in reversed(messages):
        ids: list[str] = []
        if message.get("role") == "tool":
            ids.append(str(message.get("tool_call_id")))
        content = message.get("content")
        if isinstance(content, list):
            ids += [
                str(b.get("tool_use_id"))
                for b in content
                if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
        if message.get("role") == "assistant":
            return None
        for call_id in reversed(ids):
            found = _STEP.search(call_id)
            if found:
                return int(found.group(1))
    return None


def _last_output_step(items: list[Any]) -> int | None:
    for item in reversed(items):
        kind = item.get("type") or "message"
        if kind.endswith("_output"):
            found = _STEP.search(str(item.get("call_id")))
            if found:
                return int(found.group(1))
        elif kind != "message" or item.get("role") == "assistant":
            return None
    return None


def _last_response_step(contents: list[Any]) -> int | None:
    for content in reversed(contents):
        if content.get("role") == "model":
            return None
        for part in reversed(content.get("parts") or []):
            response = part.get("functionResponse") if isinstance(part, dict) else None
            found = _STEP.search(str(response.get("id"))) if isinstance(response, dict) else None
            if found:
                return int(found.group(1))
    return None


def tool_names(body: dict[str, Any]) -> set[str]:
    names = set()
    for tool in body.get("tools") or []:
        for declared in tool.get("functionDeclarations") or []:  # Gemini's
            names.add(declared.get("name"))
        names.add(tool.get("name") or (tool.get("function") or {}).get("name"))
    return names


def notes_workspace(tmp_path: Path) -> tuple[Path, Path, Path]:
    """What the script works on: a workspace holding ``notes.txt`` (its first line ``alpha``,
    then 300 more) and ``spec.pdf`` (two pages), the notes, and an empty home for the agent;
    as (workspace, notes, home)."""
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "spec.pdf").write_bytes(PDF)
    notes = workspace / "notes.txt"
    notes.write_text(
        "alpha\n" + "".join(f"line {i}: words about the project\n" for i in range(300))
    )
    home = tmp_path / "home"
    home.mkdir()
    return workspace, notes, home


SEARCH = {"query": "select:WebSearch,WebFetch", "max_results": 2}
"""Claude Code's ToolSearch loading two deferred tools: its result is ``tool_reference``s."""
PDF = (
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >> endobj\n"
    b"3 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] >> endobj\n"
    b"4 0 obj << /Type /Page /Parent 2 0 R /MediaBox [0 0 100 100] >> endobj\n"
    b"trailer << /Root 1 0 R >>\n%%EOF\n"
)
"""A PDF of two blank pages: Claude Code's Read answers it with a ``document`` part."""


def notes_script(
    workspace: Path, api_of_today: bool = False
) -> Callable[[dict[str, Any]], list[dict[str, Any]]]:
    """The script; ``api_of_today``: answered as the API answers Claude Code now, each
    ``tool_use`` with its ``caller``, and the first step loading deferred tools (ToolSearch)
    and reading a PDF beside the notes, so that every later request holds ``tool_reference``
    and ``document`` parts."""
    notes = str(workspace / "notes.txt")
    besides: list[dict[str, Any]] = []  # the first step's other calls
    if api_of_today:
        besides = [
            {"type": "tool_use", "name": "ToolSearch", "input": SEARCH},
            {
                "type": "tool_use",
                "name": "Read",
                "input": {"file_path": str(workspace / "spec.pdf")},
            },
        ]
    steps: list[list[dict[str, Any]]] = [
        [{"type": "tool_use", "name": "Read", "input": {"file_path": notes}}, *besides],
        [
            {
                "type": "tool_use",
                "name": "Edit",
                "input": {"file_path": notes, "old_string": "alpha", "new_string": "beta"},
            }
        ],
        [
            {
                "type": "tool_use",
                "name": "Bash",
                "input": {"command": "wc -l notes.txt", "description": "Count lines"},
            }
        ],
        [{"type": "tool_use", "name": "Read", "input": {"file_path": notes}}],
        [{"type": "text", "text": DONE_TEXT}],
    ]

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        if "Read" not in tool_names(body):
            return [{"type": "text", "text": "Notes"}]
        done = last_result_step(body)
        step = 0 if done is None else done + 1
        blocks = steps[min(step, len(steps) - 1)]
        out = []
        for k, block in enumerate(blocks):
            if block["type"] == "tool_use":
                block = {**block, "id": f"toolu_step{step}_{k}"}
                if api_of_today:
                    block["caller"] = {"type": "direct"}
            out.append(block)
        return out

    return script
