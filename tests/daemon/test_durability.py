"""A daemon killed with SIGKILL at any moment restarts with every acknowledged entry."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from .harness import Daemon, read_pair, start_daemon, text, write_pair

BURSTS = 150
KILL_AFTER = 60


async def entries(d: Daemon, view: str) -> list[dict[str, Any]]:
    result = await d.call("history/get", {"sessionId": "s", "view": view})
    return list(result["entries"])


def _burst(i: int) -> list[dict[str, Any]]:
    """Append number ``i``: one to three entries, each naming its append and position."""
    return [
        text("human" if k % 2 == 0 else "ai", f"append {i} entry {k}") for k in range(i % 3 + 1)
    ]


async def test_sigkill_loses_no_acknowledged_entry(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await d.call("history/open", {"sessionId": "s", "contextLimit": 100000})
        await d.call(
            "history/setOverride",
            {"sessionId": "s", "key": "compression.density.recencyPruning", "value": True},
        )
        await d.call(
            "history/todos",
            {
                "sessionId": "s",
                "todos": [{"id": "1", "content": "survive a crash", "status": "in_progress"}],
            },
        )
        await d.call(
            "history/append",
            {
                "sessionId": "s",
                "entries": [
                    text("human", "edit a.py"),
                    *read_pair("r1", "/w/a.py", "old"),
                    *write_pair("w1", "/w/a.py", "new"),
                ],
            },
        )
        compacted = await d.call("history/compact", {"sessionId": "s"})
        # The working view now differs from the transcript: both must survive.
        assert compacted["density"]["removals"] > 0
        base_raw = await entries(d, "raw")
        base_transcript = await entries(d, "transcript")

        # Many appends in flight; SIGKILL once some of them have been acknowledged.
        acknowledged: list[int] = []
        enough = asyncio.Event()

        async def append(i: int) -> None:
            await d.call("history/append", {"sessionId": "s", "entries": _burst(i)})
            acknowledged.append(i)
            if len(acknowledged) >= KILL_AFTER:
                enough.set()

        tasks = [asyncio.ensure_future(append(i)) for i in range(BURSTS)]
        await asyncio.wait_for(enough.wait(), 60)
        await d.kill()
        await asyncio.gather(*tasks, return_exceptions=True)
        acked = sorted(acknowledged)

    async def answer(params: dict[str, Any]) -> dict[str, str]:
        return {"text": "<state_snapshot>summary</state_snapshot>"}

    async with start_daemon(storage, summarize=answer) as d:
        transcript = await entries(d, "transcript")
        raw = await d.call("history/get", {"sessionId": "s", "view": "raw"})
        settings = await d.call("history/settings", {"sessionId": "s"})
        # The todo list survived as well: a compression asks the model to explain it.
        await d.call(
            "history/setOverride",
            {"sessionId": "s", "key": "compression.strategy", "value": "one-shot"},
        )
        await d.call("history/setOverride", {"sessionId": "s", "key": "contextLimit", "value": 400})
        await d.call("history/compact", {"sessionId": "s"})
        assert "survive a crash" in json.dumps(d.summarize_calls[0]["messages"])

    # Requests for one session are served in order, so what survived is appends 0..m-1,
    # whole, with m at least the number acknowledged.
    survived = transcript[len(base_transcript) :]
    texts = [e["blocks"][0]["text"] for e in survived]
    m = 0
    position = 0
    while position < len(texts):
        expected = [b["blocks"][0]["text"] for b in _burst(m)]
        assert texts[position : position + len(expected)] == expected, "an append was torn"
        position += len(expected)
        m += 1
    assert acked == list(range(len(acked))) and m >= len(acked)
    acked_entries = sum(len(_burst(i)) for i in acked)
    assert len(survived) >= acked_entries
    assert transcript[: len(base_transcript)] == base_transcript

    # The working view, overrides and the counts survive too.
    assert raw["entries"] == base_raw + survived
    assert raw["status"]["contextLimit"] == 100000
    assert settings["values"]["compression.density.recencyPruning"] is True
    print(
        f"\nkill-and-restart: {len(acked)} appends ({acked_entries} entries) acknowledged "
        f"before SIGKILL; {m} appends ({len(survived)} entries) found after restart; "
        f"transcript {len(transcript)} entries"
    )
