"""``python -m bench.litellm_replay``: the real Claude Code sessions through hdcontext inside
LiteLLM and through ``hdcontext proxy``, call by call: the same decisions (issue 44's last
target, "the held-out cost replay through LiteLLM + hdcontext equals the replay through
``hdcontext proxy``").

Each log of ``../shared/data/transcripts/claude-code-log/`` with three model calls or more (38
conversations, sub-agents' threads among them, 835 calls) is read back into the ``/v1/messages``
bodies Claude Code sent (``claude_logs.py``), and the same bodies, in the same order and at the
same times, go through both paths in this process (``litellm_paths.py``), each over its own
daemon on its own temporary storage folder with the settings both use by default (the proxy's
``proxy_settings()``: ``cache.ttl auto``, no refresh calls; the schedule's shipped constants,
which ``bench.holdout`` chooses again with each project left out and finds to price the replay
corpus about as well held out, ``docs/cost.md``; ``--constants`` sets others for both). After
each call both are told its usage as each would read it from the answer (the proxy from
Anthropic's event stream, the callback as LiteLLM normalizes it): what ``billing.py`` makes of
the request the path sent, priced as Anthropic bills ``MODEL`` (what it read from the cache,
what it wrote and for how long), and the output the log recorded. Equal requests are billed the
same, so while the paths agree they are told the same.

Per call: the two requests as sent upstream, after JSON decoding, must be identical: the
conversation, the system prompt, the tools, every other field, and so every breakpoint and its
lifetime (``litellm_compare.py`` names what differs); and at the end of each conversation both
daemons must hold its session alike (its calls' usage and predicted bills, what it saved, its
version). Per session and in total (``litellm_replay_table.py``): the calls, the
identical ones, what each path carried, and the cost of each path's requests and of Claude
Code's own (no hdcontext), input only (the output is the model's, the same either way), each
request billed against the ones before it with prompt-cache reads, writes and lifetimes
(``anthropic_units.py`` makes a request the bill's units; the prompt the log does not show,
sized from its real usage).

``--sessions N`` replays the N largest conversations, ``--max-calls`` the first calls of each.
Prints the table and writes ``bench/results/litellm_replay.json`` (each call's verdict in it).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from hdcontext.core.tokens import count_text

from . import claude_logs, litellm_compare
from .anthropic_units import Counts, Units
from .billing import Bill, PriceModel, priced
from .claude_logs import MODEL, USER_AGENT, Call, Log
from .holdout import constants
from .litellm_paths import Answer, Clock, GatewayPath, ProxyPath, ReplayPath, anthropic_usage
from .litellm_replay_table import PATHS, render, summarize
from .responses_units import hidden_prompt

BOUND_S = 120.0
"""hdcontext's part of a request, bounded far past the proxy's 10 s: this measures what each
path decides, not how fast (``bench.litellm`` does)."""
PRICE: PriceModel = priced(MODEL, f"Anthropic as it bills {MODEL}")
MAX_BREAKPOINTS = 4
RESULTS = Path(__file__).resolve().parent / "results"


@dataclass
class PathFigures:
    """One path's part of a session."""

    carried: int = 0
    not_carried: Counter[str] = field(default_factory=Counter)
    cost: float = 0.0
    """Input cost, in uncached input tokens."""
    tokens: int = 0
    problems: Counter[str] = field(default_factory=Counter)
    """Requests Anthropic would refuse, by why (too many breakpoints, an hour after five
    minutes)."""


