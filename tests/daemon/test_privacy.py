"""Conversation content never reaches the daemon's log, whatever happens to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .harness import SERVER_MODULE, start_daemon, text, tool_response

MARKER = "PRIVATE-7f3a9c"


async def test_no_conversation_content_in_the_log(storage: Path) -> None:
    async def answer(params: dict[str, Any]) -> dict[str, str]:
        return {"text": f"<state_snapshot>{MARKER} summary</state_snapshot>"}

    command = [*SERVER_MODULE, "--log-level", "DEBUG"]
    async with start_daemon(storage, command=command, summarize=answer) as d:
        await d.call("history/open", {"sessionId": "p", "contextLimit": 500})
        await d.call(
            "history/setOverride",
            {"sessionId": "p", "key": "compression.strategy", "value": "middle-out"},
        )
        await d.call(
            "history/append",
            {
                "sessionId": "p",
                "entries": [
                    text("human" if i % 2 == 0 else "ai", f"{MARKER} turn {i} " + "secret " * 20)
                    for i in range(14)
                ],
            },
        )
        await d.call("history/compact", {"sessionId": "p"})
        await d.call("history/get", {"sessionId": "p", "view": "transcript"})
        bad = [text("human", MARKER), tool_response("x", MARKER, MARKER)]
        bad[1]["blocks"][0].pop("callId")
        error = await d.fails("history/append", {"sessionId": "p", "entries": bad})
        assert error.code == -32602 and MARKER not in error.message
        await d.fails("history/setOverride", {"sessionId": "p", "key": MARKER, "value": MARKER})
        await d.fails("history/get", {"sessionId": MARKER})
    log = d.stderr.decode("utf-8", "replace")
    assert "storage at" in log, log  # the log is captured, and the daemon does log
    assert MARKER not in log, log
