"""``python -m bench.codex_replay``: real Codex CLI sessions through the proxy, call by call, as
Codex sent them (issue 42: measured on an agent and sessions the project did not write).

Each rollout of ``../shared/data/transcripts/codex/`` (20 sessions of 7 projects, Codex CLI 0.34
to 0.105) is read back into the ``POST /v1/responses`` bodies Codex sent (``codex_rollouts.py``)
and fed, in order and at the time of each call, through the proxy's own ``Compactor`` over a
daemon on a temporary storage folder: one daemon for each project, its sessions in the order
they started, as a user's proxy would see them (a resumed session after its parent). After each
call the proxy is told the call's usage as it would read it from the answer: what the bill below
makes of the request the proxy sent, and the output Codex recorded.

For every request: carried or not (and why not), the body the proxy would send (``--bodies``
writes them), and whether OpenAI would take it (``responses_checks.py``: calls paired with their
outputs, every reasoning and compaction item Codex's own byte for byte and in its order). Then
what the proxy's requests cost relative to Codex's own, each priced by ``billing.py``
(``responses_units.py`` makes a request the bill's units; input tokens only, as ``replay.py``:
the output is the model's, the same either way), under two of OpenAI's caches:

* ``gpt_5_6``: GPT-5.6 and later. The sessions run with the model named ``gpt-5.6``, so that the
  proxy places its breakpoints and the daemon plans for that cache: entries only at breakpoints
  (Codex's requests carry the implicit one at their end), reads 0.1×, writes 1.25×, 30 minutes.
* ``prefix``: the models the sessions ran (``gpt-5-codex`` and its successors): any prefix two
  requests share is read at 0.1×, writes are free. The proxy asks a day's retention where the
  model offers it free (``openai_cache.py``), billed as the hour the daemon counts on;
  ``prefix`` gives Codex's requests that lifetime too (what pruning saves), ``prefix_retention``
  leaves them the ``IN_MEMORY_S`` they had (what the retention the proxy asks saves besides).

Each run twice: with the proxy's defaults, and with ``--context-limit`` at the models' window
(``WINDOW``), as the proxy's help asks. Nothing is tuned or held out; hdcontext's part of a
request is bounded by ``BOUND_S``, not the proxy's 10 s (this measures what is carried;
``bench.proxy``, how fast). ``codex_ceiling.py`` says what the rules as they are could take.

``python -m bench.codex_replay`` prints the table and writes ``bench/results/codex_replay.json``
(each request's fate and cost in it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from hdcontext.core.cache.rhythm import waiting_after
from hdcontext.core.tokens import count_text
from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.proxy.api import Unsupported
from hdcontext.edges.proxy.compactor import Compacted, Compactor, InvalidResult, TooSlow
from hdcontext.edges.proxy.openai_cache import LONG_RETENTION, LONG_RETENTION_TTL_S, RETENTION_KEY
from hdcontext.edges.proxy.responses import ResponsesApi
from hdcontext.edges.proxy.run import _NoEditor
from hdcontext.edges.proxy.usage import Billed
from hdcontext.edges.storage.folder import prepare_folder

from . import codex_ceiling, codex_table, responses_checks
from .billing import RESPONSES_PRICE_MODELS, Bill, PriceModel, lifetime
from .codex_rollouts import Request, Rollout, find
from .responses_units import Counts, Units, hidden_prompt

BOUND_S = 120.0
CLIENT = "codex_cli_rs"
"""The client name the proxy reads from Codex's User-Agent."""
GPT_5_6 = "gpt-5.6"
WINDOW = 272_000
"""The input window of the GPT-5 models the sessions ran (400,000 less 128,000 of output; Codex
0.171's catalog says 272,000 and compacts at 90% of it): ``hdcontext proxy --context-limit``,
whose help says to set it to the model's window."""
IN_MEMORY_S = 600
"""How long Codex's own requests stay cached: OpenAI's in-memory retention, "5 to 10 minutes of
inactivity, up to one hour". In the rollouts' real usage, a call after a pause of under 5
minutes read 97% of the previous input from the cache, after 5 to 10 minutes 88%, 10 to 30
minutes 57%, 30 to 60 minutes 22%."""
AS_ASKED = frozenset({"gpt_5_6", "prefix_retention"})
"""The price models whose bill of Codex's requests is Codex's as it asked them (what the real
usage is held against)."""
RESULTS = Path(__file__).resolve().parent / "results"
API = ResponsesApi()


