"""What the rule for bound thinking (``core/history/thinking.py``) costs: the cache replay with it
and without it.

A model with bound thinking (Claude Opus 5.5 and the others the price table marks) refuses a
thinking block whose prefix changed (or drops it, when the request asks for that): so, for such
a model, the edits that start before a turn still calling tools wait for it to end, and the
thinking after an edit goes with it. For every model, an edit that would touch that turn waits.
Without the rule the requests of such a model are not valid (the provider refuses what the edits
invalidated); the figure without it is what the same edits would have saved had the provider
taken them.

Each conversation of the replay's corpus (``replay.py``: every one with three model calls or
more) is replayed with the settings rows below, twice each: with the rule (the session as it is)
and without it (``Session``'s hooks of the rule turned off), for a client of an unbound model
(Claude Sonnet 4.6, the main price model) and of a bound one (Claude Opus 5.5, billed at its own
prices: reads 0.05x). Costs are relative to density off without the rule, for all
conversations and for those that carry thinking.

``python -m bench.thinking`` prints the table and writes ``bench/results/thinking.json``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from unittest import mock

from hdcontext.core.content import ThinkingBlock
from hdcontext.core.session import session as session_module

from .replay import ROWS, replay
from .transcripts import Transcript, corpus, find

RESULTS = Path(__file__).resolve().parent / "results"
OFF = "density off"
MEASURED = (
    OFF,
    "default: cache-aware, latest view, masking cold",
    "seeds: every turn, any write prunes",
)
CLIENTS = {
    "claude-sonnet-4-6 (unbound)": ("claude-sonnet-4-6", "anthropic"),
    "claude-opus-5-5 (bound)": ("claude-opus-5-5", "anthropic_005"),
}


@contextmanager
def without_rule() -> Iterator[None]:
    """The session as it was before the rule: no model binds its thinking, no edit waits."""
    with (
        mock.patch.object(session_module, "binds_thinking", lambda model: False),
        mock.patch.object(session_module, "waits", lambda positions, turn, bound: False),
    ):
        yield


def thinks(t: Transcript) -> bool:
    return any(isinstance(b, ThinkingBlock) for e in t.entries for b in e.blocks)


def costs(sessions: list[Transcript], model: str, price: str, row: str) -> list[float]:
    return [
        asyncio.run(replay(t, ROWS[row], (model, 2, None), (price,))).cost[price] for t in sessions
    ]


def main() -> None:
    started = time.perf_counter()
    sessions = corpus(find().transcripts)
    thinking = [thinks(t) for t in sessions]
    report: dict[str, object] = {"sessions": len(sessions), "with_thinking": sum(thinking)}
    print(
        f"bound thinking: {len(sessions)} conversations, {sum(thinking)} with thinking; "
        "cost relative to density off without the rule (all / with thinking)\n"
    )
    print(f"{'':<30}{'row':<50}{'without':>17}{'with the rule':>17}")
    for client, (model, price) in CLIENTS.items():
        with without_rule():
            base = costs(sessions, model, price, OFF)
        for row in MEASURED:
            figures: dict[str, list[float]] = {}
            for label in ("without", "with"):
                if label == "without":
                    with without_rule():
                        got = costs(sessions, model, price, row)
                else:
                    got = costs(sessions, model, price, row)
                both = [
                    sum(got) / sum(base),
                    sum(g for g, t in zip(got, thinking, strict=True) if t)
                    / sum(b for b, t in zip(base, thinking, strict=True) if t),
                ]
                figures[label] = [round(x, 4) for x in both]
                report[f"{client} | {row} | {label}"] = {
                    "all": figures[label][0],
                    "with_thinking": figures[label][1],
                    "per_session": {
                        t.name: round(g / b, 4) if b else 1.0
                        for t, g, b in zip(sessions, got, base, strict=True)
                    },
                }
            without, rule = figures["without"], figures["with"]
            print(
                f"{client:<30}{row:<50}{without[0]:>8.4f} /{without[1]:>7.4f}"
                f"{rule[0]:>8.4f} /{rule[1]:>7.4f}"
            )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "thinking.json").write_text(json.dumps(report, indent=2))
    print(f"\n({time.perf_counter() - started:.1f} s; bench/results/thinking.json)")


if __name__ == "__main__":
    main()
