"""What the daemon keeps of each call for ``hdcontext stats``, over its real transport: a row
per model call with the daemon's charge, filled in by the usage the client reports; a row per
retrieve; nothing of a request that failed (the row is part of the session's save); and
``hdcontext stats`` reading it all while the daemon runs, without its lock."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from hdcontext.edges.storage.sqlite_reader import ReadOnly

from .harness import read_pair, start_daemon, text
from .test_summarizer import _long_session

CONVERSATION = [
    text("human", "What does a.py print?"),
    *read_pair("r1", "/w/a.py", "print(1)\n" * 40),
    text("ai", "It prints 1, forty times."),
]


def stats_json(storage: Path, *args: str) -> dict[str, object]:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hdcontext",
            "stats",
            "--storage-dir",
            str(storage),
            "--json",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


async def test_each_call_usage_and_retrieve_is_kept_and_stats_reads_it_live(
    storage: Path,
) -> None:
    async with start_daemon(storage) as d:
        sync = {"sessionId": "chat", "entries": CONVERSATION, "model": "claude-sonnet-4-5"}
        await d.call("history/sync", sync)
        await d.call("history/compact", {"sessionId": "chat", "at": 1_764_000_000_000})
        await d.call(
            "history/usage",
            {
                "sessionId": "chat",
                "inputTokens": 20_000,
                "cacheReadTokens": 0,
                "cacheWriteTokens": 18_000,
                "outputTokens": 300,
                "at": 1_764_000_001_000,
            },
        )
        more = [*CONVERSATION, text("human", "And b.py?")]
        await d.call("history/sync", {**sync, "entries": more})
        await d.call("history/compact", {"sessionId": "chat", "at": 1_764_000_060_000})
        await d.call("history/retrieve", {"sessionId": "chat", "callId": "r1"})
        error = await d.fails("history/retrieve", {"sessionId": "chat", "callId": "nope"})
        assert error.code == -32003

        with ReadOnly(storage) as db:  # beside the running daemon
            rows = db.calls("chat")
        assert [(r.kind, r.model, r.at) for r in rows] == [
            ("model", "claude-sonnet-4-5", 1_764_000_000_000),
            ("model", "claude-sonnet-4-5", 1_764_000_060_000),
            ("retrieve", None, rows[2].at),
        ]
        first, second, _ = rows
        assert first.billed is not None and (first.billed.input, first.billed.write) == (
            20_000,
            18_000,
        )
        assert first.billed.write_1h is None  # the wire does not say
        assert second.billed is None  # no usage reported (yet)
        assert first.charge is not None and first.off is not None
        assert first.charge.total > 0 and first.off.total >= first.charge.total

        report = await asyncio.to_thread(stats_json, storage, "--session", "chat")
        session = report["session"]
        assert isinstance(session, dict)
        assert session["calls"] == 2 and session["fetchedBack"] == 1
        calls = session["callDetails"]
        assert [c["basis"] for c in calls] == ["billed", "estimated"]
        billed = (2_000 * 3 + 18_000 * 3.75 + 300 * 15) / 1e6  # Sonnet 4.5's published prices
        assert abs(calls[0]["cost"] - billed) < 1e-6


async def test_a_request_that_fails_leaves_no_call_behind(storage: Path) -> None:
    async with start_daemon(storage) as d:  # no summarizer: one-shot cannot compress
        await _long_session(d, "s", strategy="one-shot")
        error = await d.fails("history/compact", {"sessionId": "s"})
        assert error.code == -32002
        with ReadOnly(storage) as db:
            assert db.calls("s") == []
        await d.call(
            "history/setOverride",
            {"sessionId": "s", "key": "compression.strategy", "value": "high-density"},
        )
        await d.call("history/compact", {"sessionId": "s"})
        with ReadOnly(storage) as db:
            assert [r.kind for r in db.calls("s")] == ["model"]