@dataclass(frozen=True)
class Mode:
    """One run of every session: the model its requests name (``None``: the rollout's), the
    price models it is billed under, the proxy's ``--context-limit`` (``None``: its default,
    the setting's 200,000)."""

    name: str
    model: str | None
    prices: tuple[str, ...]
    context_limit: int | None = None


MODES = (
    Mode("gpt_5_6", GPT_5_6, ("gpt_5_6",)),
    Mode("prefix", None, ("prefix", "prefix_retention")),
    Mode("gpt_5_6_window", GPT_5_6, ("gpt_5_6",), WINDOW),
    Mode("prefix_window", None, ("prefix", "prefix_retention"), WINDOW),
)


@dataclass
class Figures:
    """One session in one mode."""

    requests: int = 0
    carried: int = 0
    changed: int = 0
    """Carried requests sent otherwise than Codex sent them (something was taken out)."""
    not_carried: Counter[str] = field(default_factory=Counter)
    """Why, by reason (item indices left out)."""
    invalid: int = 0
    """Requests sent that OpenAI would refuse."""
    problems: Counter[str] = field(default_factory=Counter)
    reasoning_items: int = 0
    """Reasoning items in the proxy's changed requests, each checked against Codex's."""
    tokens: int = 0
    tokens_codex: int = 0
    cost: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    cost_codex: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    hidden_prompt: int = 0
    """The prompt's tokens the rollout does not show, sized from the real usage."""
    real_input: int = 0
    real_cached: int = 0
    billed_codex_read: int = 0
    """What the bill of Codex's requests, as Codex asked them, reads from the cache."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Each request: carried or why not, what was taken out, what each side cost."""
    status: dict[str, int] = field(default_factory=dict)
    """The proxy's session at the end: tokens saved, edits still waiting, outputs masked."""

    def ratio(self, price: str) -> float:
        codex = self.cost_codex.get(price, 0.0)
        return self.cost.get(price, 0.0) / codex if codex else 1.0


def reason(text: str) -> str:
    """A reason as counted: item indices left out."""
    return re.sub(r"\[\d+\]", "[…]", text)


async def replay_project(
    rollouts: Sequence[Rollout], mode: Mode, bodies: Path | None = None
) -> dict[str, Figures]:
    """A project's sessions, in the order they started, through one proxy's compactor."""
    out: dict[str, Figures] = {}
    with tempfile.TemporaryDirectory(prefix="hdcontext-codex-") as folder:
        storage = Path(folder) / "storage"
        prepare_folder(storage)
        daemon = Daemon(_NoEditor(), storage, IdeSettings())
        await daemon.start()
        compactor = Compactor(daemon, bound_s=BOUND_S)
        compactor.context_limit = mode.context_limit
        try:
            sessions: dict[str, str] = {}
            for rollout in rollouts:
                where = bodies / mode.name / rollout.name if bodies is not None else None
                figures, session = await replay_session(compactor, rollout, mode, where)
                out[rollout.name] = figures
                if session is not None:
                    sessions[rollout.name] = session
            await compactor.close()
            listed = await daemon.list({})
            by_id = {s["sessionId"]: s for s in listed["sessions"]}
            for name, session in sessions.items():
                status = by_id.get(session, {})
                out[name].status = {
                    key: int(status.get(key, 0))
                    for key in ("savedTokens", "pendingTokens", "maskedOutputs", "maskedTokens")
                }
        finally:
            await daemon.shutdown()
            await daemon.store.close()
    return out


