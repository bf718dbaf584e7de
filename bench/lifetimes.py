"""The cache's lifetime on projects its constants were not chosen on: leave one project out.

``cache.ttl: auto`` and ``cache.refresh`` decide from priors about a session's rhythm
(``core/cache/rhythm.py``: the chance that a gap is a pause, the chance that an idle session
comes back) and spend at most what the session saved plus an allowance
(``ledger.LIFETIME_ALLOWANCE``). Each grid point of those constants prices every conversation
under the three lifetime rows (``ttl auto``, refresh calls with the default lifetime, both);
each project is then priced with the grid point chosen on the other projects (the cheapest sum
of the three rows with no conversation of theirs more than 1% dearer than sending everything
in any of them). The sum over the projects is what the lifetime's rules would have done on
sessions they had never seen, next to what the shipped constants do on all of them.

``python -m bench.lifetimes`` prints the table and writes ``bench/results/lifetimes.json``.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hdcontext.core.cache import ledger, rhythm

from .billing import MAIN
from .holdout import DEARER, project
from .replay import OFF, ROWS, replay
from .transcripts import Transcript, corpus, find

LIFETIME_ROWS = (
    "default, ttl auto",
    "default, refresh calls (5m)",
    "default, ttl auto + refresh calls",
)
PAUSE_PRIORS = (0.01, 0.03, 0.1)
RETURN_PRIORS = (0.1, 0.3, 0.5)
ALLOWANCES = (0.0, 0.005, 0.01)

Grid = tuple[float, float, float]
"""(the pause prior, the return prior of a session that waits on a person, the allowance)."""


@contextmanager
def constants(grid: Grid) -> Iterator[None]:
    """The rhythm's priors and the allowance set for the calls made inside."""
    pause, back, allowance = grid
    saved = rhythm.PAUSE_PRIOR, dict(rhythm.RETURN_PRIOR), ledger.LIFETIME_ALLOWANCE
    rhythm.PAUSE_PRIOR = pause
    rhythm.RETURN_PRIOR = {**rhythm.RETURN_PRIOR, "person": back, "unknown": back}
    ledger.LIFETIME_ALLOWANCE = allowance
    try:
        yield
    finally:
        rhythm.PAUSE_PRIOR, rhythm.RETURN_PRIOR, ledger.LIFETIME_ALLOWANCE = saved


def _label(g: Grid) -> str:
    return f"{g[0]:g}, {g[1]:g}, {g[2]:g}"


def _costs(sessions: Sequence[Transcript], grid: Grid) -> dict[str, list[float]]:
    with constants(grid):
        return {
            row: [asyncio.run(replay(t, ROWS[row])).cost[MAIN] for t in sessions]
            for row in LIFETIME_ROWS
        }


def _choose(
    costs: Mapping[Grid, Mapping[str, Sequence[float]]],
    off: Sequence[float],
    train: Sequence[int],
) -> Grid:
    """The cheapest grid point on ``train`` (the three rows summed) among those that keep
    every train conversation within 1% of sending everything in every row; ties go to the
    first, the most cautious."""

    def key(g: Grid) -> tuple[bool, float]:
        rows = costs[g]
        dearer = any(rows[r][i] > DEARER * off[i] for r in LIFETIME_ROWS for i in train)
        return dearer, sum(rows[r][i] for r in LIFETIME_ROWS for i in train)

    return min(costs, key=key)


def _figures(costs: Sequence[float], off: Sequence[float]) -> dict[str, Any]:
    ratios = [c / o if o else 1.0 for c, o in zip(costs, off, strict=True)]
    return {
        "anthropic": sum(costs) / max(1.0, sum(off)),
        "dearer_1pct": sum(1 for x in ratios if x > DEARER),
        "worst": max(ratios, default=1.0),
    }


def run(found: Sequence[Transcript]) -> dict[str, Any]:
    sessions = corpus(found)
    groups: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(sessions):
        groups[project(t)].append(i)
    off = [asyncio.run(replay(t, OFF)).cost[MAIN] for t in sessions]
    shipped: Grid = (
        rhythm.PAUSE_PRIOR,
        rhythm.RETURN_PRIOR["person"],
        ledger.LIFETIME_ALLOWANCE,
    )
    points = sorted({*itertools.product(PAUSE_PRIORS, RETURN_PRIORS, ALLOWANCES), shipped})
    costs = {g: _costs(sessions, g) for g in points}
    n = len(sessions)
    held_out: dict[str, list[float]] = {row: [0.0] * n for row in LIFETIME_ROWS}
    chosen: dict[str, Grid] = {}
    for group, members in groups.items():
        train = [i for i in range(n) if i not in set(members)]
        pick = _choose(costs, off, train)
        chosen[group] = pick
        for row in LIFETIME_ROWS:
            for i in members:
                held_out[row][i] = costs[pick][row][i]
    best = _choose(costs, off, range(n))
    return {
        "sessions": n,
        "projects": len(groups),
        "grid": {
            "pause_prior": PAUSE_PRIORS,
            "return_prior_person": RETURN_PRIORS,
            "allowance": ALLOWANCES,
        },
        "shipped": _label(shipped),
        "best_in_sample": _label(best),
        "picks": {_label(g): k for g, k in Counter(chosen.values()).items()},
        "rows": {
            row: {
                "shipped": _figures(costs[shipped][row], off),
                "held_out": _figures(held_out[row], off),
                "best_in_sample": _figures(costs[best][row], off),
            }
            for row in LIFETIME_ROWS
        },
    }


def table(result: dict[str, Any]) -> str:
    lines = [
        f"{result['sessions']} conversations in {result['projects']} projects; Anthropic-priced "
        "cost relative to sending everything (an agent that asks five minutes); held out: each "
        "project priced with the constants chosen on the others",
        "",
        f"{'settings':<36}{'shipped':>9}{'>1%':>5}{'held out':>10}{'>1%':>5}{'worst':>7}"
        f"{'best in sample':>16}",
    ]
    for name, row in result["rows"].items():
        s, h, b = row["shipped"], row["held_out"], row["best_in_sample"]
        lines.append(
            f"{name.removeprefix('default, '):<36}{s['anthropic']:>9.3f}{s['dearer_1pct']:>5}"
            f"{h['anthropic']:>10.3f}{h['dearer_1pct']:>5}{h['worst']:>7.2f}"
            f"{b['anthropic']:>16.3f}"
        )
    picks = "; ".join(f"({k}): {v}" for k, v in result["picks"].items())
    lines.append(
        f"constants (pause prior, return prior after an answer, allowance): shipped "
        f"({result['shipped']}), best in sample ({result['best_in_sample']}); picks: {picks}"
    )
    return "\n".join(lines)


def main() -> int:
    started = time.perf_counter()
    result = run(find().transcripts)
    print(table(result))
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    path = results / "lifetimes.json"
    path.write_text(json.dumps(result, indent=1, default=list))
    print(f"\n(wrote {path} in {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
