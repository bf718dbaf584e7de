"""Protocol v2 on the wire (issue 13): delta replies and ``history/sync``, at 1× and 10×.

In one fresh daemon per scale, over stdio, the daemons alive at once and timed turn by turn in
alternation, with the context limit high enough that compression never runs:

* a session appended to one turn at a time and compacted with ``reply: "delta"`` against
  the revision it holds (the compact round trip a client pays before each model call);
* a session that a client keeps resending whole, as a chat panel's model does: each call
  ``history/sync`` of the conversation with one new turn, then a delta compact.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from contextlib import ExitStack
from typing import Any

from hdcontext.core.content import dump_entries

from .daemon import SESSION, load_session, running
from .latency import CONTEXT_LIMIT, WARMUP, summary
from .rpc import Client, Reply
from .transcripts import Transcript, repeated, turn

TURNS = 40
SYNCED = "synced"


def measure(
    t: Transcript, scales: Sequence[int] = (1, 10), turns: int = TURNS
) -> list[dict[str, Any]]:
    """Each scale in a daemon of its own, all alive at once and timed turn by turn in
    alternation, so that a slow spell of the machine falls on every scale alike (the ratios
    are the figures that matter)."""
    conversations = [dump_entries(repeated(t.entries, times)) for times in scales]
    timings: list[dict[str, list[float]]] = [
        {"append": [], "delta": [], "delta_bytes": [], "sync": [], "sync_compact": []}
        for _ in scales
    ]
    with ExitStack() as stack:
        clients = [stack.enter_context(running()) for _ in scales]
        for client, entries in zip(clients, conversations, strict=True):
            load_session(client, entries, CONTEXT_LIMIT)
            client.request(
                "history/sync",
                {"sessionId": SYNCED, "entries": list(entries), "contextLimit": CONTEXT_LIMIT},
            )
        revisions: list[dict[str, str | None]] = [{SESSION: None, SYNCED: None} for _ in scales]
        resent = [list(entries) for entries in conversations]
        for k in range(WARMUP + turns):
            for n, client in enumerate(clients):
                kept = timings[n] if k >= WARMUP else None
                appended = client.request(
                    "history/append", {"sessionId": SESSION, "entries": turn(k, "/bench")}
                )
                compacted = _delta(client, SESSION, revisions[n])
                if kept is not None:
                    kept["append"].append(appended.seconds)
                    kept["delta"].append(compacted.seconds)
                    kept["delta_bytes"].append(compacted.size)
            for n, client in enumerate(clients):
                kept = timings[n] if k >= WARMUP else None
                resent[n].extend(turn(k, "/bench"))
                synced = client.request("history/sync", {"sessionId": SYNCED, "entries": resent[n]})
                if synced.result["appended"] != 2:
                    raise RuntimeError(f"sync appended {synced.result['appended']}, not 2")
                compacted = _delta(client, SYNCED, revisions[n])
                if kept is not None:
                    kept["sync"].append(synced.seconds)
                    kept["sync_compact"].append(compacted.seconds)
    return [
        {
            "times": times,
            "entries": len(entries),
            "json_bytes": len(json.dumps(entries, ensure_ascii=False).encode("utf-8")),
            "append": summary(kept["append"]),
            "compact_delta": summary(kept["delta"]),
            "compact_delta_reply_bytes": sorted(kept["delta_bytes"])[len(kept["delta_bytes"]) // 2],
            "sync": summary(kept["sync"]),
            "sync_then_compact_delta": summary(kept["sync_compact"]),
        }
        for times, entries, kept in zip(scales, conversations, timings, strict=True)
    ]


def _delta(client: Client, session: str, revisions: dict[str, str | None]) -> Reply:
    """A compact with ``reply: "delta"`` against the revision the client holds."""
    params: dict[str, Any] = {"sessionId": session, "reply": "delta"}
    if revisions[session] is not None:
        params["base"] = revisions[session]
    compacted = client.request("history/compact", params)
    revisions[session] = compacted.result["revision"]
    return compacted


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
