"""The replay on projects the schedule was not tuned on: leave one project out (issue 10).

The schedule has two constants chosen on the replay corpus (``cache/ledger.py``): how many
calls a batch is planned to pay back over at most (``HORIZON_CAP``) and how much a batch may
overrun what the session saved (``BATCH_ALLOWANCE``). Figures measured with constants tuned on
the same sessions flatter them. Here each project (the conversations that share a workspace,
sub-agent threads with their session) is left out in turn: the constants are chosen on the
other projects (the cheapest grid point with no session there more than 1% dearer than density
off), and the project left out is priced with them. The sum over the projects is what the
schedule would have done on sessions it had never seen, next to what the shipped constants do
on all of them.

The default of ``compression.density.maskRetention`` (how many of the newest tool outputs
masking never takes) is chosen the same way, each project priced with the retention chosen on
the others.

``python -m bench.holdout`` prints the table and writes ``bench/results/holdout.json``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from hdcontext.core.cache import ledger
from hdcontext.core.settings import MASK_RETENTION

from . import table
from .billing import MAIN
from .outcome import Replayed
from .replay import OFF, RECENCY, replay
from .transcripts import Transcript, corpus, find

CAPS = (10.0, 20.0, 40.0, 80.0)
ALLOWANCES = (0.0, 0.0025, 0.005, 0.01, 0.02)
ROWS: dict[str, dict[str, object]] = {"default": {}, "default + recency": RECENCY}
RETENTIONS = (10, 5, 3, 2, 1, 0)
"""``compression.density.maskRetention`` values tried, the most cautious first."""
DEARER = 1.01

G = TypeVar("G")
Grid = tuple[float, float]
"""(horizon cap, batch allowance)."""


@contextmanager
def constants(cap: float, allowance: float) -> Iterator[None]:
    """The ledger's constants set for the calls made inside (the replay runs in-process)."""
    saved = ledger.HORIZON_CAP, ledger.BATCH_ALLOWANCE
    ledger.HORIZON_CAP, ledger.BATCH_ALLOWANCE = cap, allowance
    try:
        yield
    finally:
        ledger.HORIZON_CAP, ledger.BATCH_ALLOWANCE = saved


def project(t: Transcript) -> str:
    """Conversations of one project share their workspace (a session's sub-agents too)."""
    return f"{t.fmt}:{t.root}"


def _cost(r: Replayed) -> float:
    return r.cost[MAIN]


def _choose(costs: Mapping[G, Sequence[float]], off: Sequence[float], train: Sequence[int]) -> G:
    """The grid point with the lowest cost on ``train`` among those that keep every train
    session within 1% of density off (the shipped constants' own rule); ties go to the
    first, the most cautious."""

    def key(g: G) -> tuple[bool, float]:
        dearer = any(costs[g][i] > DEARER * off[i] for i in train)
        return dearer, sum(costs[g][i] for i in train)

    return min(costs, key=key)


def _held_out(
    costs: Mapping[G, Sequence[float]],
    off: Sequence[float],
    groups: Mapping[str, Sequence[int]],
    shipped: G,
    label: Callable[[G], str],
) -> dict[str, Any]:
    """Each project priced with the grid point chosen on the others; beside it, the shipped
    point and the best one in sample."""
    n = len(off)
    held_out = [0.0] * n
    chosen: dict[str, G] = {}
    for group, members in groups.items():
        train = [i for i in range(n) if i not in set(members)]
        pick = _choose(costs, off, train)
        chosen[group] = pick
        for i in members:
            held_out[i] = costs[pick][i]
    best = _choose(costs, off, range(n))
    return {
        "shipped": _figures(costs[shipped], off),
        "held_out": _figures(held_out, off),
        "best_in_sample": {**_figures(costs[best], off), "grid": label(best)},
        "picks": {label(g): k for g, k in Counter(chosen.values()).items()},
    }


def run(found: Sequence[Transcript]) -> dict[str, Any]:
    sessions = corpus(found)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(sessions):
        groups[project(t)].append(i)
    off = [_cost(asyncio.run(replay(t, OFF))) for t in sessions]
    shipped: Grid = (ledger.HORIZON_CAP, ledger.BATCH_ALLOWANCE)
    out: dict[str, Any] = {
        "sessions": len(sessions),
        "projects": len(groups),
        "grid": {"horizon_cap": CAPS, "batch_allowance": ALLOWANCES},
        "shipped": {"horizon_cap": shipped[0], "batch_allowance": shipped[1]},
        "rows": {},
    }
    for name, settings in ROWS.items():
        costs: dict[Grid, list[float]] = {}
        for cap, allowance in itertools.product(CAPS, ALLOWANCES):
            with constants(cap, allowance):
                costs[(cap, allowance)] = [
                    _cost(asyncio.run(replay(t, settings))) for t in sessions
                ]
        out["rows"][name] = _held_out(costs, off, groups, shipped, lambda g: f"{g[0]:g}, {g[1]:g}")
    # maskRetention, the default settings otherwise.
    kept: dict[int, list[float]] = {}
    for retention in RETENTIONS:
        settings = {"compression.density.maskRetention": retention}
        kept[retention] = [_cost(asyncio.run(replay(t, settings))) for t in sessions]
    out["mask_retention"] = {
        "grid": RETENTIONS,
        "default": MASK_RETENTION,
        **_held_out(kept, off, groups, MASK_RETENTION, str),
    }
    return out


def _figures(costs: Sequence[float], off: Sequence[float]) -> dict[str, Any]:
    ratios = [c / o if o else 1.0 for c, o in zip(costs, off, strict=True)]
    return {
        "anthropic": sum(costs) / max(1.0, sum(off)),
        "dearer_1pct": sum(1 for x in ratios if x > DEARER),
        "worst": max(ratios, default=1.0),
    }


def main() -> int:
    started = time.perf_counter()
    result = run(find().transcripts)
    print(table.holdout(result))
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    path = results / "holdout.json"
    path.write_text(json.dumps(result, indent=1, default=list))
    print(f"\n(wrote {path} in {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