@dataclass
class _Bills:
    """One session's bills: the proxy's requests and Codex's, under each price model."""

    proxy: dict[str, Bill]
    codex: dict[str, Bill]

    @classmethod
    def of(cls, mode: Mode) -> _Bills:
        return cls(
            {name: Bill(_price(name)) for name in mode.prices},
            {name: Bill(_price(name)) for name in mode.prices},
        )


async def replay_session(
    compactor: Compactor, rollout: Rollout, mode: Mode, bodies: Path | None = None
) -> tuple[Figures, str | None]:
    """One session's requests, in order: each compacted, checked, billed, its usage told."""
    figures = Figures()
    counts = Counts()
    prompt = figures.hidden_prompt = _prompt(counts, rollout, mode)
    bills = _Bills.of(mode)
    session: str | None = None
    for request in rollout.requests:
        model = mode.model or request.model
        raw = request.body(mode.model)
        mine = counts.units(model, prompt, request.items)
        compacted, why = await _compact(compactor, raw, request.at)
        figures.requests += 1
        sent, asks_long = mine, False
        if compacted is not None and not compacted.passed:
            figures.carried += 1
            if compacted.body != raw:
                body = orjson.loads(compacted.body)
                sent = counts.units(model, prompt, body["input"], own=False)
                _check(figures, request, mode, mine, body, sent)
                asks_long = body.get(RETENTION_KEY) == LONG_RETENTION
                if bodies is not None:
                    bodies.mkdir(parents=True, exist_ok=True)
                    (bodies / f"{request.index:04d}.json").write_bytes(compacted.body)
        elif why is not None:
            figures.not_carried[why] += 1
        if compacted is not None:
            session = compacted.session_id
        figures.tokens += sent.total
        figures.tokens_codex += mine.total
        costs = _bill(bills, sent, mine, request.at, asks_long, figures)
        figures.calls.append(
            {
                "index": request.index,
                "at": request.at,
                "carried": compacted is not None and not compacted.passed,
                "why_not": why,
                "tokens": sent.total,
                "tokens_codex": mine.total,
                "cost": costs,
            }
        )
        if request.usage is not None:
            figures.real_input += request.usage.input_tokens
            figures.real_cached += request.usage.cached_tokens
        if compacted is not None:
            await _tell(compactor, compacted, request, sent, mode, bills)
    return figures, session


async def _compact(
    compactor: Compactor, raw: bytes, at: int
) -> tuple[Compacted | None, str | None]:
    """The proxy's part of a request: what it made of it, or why it goes as it came."""
    try:
        compacted = await compactor.compact(API, raw, client=CLIENT, at=at)
    except Unsupported as exc:
        return None, reason(f"not carried: {exc}")
    except (InvalidResult, TooSlow) as exc:
        return None, reason(str(exc))
    if compacted.passed:
        return compacted, "a conversation not seen before goes as it came, taken in"
    return compacted, None


def _check(
    figures: Figures,
    request: Request,
    mode: Mode,
    mine: Units,
    body: dict[str, Any],
    sent: Units,
) -> None:
    """The proxy's request held against Codex's (``responses_checks.py``)."""
    found = responses_checks.problems(
        request.items, mine.blobs[1:], request.rest(mode.model), body, sent.blobs[1:]
    )
    figures.changed += sent.blobs != mine.blobs
    figures.reasoning_items += sum(1 for item in body["input"] if item.get("type") == "reasoning")
    figures.invalid += bool(found)
    figures.problems.update(found)


async def _tell(
    compactor: Compactor,
    compacted: Compacted,
    request: Request,
    sent: Units,
    mode: Mode,
    bills: _Bills,
) -> None:
    """The call's usage, as the proxy reads it from the answer: the first price model's bill of
    its request (what it read from the cache and, at breakpoints, wrote), Codex's output."""
    bill = next(iter(bills.proxy.values()))
    read = bill.last_read
    written = sent.total - read if bill.price.at_breakpoints else 0
    billed = Billed(
        input_tokens=sent.total,
        cache_read_tokens=read,
        cache_write_tokens=written,
        output_tokens=request.usage.output_tokens if request.usage else 0,
        waits_on=waiting_after("tool_calls" if request.calls else "stop"),
    )
    await compactor.record(compacted.session_id, billed, at=request.answered)


