"""Every message of the real Claude Code sessions in the shared data is one the proxy carries.

A block or key the proxy's conversion leaves out sends the whole request upstream as it came,
and every later request of the conversation with it: nothing is saved from there on, and only
the log and the savings page say so. The newest sessions here (Claude Code 2.1, Claude Opus
4.7) answer each ``tool_use`` with its ``caller`` and load deferred tools with ToolSearch
(``tool_reference`` parts); until the proxy carried both, those sessions went through untouched
from their first tool call. Each record's message is checked as the proxy checks a request's
messages, and read as it reads them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hdcontext.edges.proxy.anthropic import AnthropicApi
from hdcontext.edges.proxy.api import Unsupported

TRANSCRIPTS = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts"
LOGS = sorted(
    p
    for folder in ("claude-code", "claude-code-log")
    for p in (TRANSCRIPTS / folder).rglob("*.jsonl")
)
API = AnthropicApi()


def messages_of(path: Path) -> list[dict[str, Any]]:
    """Each user or assistant record's message, as the Messages API reads it."""
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        if (
            isinstance(message, dict)
            and message.get("role") in ("user", "assistant")
            and message.get("content") is not None
        ):
            out.append({"role": message["role"], "content": message["content"]})
    return out


def test_the_shared_data_holds_the_newest_shapes() -> None:
    """The sessions this guards: callers and tool references are among them."""
    text = "".join(p.read_text(encoding="utf-8", errors="replace") for p in LOGS)
    assert len(LOGS) >= 80
    assert '"caller":{"type":"direct"}' in text
    assert '"type":"tool_reference"' in text


@pytest.mark.parametrize("path", LOGS, ids=lambda p: str(p.relative_to(TRANSCRIPTS))[:80])
def test_every_message_of_a_real_session_is_carried(path: Path) -> None:
    for k, message in enumerate(messages_of(path)):
        try:
            API.check([message], k)
        except Unsupported as exc:
            pytest.fail(f"{path.name}: {exc}")
        API.import_messages([message])
