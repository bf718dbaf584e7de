"""Latency and memory of the daemon over its real stdio transport.

For the largest real session, at 1× and at 10× (the session repeated with fresh call ids),
in a fresh daemon each: append one turn, time ``history/compact``, then time ``history/get``
of the same view (the cost of moving the history alone). The context limit is set high
enough that compression never triggers, so what is timed is the continuous path that runs
before every model call: settle, optimize, answer. Memory: the daemon's RSS when idle and
with the session loaded, against the session's JSON size; idle is after a one-turn warm-up
session, so that the modules and the tokenizer every session needs are already loaded.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Sequence
from typing import Any

from hdcontext.core.content import dump_entries

from .daemon import SESSION, idle_rss, load_session, running
from .rpc import rss_bytes
from .transcripts import Transcript, repeated, turn

CONTEXT_LIMIT = 10_000_000
WARMUP = 3
TURNS = 60


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


def summary(seconds: Sequence[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p95_ms": round(percentile(ms, 0.95), 2),
        "min_ms": round(min(ms), 2),
        "max_ms": round(max(ms), 2),
    }


def measure(t: Transcript, times: int, turns: int = TURNS) -> dict[str, Any]:
    entries = dump_entries(repeated(t.entries, times))
    json_size = len(json.dumps(entries, ensure_ascii=False).encode("utf-8"))
    compact: list[float] = []
    get: list[float] = []
    append: list[float] = []
    reply_bytes: list[int] = []
    with running() as client:
        cold, idle = idle_rss(client)
        load = load_session(client, entries, CONTEXT_LIMIT)
        loaded = rss_bytes(client.pid)
        for k in range(WARMUP + turns):
            appended = client.request(
                "history/append", {"sessionId": SESSION, "entries": turn(k, "/bench")}
            )
            compacted = client.request("history/compact", {"sessionId": SESSION})
            got = client.request("history/get", {"sessionId": SESSION, "view": "curated"})
            if compacted.result["compression"] is not None:
                raise RuntimeError("compression ran: raise CONTEXT_LIMIT")
            if k >= WARMUP:
                append.append(appended.seconds)
                compact.append(compacted.seconds)
                get.append(got.seconds)
                reply_bytes.append(compacted.size)
        final = rss_bytes(client.pid)
    return {
        "times": times,
        "entries": len(entries),
        "json_bytes": json_size,
        "load_ms": {k: round(r.seconds * 1000, 1) for k, r in load.items()},
        "turns": turns,
        "append": summary(append),
        "compact": summary(compact),
        "get": summary(get),
        "compact_reply_bytes": int(statistics.median(reply_bytes)),
        "rss_started_bytes": cold,
        "rss_idle_bytes": idle,
        "rss_loaded_bytes": loaded,
        "rss_after_turns_bytes": final,
    }


def combine(t: Transcript, one: dict[str, Any], ten: dict[str, Any]) -> dict[str, Any]:
    """The two scales side by side, with the issue's three targets."""
    work_1 = one["compact"]["p50_ms"] - one["get"]["p50_ms"]
    work_10 = ten["compact"]["p50_ms"] - ten["get"]["p50_ms"]
    rss_ratio = (ten["rss_loaded_bytes"] - ten["rss_idle_bytes"]) / ten["json_bytes"]
    return {
        "session": t.name,
        "context_limit": CONTEXT_LIMIT,
        "scales": {"1x": one, "10x": ten},
        "targets": {
            "compact_p50_ms_1x": {"value": one["compact"]["p50_ms"], "target": 15.0},
            "per_turn_work_ratio_10x_over_1x": {
                "value": round(work_10 / work_1, 2) if work_1 > 0 else None,
                "work_1x_ms": round(work_1, 2),
                "work_10x_ms": round(work_10, 2),
                "target": 2.0,
            },
            "rss_over_json_10x": {"value": round(rss_ratio, 2), "target": 3.0},
        },
    }