@dataclass
class Figures:
    """One session: both paths, Claude Code's own requests, and each call's verdict."""

    name: str
    calls: int = 0
    identical: int = 0
    changed: int = 0
    """Calls whose request the proxy sent otherwise than Claude Code did (an edit, a mark
    moved or lifted)."""
    prompt: int = 0
    """The prompt's tokens the log does not show (sized from the real usage)."""
    cost_agent: float = 0.0
    tokens_agent: int = 0
    paths: dict[str, PathFigures] = field(
        default_factory=lambda: {name: PathFigures() for name in PATHS}
    )
    ledgers_equal: bool = True
    """Both daemons' sessions of this conversation alike at its end (its calls' usage and
    predicted bills, what was saved, what waits, the session's version)."""
    differences: Counter[str] = field(default_factory=Counter)
    """What differed, by field (``messages[…] (marks)``…)."""
    first_difference: dict[str, Any] | None = None
    verdicts: list[dict[str, Any]] = field(default_factory=list)


@contextlib.contextmanager
def maybe_constants(chosen: tuple[float, float] | None) -> Iterator[None]:
    """The schedule's constants ``chosen`` for both paths (``None``: the shipped ones)."""
    if chosen is None:
        yield
        return
    with constants(*chosen):
        yield


async def replay(logs: Sequence[Log], folder: Path, max_calls: int | None = None) -> list[Figures]:
    """Every log in order through both paths, each over its own daemon in ``folder``."""
    clock = Clock()
    out: list[Figures] = []
    with clock.installed():
        proxy = ProxyPath(folder / "proxy", BOUND_S, USER_AGENT)
        gateway = GatewayPath(folder / "litellm", BOUND_S, USER_AGENT, MODEL)
        paths: tuple[ReplayPath, ReplayPath] = (proxy, gateway)
        for path in paths:
            await path.start()
        try:
            for log in logs:
                out.append(await replay_session(log, paths, clock, max_calls))
        finally:
            for path in paths:
                await path.close()
    return out


async def replay_session(
    log: Log, paths: Sequence[ReplayPath], clock: Clock, max_calls: int | None = None
) -> Figures:
    """One conversation's calls, in order: each sent by both paths, compared, billed, told."""
    counts = Counts()
    calls = log.calls[:max_calls]
    figures = Figures(log.name, prompt=prompt_of(log, calls, counts))
    agent = Bill(PRICE)
    bills = {path.name: Bill(PRICE) for path in paths}
    before = [await path.ledgers() for path in paths]
    for call in calls:
        clock.now = call.at
        raw = log.body(call)
        mine = counts.units(orjson.loads(raw), figures.prompt)
        cost_agent = agent.call(mine.blobs, mine.tokens, mine.blocks, mine.breakpoints, call.at)
        figures.calls += 1
        figures.cost_agent += cost_agent
        figures.tokens_agent += mine.total
        sent = {path.name: await path.send(raw, call.at) for path in paths}
        verdict: dict[str, Any] = {"index": call.index, "cost_agent": round(cost_agent)}
        answers: dict[str, Answer] = {}
        for path in paths:
            own, mine_of_path = sent[path.name], figures.paths[path.name]
            units = counts.units(own.fields, figures.prompt)
            if own.carried:
                mine_of_path.carried += 1
            else:
                mine_of_path.not_carried[own.why or "?"] += 1
            cost = _bill(bills[path.name], units, call.at, mine_of_path)
            mine_of_path.cost += cost
            mine_of_path.tokens += units.total
            answers[path.name] = _answer(bills[path.name], units, call)
            verdict[path.name] = {
                "carried": own.carried,
                "why_not": own.why,
                "cost": round(cost),
                "marks": litellm_compare.marks(own.fields),
            }
        differ = litellm_compare.differences(sent[paths[0].name].fields, sent[paths[1].name].fields)
        verdict["identical"] = not differ
        figures.changed += sent[paths[0].name].fields != orjson.loads(raw)
        if differ:
            verdict["differences"] = differ
            figures.differences.update(differ)
            if figures.first_difference is None:
                figures.first_difference = {"call": call.index, "differences": differ}
        else:
            figures.identical += 1
        figures.verdicts.append(verdict)
        clock.now = call.answered
        for path in paths:
            await path.tell(answers[path.name])
    after = [await path.ledgers() for path in paths]
    figures.ledgers_equal = _ours(before[0], after[0]) == _ours(before[1], after[1])
    return figures


