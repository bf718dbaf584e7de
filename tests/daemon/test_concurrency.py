"""Sessions interleave; requests for one session are served one at a time, in order."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from .harness import start_daemon, text

GUARD_S = 30  # a guard against hanging, not a measurement


async def test_a_slow_summary_blocks_neither_other_sessions_nor_order(storage: Path) -> None:
    started = asyncio.Event()
    release = asyncio.Event()

    async def slow_answer(params: dict[str, Any]) -> dict[str, str]:
        started.set()
        await release.wait()
        return {"text": "<state_snapshot>slow summary</state_snapshot>"}

    async with start_daemon(storage, summarize=slow_answer) as d:
        await d.call("history/open", {"sessionId": "slow", "contextLimit": 600})
        await d.call(
            "history/setOverride",
            {"sessionId": "slow", "key": "compression.strategy", "value": "middle-out"},
        )
        await d.call(
            "history/append",
            {
                "sessionId": "slow",
                "entries": [
                    text("human" if i % 2 == 0 else "ai", f"turn {i} " + "talk " * 30)
                    for i in range(16)
                ],
            },
        )
        compact = asyncio.ensure_future(d.call("history/compact", {"sessionId": "slow"}))
        await asyncio.wait_for(started.wait(), GUARD_S)

        # While "slow" waits for its summary, another session is served completely.
        await asyncio.wait_for(d.call("history/open", {"sessionId": "fast"}), GUARD_S)
        for i in range(5):
            status = await asyncio.wait_for(
                d.call(
                    "history/append", {"sessionId": "fast", "entries": [text("human", f"m{i}")]}
                ),
                GUARD_S,
            )
        assert status["entryCount"] == 5
        fast = await asyncio.wait_for(d.call("history/compact", {"sessionId": "fast"}), GUARD_S)
        assert fast["status"]["entryCount"] == 5
        listed = await asyncio.wait_for(d.call("history/list", {}), GUARD_S)
        assert {s["sessionId"] for s in listed["sessions"]} == {"slow", "fast"}
        assert not compact.done()

        # An append to "slow" waits its turn behind the compaction, then lands after it.
        late = asyncio.ensure_future(
            d.call(
                "history/append", {"sessionId": "slow", "entries": [text("human", "arrived late")]}
            )
        )
        release.set()
        result = await asyncio.wait_for(compact, GUARD_S)
        appended = await asyncio.wait_for(late, GUARD_S)
        assert result["compression"]["strategy"] == "middle-out"
        assert appended["version"] == result["status"]["version"] + 1
        raw = await d.call("history/get", {"sessionId": "slow", "view": "raw"})
        assert raw["entries"][-1]["blocks"][0]["text"] == "arrived late"
        assert "slow summary" in str(raw["entries"])
