"""The daemon packs what a compaction let go of (``Session.pack_left``) once the session has
been idle a moment after it, not while the request waits: the answer's time is the agent's,
the memory is the daemon's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hdcontext.edges.daemon import packing

from .conftest import start, stop

FILE = "".join(f"{i:6}\tsome words of the project's code, line {i}\n" for i in range(400))


def _conversation(reads: int) -> list[dict[str, Any]]:
    """The agent reads one file again and again: each read makes the one before it stale."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read big.py"}]
    for k in range(reads):
        call = f"toolu_{k}"
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Read",
                        "input": {"file_path": "/w/big.py"},
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call, "content": FILE}],
            }
        )
    return messages


async def test_what_a_compaction_let_go_of_is_packed_once_the_session_is_idle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(packing, "PACK_AFTER_S", 0.2)
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "done"}])
    try:
        body = {"model": "claude-sonnet-4-6", "max_tokens": 9, "messages": _conversation(3)}
        headers = {"x-api-key": "k", "anthropic-version": "2023-06-01"}
        async with (
            aiohttp.ClientSession() as client,
            client.post(running.url + "/v1/messages", json=body, headers=headers) as response,
        ):
            assert response.status == 200
        (status,) = await running.statuses()
        session = running.daemon.registry.loaded_session(status["sessionId"])
        assert session is not None

        def packed() -> list[int]:
            held = session.history._transcript  # what the history holds, packed or not
            return [seq for seq, blob in enumerate(held) if blob[:1] == b"x"]

        assert packed() == []  # not while the request was answered
        for _ in range(100):
            if packed():
                break
            await asyncio.sleep(0.05)
        assert len(packed()) == 2  # the two reads the last one made stale
        assert [b.count(b"line 399") for b in session.history.transcript_json][2::2] == [1, 1, 1]
    finally:
        await stop(running, runners)
