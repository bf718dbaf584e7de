"""Protocol v2 on the wire (issue 13): delta replies and ``history/sync``, at 1× and 10×.

In one fresh daemon per scale, over stdio, with the context limit high enough that
compression never runs:

* a session appended to one turn at a time and compacted with ``reply: "delta"`` against
  the revision it holds (the compact round trip a client pays before each model call);
* a session that a client keeps resending whole, as a chat panel's model does: each call
  ``history/sync`` of the conversation with one new turn, then a delta compact.
"""

from __future__ import annotations

import json
from typing import Any

from hdcontext.core.content import dump_entries

from .daemon import SESSION, load_session, running
from .latency import CONTEXT_LIMIT, WARMUP, summary
from .transcripts import Transcript, repeated, turn

TURNS = 40
SYNCED = "synced"


def measure(t: Transcript, times: int, turns: int = TURNS) -> dict[str, Any]:
    entries = dump_entries(repeated(t.entries, times))
    append: list[float] = []
    delta: list[float] = []
    delta_bytes: list[int] = []
    sync: list[float] = []
    sync_compact: list[float] = []
    with running() as client:
        load_session(client, entries, CONTEXT_LIMIT)
        revision = None
        for k in range(WARMUP + turns):
            appended = client.request(
                "history/append", {"sessionId": SESSION, "entries": turn(k, "/bench")}
            )
            params: dict[str, Any] = {"sessionId": SESSION, "reply": "delta"}
            if revision is not None:
                params["base"] = revision
            compacted = client.request("history/compact", params)
            revision = compacted.result["revision"]
            if k >= WARMUP:
                append.append(appended.seconds)
                delta.append(compacted.seconds)
                delta_bytes.append(compacted.size)

        conversation = list(entries)
        client.request(
            "history/sync",
            {"sessionId": SYNCED, "entries": conversation, "contextLimit": CONTEXT_LIMIT},
        )
        revision = None
        for k in range(WARMUP + turns):
            conversation.extend(turn(k, "/bench"))
            synced = client.request("history/sync", {"sessionId": SYNCED, "entries": conversation})
            if synced.result["appended"] != 2:
                raise RuntimeError(f"sync appended {synced.result['appended']}, not 2")
            params = {"sessionId": SYNCED, "reply": "delta"}
            if revision is not None:
                params["base"] = revision
            compacted = client.request("history/compact", params)
            revision = compacted.result["revision"]
            if k >= WARMUP:
                sync.append(synced.seconds)
                sync_compact.append(compacted.seconds)
    return {
        "times": times,
        "entries": len(entries),
        "json_bytes": len(json.dumps(entries, ensure_ascii=False).encode("utf-8")),
        "append": summary(append),
        "compact_delta": summary(delta),
        "compact_delta_reply_bytes": sorted(delta_bytes)[len(delta_bytes) // 2],
        "sync": summary(sync),
        "sync_then_compact_delta": summary(sync_compact),
    }


def combine(one: dict[str, Any], ten: dict[str, Any]) -> dict[str, Any]:
    def p50(scale: dict[str, Any], key: str) -> float:
        return float(scale[key]["p50_ms"])

    append_and_compact = p50(one, "append") + p50(one, "compact_delta")
    return {
        "scales": {"1x": one, "10x": ten},
        "targets": {
            "compact_delta_10x_over_1x": {
                "value": round(p50(ten, "compact_delta") / p50(one, "compact_delta"), 2),
                "target": 2.0,
            },
            "sync_1x_over_append_plus_compact_1x": {
                "value": round(p50(one, "sync") / append_and_compact, 2),
                "target": 2.0,
            },
            "sync_10x_over_1x": {
                "value": round(p50(ten, "sync") / p50(one, "sync"), 2),
                "target": 3.0,
            },
        },
    }
