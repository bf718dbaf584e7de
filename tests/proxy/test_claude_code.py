"""Claude Code, a real agent nobody here wrote, through the proxy.

Claude Code's CLI in print mode (``-p``), pointed at the proxy by ``ANTHROPIC_BASE_URL`` with a
fake key, works on a temporary workspace; the proxy's upstream is a scripted fake Anthropic
server (agent_script.py) that streams its answers, as the real API does for Claude Code, and
asks for real tool calls: read ``notes.txt``, edit it, run ``wc -l``, read it again, answer.
A recorder (tap.py) between Claude Code and the proxy keeps what Claude Code sent.

The fake reports that it caches nothing, as a provider that is not caching would, so the
daemon's schedule applies its edits at once: the first read, stale after the second, is gone
from the last request.

Run twice: as the fake answered before, and as the API answers Claude Code now (each
``tool_use`` with its ``caller``, which Claude Code sends back; a ToolSearch loading deferred
tools, whose result is ``tool_reference`` parts; a PDF read, a ``document`` part). Before the
proxy carried these, every request of such a conversation went upstream as it came.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hdcontext.core.validity import payload_problems, problems
from hdcontext.edges.proxy.anthropic import AnthropicApi

from . import claude_cli
from .agent_script import DONE_TEXT, notes_script, notes_workspace
from .conftest import start, stop
from .tap import start_tap
from .test_adapters import conversation

RUN_TIMEOUT_S = 240


def _message_marks(body: dict[str, Any]) -> list[tuple[int, int]]:
    """(message, block) of every cache_control in the messages."""
    marks = []
    for i, message in enumerate(body["messages"]):
        content = message["content"]
        if isinstance(content, list):
            marks += [(i, j) for j, b in enumerate(content) if b.get("cache_control")]
    return marks


def _own_marks(body: dict[str, Any]) -> list[Any]:
    """The cache_control marks of system and tools, as JSON for comparison."""
    return [
        (field, k, b.get("cache_control"))
        for field in ("system", "tools")
        for k, b in enumerate(body.get(field) or [])
        if isinstance(b, dict)
    ]


@pytest.mark.parametrize("api_of_today", [False, True], ids=["plain", "api-of-today"])
async def test_claude_code_through_the_proxy(
    claude_code: Path, tmp_path: Path, api_of_today: bool
) -> None:
    workspace, notes, home = notes_workspace(tmp_path)
    running, runners = await start(tmp_path, notes_script(workspace, api_of_today))
    running.fake.anthropic_usage = {"input_tokens": 3000, "output_tokens": 5}
    tap, tap_runner, tap_url = await start_tap(running.url)
    runners.append(tap_runner)
    try:
        code, out, err = await claude_cli.run(
            claude_code,
            workspace,
            home,
            tap_url,
            "-p",
            "Change alpha to beta in notes.txt, check the line count, and show me the file.",
            timeout_s=RUN_TIMEOUT_S,
        )
        statuses = await running.statuses()
    finally:
        await stop(running, runners)

    # Claude Code finished, and did the work.
    assert code == 0, err.decode(errors="replace")[-2000:]
    result = json.loads(out)
    assert result["is_error"] is False
    assert result["result"] == DONE_TEXT
    assert notes.read_text().startswith("beta\n")

    sent = [body for path, body in tap.sent if path == "/v1/messages"]
    received = [s.body for s in running.fake.api_requests]
    assert len(received) == len(sent) >= 5
    for original, body in zip(sent, received, strict=True):
        # Provider-valid, as sent and after import.
        assert payload_problems("anthropic", body) == []
        assert problems(conversation(AnthropicApi(), body)) == []
        # The daemon's breakpoints, and none of the client's in the messages: the last block
        # of the last message carries one, at most two (cache.maxBreakpoints) in all.
        marks = _message_marks(body)
        last = len(body["messages"]) - 1
        assert (last, len(body["messages"][last]["content"]) - 1) in marks
        assert 1 <= len(marks) <= 2
        # Everything else as Claude Code sent it: system, tools (their breakpoints too),
        # model, parameters.
        assert {k: v for k, v in body.items() if k != "messages"} == {
            k: v for k, v in original.items() if k != "messages"
        }
        assert _own_marks(body) == _own_marks(original)

    # Later requests are smaller: the first read of notes.txt, stale once it was read again,
    # is gone from the last request, which Claude Code sent with it.
    def ids(body: dict[str, Any]) -> set[str]:
        return {
            b["id"]
            for m in body["messages"]
            if isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_use"
        }

    assert "toolu_step0_0" in ids(sent[-1])
    assert "toolu_step0_0" not in ids(received[-1])
    assert len(json.dumps(received[-1])) < len(json.dumps(sent[-1]))

    if api_of_today:
        # Claude Code sent the callers back and the deferred tools' references, and the
        # upstream got both as they were, on every call the proxy kept.
        def kept(body: dict[str, Any], kind: str) -> list[Any]:
            return [
                b
                for m in body["messages"]
                if isinstance(m["content"], list)
                for b in m["content"]
                if b.get("type") == kind
            ]

        assert all("caller" in call for call in kept(sent[-1], "tool_use"))
        for original, body in zip(sent, received, strict=True):
            calls = {c["id"]: c for c in kept(original, "tool_use")}
            for call in kept(body, "tool_use"):
                assert call["caller"] == calls[call["id"]]["caller"] == {"type": "direct"}
            loads = [
                r for r in kept(original, "tool_result") if r["tool_use_id"] == "toolu_step0_1"
            ]
            assert loads == [r for r in kept(body, "tool_result") if r in loads]
        (search,) = [
            r for r in kept(sent[-1], "tool_result") if r["tool_use_id"] == "toolu_step0_1"
        ]
        assert [p["type"] for p in search["content"]] == ["tool_reference", "tool_reference"]
        assert search in kept(received[-1], "tool_result")
        # Claude Code read the PDF as its text and a document part, and the conversation
        # holding it was still carried (the stale read above is gone).
        (pdf,) = [r for r in kept(sent[-1], "tool_result") if r["tool_use_id"] == "toolu_step0_2"]
        assert [p["type"] for p in pdf["content"]] == ["text", "document"]

    # Its usage reached the session, one call per request.
    (status,) = [s for s in statuses if s["usage"]["calls"]]
    assert status["sessionId"].startswith("proxy-anthropic-")
    assert status["usage"]["calls"] == len(received)
    assert status["savedTokens"] > 0
