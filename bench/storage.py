"""``python -m bench.storage``: what a request's commit costs in each store, and what a replica
that did not serve the last turn pays to load the session again.

A conversation of ``--turns`` turns (each a read of a 40-line file, its result and a short
answer) goes through the proxy's path in one process: ``Daemon.sync_compact`` with the commit
written while the request would go upstream (``save_later``), then the call's usage told, as
the proxy does for each request. Timed per request: the whole of it (the sync, the compaction,
the lock, the commit on disk, the usage), and the store's ``save`` alone. Stores: a storage
folder as the proxy opens it (``synchronous=NORMAL``) and as an editor's daemon does
(``FULL``), and a PostgreSQL database as the proxy opens it (``synchronous_commit`` off) and as
the daemon does (on), on a throwaway cluster with fsync on (``--url`` names another database);
then the database with the turns alternating between two daemons, each loading the session
again that the other changed. p50 and p95 in milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.proxy.run import _NoEditor
from hdcontext.edges.storage.location import Location
from hdcontext.edges.storage.records import SaveOp


def _entries(turns: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"speaker": "human", "blocks": [{"type": "text", "text": "fix the files"}]}
    ]
    for k in range(turns):
        path = f"/work/file_{k % 5}.py"
        content = "\n".join(f"{i}\tline {i} of {path}, turn {k}" for i in range(40))
        call = {"type": "tool_call", "id": f"c{k}", "name": "read_file"}
        out.append({"speaker": "ai", "blocks": [{**call, "parameters": {"file_path": path}}]})
        response = {"type": "tool_response", "callId": f"c{k}", "toolName": "read_file"}
        out.append({"speaker": "tool", "blocks": [{**response, "result": content}]})
        out.append({"speaker": "ai", "blocks": [{"type": "text", "text": f"read {path}"}]})
    return out


async def _daemon(where: Location, durable: bool) -> tuple[Daemon, list[float]]:
    daemon = Daemon(_NoEditor(), where, IdeSettings(), durable=durable, notifies=False)
    await daemon.start()
    saves: list[float] = []
    store: Any = daemon.store
    save = store.save

    async def timed(op: SaveOp) -> int:
        started = time.perf_counter()
        try:
            version: int = await save(op)
            return version
        finally:
            saves.append((time.perf_counter() - started) * 1000)

    store.save = timed
    return daemon, saves


async def _run(
    where: Location, durable: bool, turns: int, replicas: int
) -> tuple[list[float], list[float]]:
    made = [await _daemon(where, durable) for _ in range(replicas)]
    requests: list[float] = []
    conversation = _entries(turns)
    try:
        for k in range(1, turns + 1):
            daemon, _ = made[k % replicas]
            params = {"sessionId": "bench", "entries": conversation[: 1 + 3 * k - 1]}
            started = time.perf_counter()
            await daemon.sync_compact(params, save_later=True)
            saving = daemon.registry.saving("bench")
            if saving is not None:
                await saving
            usage = {"sessionId": "bench", "inputTokens": 100, "cacheReadTokens": 900}
            await daemon.note_usage(usage)
            requests.append((time.perf_counter() - started) * 1000)
    finally:
        for daemon, _ in made:
            await daemon.shutdown()
            await daemon.store.close()
    saves = [s for _, timed in made for s in timed]
    return requests[5:], saves[5:]  # the first turns warm the interpreter up


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _row(name: str, requests: list[float], saves: list[float]) -> str:
    return (
        f"{name:<44} {statistics.median(requests):7.2f} {_p(requests, 0.95):7.2f}"
        f" {statistics.median(saves):7.2f} {_p(saves, 0.95):7.2f}"
    )


async def main(url: str | None, turns: int) -> None:
    cluster: Any = None
    if url is None:
        from tests import postgres_cluster

        reason = postgres_cluster.why_not()
        if reason is not None:
            raise SystemExit(f"bench.storage: {reason}; or give --url")
        cluster = postgres_cluster.start(fsync=True)
    new_database: Callable[[], str] = (
        cluster.new_database if cluster is not None else (lambda: str(url))
    )
    try:
        print(f"{turns} turns; per request: all of it, then the store's save (ms)")
        print(f"{'store':<44} {'p50':>7} {'p95':>7} {'save50':>7} {'save95':>7}")
        with tempfile.TemporaryDirectory() as tmp:
            cases = [
                ("folder, as the proxy (NORMAL)", Location(folder=Path(tmp) / "a"), False, 1),
                ("folder, as an editor's daemon (FULL)", Location(folder=Path(tmp) / "b"), True, 1),
                (
                    "database, as the proxy (sync commit off)",
                    Location(url=new_database()),
                    False,
                    1,
                ),
                ("database, as an editor's daemon", Location(url=new_database()), True, 1),
                ("database, two replicas taking turns", Location(url=new_database()), False, 2),
            ]
            for name, where, durable, replicas in cases:
                requests, saves = await _run(where, durable, turns, replicas)
                print(_row(name, requests, saves), flush=True)
    finally:
        if cluster is not None:
            cluster.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", help="a PostgreSQL database to use (default: a throwaway one)")
    parser.add_argument("--turns", type=int, default=60)
    args = parser.parse_args()
    asyncio.run(main(args.url, args.turns))
