"""Conversation content never reaches the daemon's log, whatever happens to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .harness import SERVER_MODULE, start_daemon, text, tool_response
from .raw import dumps, frame, stdio_daemon

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


async def test_malformed_messages_never_bring_their_content_to_the_log(storage: Path) -> None:
    # pygls logged a message with a wrong "jsonrpc" whole (WARNING), the params of a message it
    # could not structure (ERROR), and exception texts that quote values.
    secret = {"entries": [MARKER], "text": MARKER, "command": MARKER}
    bodies = [
        {"jsonrpc": "1.0", "id": 1, "method": "history/append", "params": secret},
        {"jsonrpc": "2.0", "method": "textDocument/didSave", "params": {"textDocument": secret}},
        {"jsonrpc": "2.0", "id": 2, "method": "workspace/executeCommand", "params": secret},
        {"jsonrpc": "2.0", "id": 3, "method": "$/cancelRequest", "params": secret},
        {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": [MARKER]}},
        {"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": secret},
        {"jsonrpc": "2.0", "id": 5, "method": MARKER, "params": secret},
        {"jsonrpc": "2.0", "id": 6, "result": secret},
        {"jsonrpc": "2.0", "id": 7, "error": secret},
    ]
    async with stdio_daemon("--log-level", "DEBUG") as d:
        assert "result" in await d.peer.initialize(storage)
        for body in bodies:
            d.peer.send_bytes(frame(dumps(body)))
        d.peer.send_bytes(
            frame(b'{"jsonrpc":"2.0","id":8,"method":"x","params":"' + MARKER.encode())
        )
        assert await d.peer.call("history/list", {}) == {"sessions": []}
        assert (await d.peer.request("shutdown"))["result"] is None
        d.peer.notify("exit")
        assert await d.proc.wait() == 0
    log = d.log()
    assert "storage at" in log, log
    assert MARKER not in log, log
