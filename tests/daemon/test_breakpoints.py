"""Where the client puts its prompt-cache breakpoints (``cache.breakpoints``), over the real
transport: in a full reply and in a delta, within ``cache.maxBreakpoints``, which a bad value
does not change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from lsprotocol import types

from .harness import start_daemon


def _turn(n: int, reads: int) -> list[dict[str, Any]]:
    """A model turn of ``reads`` parallel reads and their results (2 × reads + 1 blocks)."""
    calls = [
        {
            "type": "tool_call",
            "id": f"c{n}-{k}",
            "name": "Read",
            "parameters": {"file_path": f"/w/f{k}.py"},
        }
        for k in range(reads)
    ]
    results = [
        {
            "type": "tool_response",
            "callId": f"c{n}-{k}",
            "toolName": "Read",
            "result": f"x = {k}\n" * 40,
        }
        for k in range(reads)
    ]
    return [
        {"speaker": "ai", "blocks": [{"type": "text", "text": "Reading."}, *calls]},
        {"speaker": "tool", "blocks": results},
    ]


async def test_breakpoints_in_full_and_delta_replies(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await d.call("history/open", {"sessionId": "s", "model": "claude-sonnet-4"})
        question = [{"speaker": "human", "blocks": [{"type": "text", "text": "Look around."}]}]
        await d.call("history/append", {"sessionId": "s", "entries": question})
        first = await d.call("history/compact", {"sessionId": "s", "at": 1_000})
        assert first["cache"]["breakpoints"] == [0]
        # 25 blocks in one turn: the last entry's lookback (20) would not find the first
        # request's entry, so a second breakpoint goes where that request ended.
        await d.call("history/append", {"sessionId": "s", "entries": _turn(1, 12)})
        second = await d.call(
            "history/compact",
            {"sessionId": "s", "at": 2_000, "reply": "delta", "base": first["revision"]},
        )
        assert second["cache"]["breakpoints"] == [0, 2]
        assert second["delta"]["keep"] == 1 and len(second["delta"]["entries"]) == 2
        # Nothing new: the same revision, an empty delta, the breakpoints all the same.
        third = await d.call(
            "history/compact",
            {"sessionId": "s", "at": 3_000, "reply": "delta", "base": second["revision"]},
        )
        assert third["revision"] == second["revision"]
        assert third["delta"] == {"base": second["revision"], "keep": 3, "entries": []}
        assert third["cache"]["breakpoints"] == [2]


async def test_max_breakpoints_is_validated_and_followed(storage: Path) -> None:
    async with start_daemon(storage, init_settings={"cache.maxBreakpoints": 1}) as d:
        await d.call("history/open", {"sessionId": "s", "model": "claude-sonnet-4"})
        question = [{"speaker": "human", "blocks": [{"type": "text", "text": "Look around."}]}]
        await d.call("history/append", {"sessionId": "s", "entries": question})
        await d.call("history/compact", {"sessionId": "s", "at": 1_000})
        await d.call("history/append", {"sessionId": "s", "entries": _turn(1, 12)})
        # One breakpoint only: the client puts its own on the last message.
        only = await d.call("history/compact", {"sessionId": "s", "at": 2_000})
        assert only["cache"]["breakpoints"] == [2]
        for bad in (0, 5, "2", 2.5, True):
            d.client.set_configuration({"cache": {"maxBreakpoints": bad}}, section="hdcontext")
            d.client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=None)
            )
            settings = await d.call("history/settings", {"sessionId": "s"})
            assert settings["values"]["cache.maxBreakpoints"] == 1, bad
            assert any("cache.maxBreakpoints" in w and "from 1 to 4" in w for w in d.warnings())
