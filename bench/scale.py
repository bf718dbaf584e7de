"""Many large sessions in one daemon (issue 13): memory, a compact among them, a restart.

Fifty sessions of about a million tokens each (the longest real session repeated with fresh
call ids until it holds that many tokens), in one daemon over stdio:

* RSS above idle against the sessions' JSON size, once all are loaded and compacted;
* the compact round trip (``reply: "delta"``) of one of them after a one-turn append, against
  the same session alone in a second daemon, the two timed turn by turn in alternation (so
  that whatever else the machine does weighs on both alike);
* a restart on the same storage: the time to the ``initialize`` reply, and to the replies of
  ``history/open`` for all fifty (sessions load on first use, not on open).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hdcontext.core.content import dump_entries
from hdcontext.core.tokens import count_entry

from .daemon import idle_rss, serve_command
from .latency import CONTEXT_LIMIT
from .rpc import Client, rss_bytes
from .transcripts import Transcript, repeated, turn

SESSIONS = 50
TOKENS = 1_000_000
TURNS = 20


def _start(storage: Path, base: Path) -> Client:
    stderr = (base / "stderr.log").open("ab")
    client = Client.start(serve_command(), base, stderr)
    client.request(
        "initialize",
        {
            "processId": None,
            "rootUri": (base / "workspace").as_uri(),
            "capabilities": {},
            "initializationOptions": {"storageDir": str(storage)},
        },
    )
    client.notify("initialized", {})
    return client


def _compacts(clients: list[Client], session: str, turns: int) -> list[list[float]]:
    """Each client's compact round trips, one turn of each in turn."""
    revisions: list[str | None] = [None] * len(clients)
    out: list[list[float]] = [[] for _ in clients]
    for k in range(turns + 2):
        for n, client in enumerate(clients):
            entries = turn(k, "/bench")
            client.request("history/append", {"sessionId": session, "entries": entries})
            params: dict[str, Any] = {"sessionId": session, "reply": "delta"}
            if revisions[n] is not None:
                params["base"] = revisions[n]
            reply = client.request("history/compact", params)
            revisions[n] = reply.result["revision"]
            if k >= 2:
                out[n].append(reply.seconds * 1000)
    return out


def _load(client: Client, session: str, entries: list[dict[str, Any]]) -> None:
    client.request("history/open", {"sessionId": session, "contextLimit": CONTEXT_LIMIT})
    client.request("history/append", {"sessionId": session, "entries": entries})
    client.request("history/compact", {"sessionId": session})


def run(t: Transcript, sessions: int = SESSIONS, tokens: int = TOKENS) -> dict[str, Any]:
    per_copy = sum(count_entry(e) for e in t.entries)
    times = max(1, round(tokens / per_copy))
    one = dump_entries(repeated(t.entries, times))
    json_bytes = len(json.dumps(one, ensure_ascii=False).encode("utf-8"))
    result: dict[str, Any] = {
        "session": t.name,
        "sessions": sessions,
        "copies": times,
        "tokens_each": per_copy * times,
        "json_bytes_each": json_bytes,
    }
    with tempfile.TemporaryDirectory(prefix="hdcontext-scale-") as scratch:
        base = Path(scratch)
        (base / "workspace").mkdir()
        storage = base / "storage"
        alone = _start(base / "alone", base)
        client = _start(storage, base)
        try:
            _load(alone, "s0", one)
            _, idle = idle_rss(client)
            started = time.perf_counter()
            for i in range(sessions):
                entries = one if i == 0 else dump_entries(repeated(t.entries, times, f"~s{i}"))
                _load(client, f"s{i}", entries)
                print(f"  loaded {i + 1}/{sessions}", file=sys.stderr, end="\r", flush=True)
            result["load_seconds"] = round(time.perf_counter() - started, 1)
            loaded = rss_bytes(client.pid)
            alone_ms, many_ms = _compacts([alone, client], "s0", TURNS)
        finally:
            client.close()
            alone.close()
        result["rss_idle_bytes"] = idle
        result["rss_loaded_bytes"] = loaded
        result["rss_over_json"] = round((loaded - idle) / (json_bytes * sessions), 2)
        result["compact_alone_p50_ms"] = round(statistics.median(alone_ms), 2)
        result["compact_among_p50_ms"] = round(statistics.median(many_ms), 2)
        result["compact_ratio"] = round(
            result["compact_among_p50_ms"] / result["compact_alone_p50_ms"], 2
        )

        started = time.perf_counter()
        client = _start(storage, base)
        try:
            result["restart_first_reply_s"] = round(time.perf_counter() - started, 2)
            for i in range(sessions):
                client.request("history/open", {"sessionId": f"s{i}"})
            result["restart_all_open_s"] = round(time.perf_counter() - started, 2)
        finally:
            client.close()
    print(file=sys.stderr)
    result["targets"] = {
        "rss_over_json": {"value": result["rss_over_json"], "target": 3.0},
        "compact_among_over_alone": {"value": result["compact_ratio"], "target": 1.2},
        "restart_all_open_seconds": {"value": result["restart_all_open_s"], "target": 10.0},
    }
    return result