def _ours(
    before: Mapping[str, dict[str, Any]], after: Mapping[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """The sessions told calls during a replay, as their daemon holds them right after it.
    (Not every session that changed: one the proxy's daemon let go of from memory meanwhile
    shows fewer figures, no predicted bills, than the callback's daemon, which keeps more
    conversations loaded, still shows of it.)"""
    return {k: v for k, v in after.items() if _calls(before.get(k)) != _calls(v)}


def _calls(status: Mapping[str, Any] | None) -> object:
    return status.get("usage", {}).get("calls") if status is not None else None


def prompt_of(log: Log, calls: Sequence[Call], counts: Counts) -> int:
    """The prompt unit's tokens: the system prompt and tools the log does not record, sized
    from its real usage, at least what the stand-ins count."""
    if not calls:
        return 0
    fields = log.fields(calls[0])
    floor = count_text(orjson.dumps([fields["system"], fields["tools"]]).decode())
    counted = ((counts.units(log.fields(c), 0).total, c.real_input) for c in calls)
    return hidden_prompt(counted, floor)


def _bill(bill: Bill, units: Units, at: int, figures: PathFigures) -> float:
    """``units`` billed; a request Anthropic would refuse is counted, and billed as if its
    marks asked five minutes where the order is wrong."""
    long = units.long
    if long != sorted(long, reverse=True):
        figures.problems["a one-hour breakpoint after a five-minute one"] += 1
        long = [False] * len(long)
    if len(units.marks) > MAX_BREAKPOINTS:
        figures.problems[f"more than {MAX_BREAKPOINTS} breakpoints"] += 1
    return bill.call(units.blobs, units.tokens, units.blocks, units.breakpoints, at, long)


def _answer(bill: Bill, units: Units, call: Call) -> Answer:
    """The call's answer as the provider would give it for ``units``, just billed: what it
    read from the cache, what it wrote up to the last breakpoint (for an hour up to the last
    one-hour breakpoint), and the output the log recorded."""
    read = bill.last_read
    last = max(units.breakpoints, default=0)
    written = max(0, units.prefix(last) - read)
    long_end = max(
        (b for b, one in zip(units.breakpoints, units.long, strict=True) if one), default=0
    )
    long = min(written, max(0, units.prefix(long_end) - read))
    usage = anthropic_usage(read, written, long, units.total, call.output_tokens)
    return Answer(usage, call.stop_reason, call.answered)


def run(
    logs: Sequence[Log],
    max_calls: int | None = None,
    chosen: tuple[float, float] | None = None,
) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="hdcontext-litellm-replay-") as folder,
        maybe_constants(chosen),
    ):
        rows = asyncio.run(replay(logs, Path(folder), max_calls))
    return summarize(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.litellm_replay", description=__doc__)
    parser.add_argument("--sessions", type=int, help="the N largest conversations only")
    parser.add_argument("--max-calls", type=int, help="each conversation's first calls only")
    parser.add_argument(
        "--constants",
        help="the schedule's horizon cap and batch allowance for both paths (CAP,ALLOWANCE; "
        "bench.holdout's grid), instead of the shipped ones",
    )
    args = parser.parse_args(argv)
    chosen = None
    if args.constants:
        cap, allowance = (float(x) for x in args.constants.split(","))
        chosen = (cap, allowance)
    started = time.perf_counter()
    logs = claude_logs.find()[: args.sessions]
    result = run(logs, args.max_calls, chosen)
    result["date"] = time.strftime("%Y-%m-%d")
    result["model"] = MODEL
    result["constants"] = chosen
    result["seconds"] = round(time.perf_counter() - started, 1)
    print(render(result))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "litellm_replay.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"\n(wrote {path} in {result['seconds']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