def _price(name: str) -> PriceModel:
    return RESPONSES_PRICE_MODELS["prefix" if name.startswith("prefix") else name]


def _bill(
    bills: _Bills, sent: Units, mine: Units, at: int, asks_long: bool, figures: Figures
) -> dict[str, tuple[float, float]]:
    """Both requests billed under each price model: (the proxy's cost, Codex's) of each."""
    out: dict[str, tuple[float, float]] = {}
    for name, bill in bills.proxy.items():
        own = bills.codex[name]
        if name.startswith("prefix"):
            # ``prefix``: both requests live as long (the proxy's day of retention, counted
            # an hour, where it asks one): what pruning saves. ``prefix_retention``: Codex's
            # live in memory, as it asked: what the retention the proxy asks saves besides.
            base = lifetime(RESPONSES_PRICE_MODELS["prefix"], IN_MEMORY_S)
            long = lifetime(base, LONG_RETENTION_TTL_S)
            bill.price = long if asks_long else base
            own.price = long if asks_long and name == "prefix" else base
        before = own.reads
        cost = bill.call(sent.blobs, sent.tokens, _ones(sent), sent.breakpoints, at)
        cost_codex = own.call(mine.blobs, mine.tokens, _ones(mine), mine.breakpoints, at)
        figures.cost[name] += cost
        figures.cost_codex[name] += cost_codex
        if name in AS_ASKED:
            figures.billed_codex_read += own.reads - before
        out[name] = (cost, cost_codex)
    return out


def _ones(units: Units) -> list[int]:
    """Content blocks per unit: OpenAI finds an entry however far back (no lookback)."""
    return [1] * len(units.blobs)


def _prompt(counts: Counts, rollout: Rollout, mode: Mode) -> int:
    """The prompt unit's tokens: the instructions and tools the rollout does not record, sized
    from its real usage, at least what the stand-ins count."""
    if not rollout.requests:
        return 0
    floor = count_text(orjson.dumps(rollout.requests[0].rest(mode.model)).decode())
    counted = (
        (counts.units("", 0, r.items).total, r.usage.input_tokens if r.usage else None)
        for r in rollout.requests
    )
    return hidden_prompt(counted, floor)


def by_project(rollouts: Iterable[Rollout]) -> dict[str, list[Rollout]]:
    out: dict[str, list[Rollout]] = defaultdict(list)
    for rollout in rollouts:
        out[rollout.project].append(rollout)
    return dict(out)


def ceiling(rollouts: Sequence[Rollout]) -> dict[str, Any]:
    """What the rules as they are could take at most (``codex_ceiling.py``)."""
    found = {
        r.name: codex_ceiling.measure(r, _prompt(Counts(), r, MODES[1]), IN_MEMORY_S)
        for r in rollouts
        if r.requests
    }
    return codex_ceiling.total(found)


def run(rollouts: Sequence[Rollout], bodies: Path | None = None) -> dict[str, Any]:
    result: dict[str, Any] = {
        "sessions": [codex_table.session_facts(r) for r in rollouts],
        "ceiling": ceiling(rollouts),
        "modes": {},
    }
    for mode in MODES:
        rows: dict[str, Figures] = {}
        for of_project in by_project(rollouts).values():
            rows.update(asyncio.run(replay_project(of_project, mode, bodies)))
        result["modes"][mode.name] = codex_table.summarize(rollouts, rows, mode.prices)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.codex_replay", description=__doc__)
    parser.add_argument("--only", help="the sessions of the projects whose name holds this")
    parser.add_argument(
        "--bodies", type=Path, help="write each request the proxy changed into this folder"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rollouts = find()
    if args.only:
        rollouts = [r for r in rollouts if args.only in r.project]
    result = run(rollouts, args.bodies)
    result["date"] = time.strftime("%Y-%m-%d")
    print(codex_table.render(result))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "codex_replay.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"\n(wrote {path} in {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
