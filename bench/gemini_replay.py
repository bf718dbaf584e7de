"""``python -m bench.gemini_replay``: real Gemini CLI sessions through the proxy, call by call, as
the CLI sent them (issue 43: measured on an agent and sessions the project did not write).

Each of the twelve files of ``../shared/data/transcripts/gemini/`` (eight chat recordings, four
``/chat save`` checkpoints, five projects) is read back into the history the CLI held at each
call of its model (``gemini_recordings.py``) and each call's ``POST
/v1beta/models/{model}:streamGenerateContent?alt=sse`` body is made of it as Gemini CLI 0.61
makes it (``gemini_send.py``: its own masking of old tool output, contents of one role joined,
the current turn's calls signed). The requests go, in order and at the time of each call,
through the proxy's own ``Compactor`` over a daemon on a temporary storage folder: one daemon
for each project, its sessions in order, as a user's proxy would see them, the model named by
the path as the proxy reads it. After each call the proxy is told the call's usage as it would
read it from the answer: what the bill below makes of the request the proxy sent (its input,
what it read from the cache), and the output the recording gives (else what the answer counts).

For every request: carried or not (and why not), the body the proxy would send (``--bodies``
writes those it changed), and whether Gemini would take it (``gemini_checks.py``: calls paired
with their responses, every thought signature on its part byte for byte, the current turn's
first calls signed, nothing else changed). Then what the proxy's requests cost relative to the
CLI's own, in dollars, input tokens only (the output is the model's, the same either way), each
priced by ``billing.py`` as Gemini bills its implicit cache (``billing.gemini``: any shared
prefix from the model's minimum on, read at a tenth, no write premium, the row's five minutes,
which Google does not state) from the model's row of the price table (``gemini_units.py``
makes a request the bill's units). ``gemini_ceiling.py`` says where the tokens are and what a
free masking oracle would reach.

Nothing is tuned; hdcontext's part of a request is bounded by ``BOUND_S``, not the proxy's 10 s
(this measures what is carried; ``bench.proxy``, how fast).

``python -m bench.gemini_replay`` prints the table and writes ``bench/results/gemini_replay.json``
(each request's fate and cost in it).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
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
from hdcontext.core.prices import lookup
from hdcontext.core.tokens import count_text
from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.proxy.api import Unsupported
from hdcontext.edges.proxy.compactor import Compacted, Compactor, InvalidResult, TooSlow
from hdcontext.edges.proxy.gemini import GeminiApi
from hdcontext.edges.proxy.run import _NoEditor
from hdcontext.edges.proxy.usage import Billed
from hdcontext.edges.storage.folder import prepare_folder

from . import gemini_ceiling, gemini_checks, gemini_table
from .billing import Bill, PriceModel, gemini
from .codex_replay import reason
from .gemini_recordings import CHECKPOINT_MODEL, Session, find
from .gemini_send import Request, requests
from .gemini_units import Counts, Units, content_tokens
from .responses_units import hidden_prompt

BOUND_S = 120.0
CLIENT = "GeminiCLI-tui"
"""The client name the proxy reads from Gemini CLI's User-Agent."""
PASSED = "a conversation not seen before, of 256 KB or more, goes as it came, taken in"
RESULTS = Path(__file__).resolve().parent / "results"
API = GeminiApi()


@dataclass
class Figures:
    """One session."""

    requests: int = 0
    carried: int = 0
    changed: int = 0
    """Carried requests sent otherwise than the CLI sent them (something was taken out)."""
    not_carried: Counter[str] = field(default_factory=Counter)
    """Why, by reason (indices left out)."""
    invalid: int = 0
    """Requests sent that Gemini would refuse."""
    problems: Counter[str] = field(default_factory=Counter)
    signatures: int = 0
    """Signed parts in the proxy's requests, each checked against the CLI's."""
    tokens: int = 0
    tokens_cli: int = 0
    cost: float = 0.0
    cost_cli: float = 0.0
    """Dollars of input, as billed."""
    hidden_prompt: int = 0
    """The prompt's tokens the files do not show, sized from the real usage."""
    real_input: int = 0
    real_cached: int = 0
    billed_cli_read: int = 0
    """What the bill of the CLI's requests reads from the cache, of those with a real usage."""
    billed_cli_input: int = 0
    cli_masked: int = 0
    """Tool outputs the CLI's own masking replaced."""
    calls: list[dict[str, Any]] = field(default_factory=list)
    """Each request: carried or why not, what each side cost."""
    status: dict[str, int] = field(default_factory=dict)
    """The proxy's session at the end: tokens saved, edits still waiting, outputs masked."""

    @property
    def ratio(self) -> float:
        return self.cost / self.cost_cli if self.cost_cli else 1.0


def prompts(sessions: Sequence[Session], counts: Counts) -> dict[str, int]:
    """Each session's prompt unit: the system instruction, tools and preamble listing the
    files do not keep, sized from its real usage; a checkpoint's (none recorded) the median
    of the recordings' of its model."""
    out: dict[str, int] = {}
    for session in sessions:
        if session.kind == "recording":
            out[session.name] = _hidden(session, counts)
    same = [out[s.name] for s in sessions if s.name in out and _runs(s, CHECKPOINT_MODEL)]
    for session in sessions:
        if session.name not in out:
            floor = _floor(session)
            out[session.name] = max(floor, int(statistics.median(same))) if same else floor
    return out


def _runs(session: Session, model: str) -> bool:
    return any(call.model == model for call in session.calls)


def _floor(session: Session) -> int:
    made = requests(session)
    return count_text(orjson.dumps(made[0].rest()).decode()) if made else 0


def _hidden(session: Session, counts: Counts) -> int:
    counted = (
        (
            counts.units("", 0, r.contents).total,
            r.usage.input_tokens if r.usage else None,
        )
        for r in requests(session)
    )
    return hidden_prompt(counted, _floor(session))


async def replay_project(
    sessions: Sequence[Session], prompt: dict[str, int], bodies: Path | None = None
) -> dict[str, Figures]:
    """A project's sessions, in order, through one proxy's compactor."""
    out: dict[str, Figures] = {}
    with tempfile.TemporaryDirectory(prefix="hdcontext-gemini-") as folder:
        storage = Path(folder) / "storage"
        prepare_folder(storage)
        daemon = Daemon(_NoEditor(), storage, IdeSettings())
        await daemon.start()
        compactor = Compactor(daemon, bound_s=BOUND_S)
        try:
            ids: dict[str, str] = {}
            for session in sessions:
                where = bodies / session.name if bodies is not None else None
                figures, session_id = await replay_session(
                    compactor, session, prompt[session.name], where
                )
                out[session.name] = figures
                if session_id is not None:
                    ids[session.name] = session_id
            await compactor.close()
            listed = await daemon.list({})
            by_id = {s["sessionId"]: s for s in listed["sessions"]}
            for name, session_id in ids.items():
                status = by_id.get(session_id, {})
                out[name].status = {
                    key: int(status.get(key, 0))
                    for key in ("savedTokens", "pendingTokens", "maskedOutputs", "maskedTokens")
                }
        finally:
            await daemon.shutdown()
            await daemon.store.close()
    return out


class _Bills:
    """One session's bills, the proxy's requests' and the CLI's, each call at its model's
    row (a model changed mid-session reads nothing the other model cached: the prompt unit
    names it)."""

    def __init__(self) -> None:
        self.proxy = Bill(gemini(CHECKPOINT_MODEL))
        self.cli = Bill(gemini(CHECKPOINT_MODEL))
        self._prices: dict[str, tuple[PriceModel, float]] = {}

    def call(self, model: str, sent: Units, mine: Units, at: int) -> tuple[float, float]:
        """Both requests billed, in dollars of input: (the proxy's, the CLI's)."""
        known = self._prices.get(model)
        if known is None:
            row = lookup(model).row
            assert row is not None
            known = self._prices[model] = (gemini(row.model), row.input / 1e6)
        price, dollars = known
        self.proxy.price = self.cli.price = price
        cost = self.proxy.call(sent.blobs, sent.tokens, sent.blocks, sent.breakpoints, at)
        own = self.cli.call(mine.blobs, mine.tokens, mine.blocks, mine.breakpoints, at)
        return cost * dollars, own * dollars


async def replay_session(
    compactor: Compactor, session: Session, prompt: int, bodies: Path | None = None
) -> tuple[Figures, str | None]:
    """One session's requests, in order: each compacted, checked, billed, its usage told."""
    figures = Figures(hidden_prompt=prompt)
    counts = Counts()
    bills = _Bills()
    session_id: str | None = None
    for request in requests(session):
        raw = request.body()
        mine = counts.units(request.model, prompt, request.contents)
        compacted, why = await _compact(compactor, request, raw)
        figures.requests += 1
        figures.cli_masked = request.masked
        sent = mine
        carried = compacted is not None and not compacted.passed
        if compacted is not None and carried:
            figures.carried += 1
            body = orjson.loads(compacted.body)
            _check(figures, request, body, compacted.body)
            if compacted.body != raw:
                figures.changed += 1
                sent = counts.units(request.model, prompt, body["contents"], own=False)
                if bodies is not None:
                    bodies.mkdir(parents=True, exist_ok=True)
                    (bodies / f"{request.index:04d}.json").write_bytes(compacted.body)
        elif why is not None:
            figures.not_carried[why] += 1
        if compacted is not None:
            session_id = compacted.session_id
        before = bills.cli.reads
        cost, cost_cli = bills.call(request.model, sent, mine, request.at)
        figures.tokens += sent.total
        figures.tokens_cli += mine.total
        figures.cost += cost
        figures.cost_cli += cost_cli
        if request.usage is not None:
            figures.real_input += request.usage.input_tokens
            figures.real_cached += request.usage.cached_tokens
            figures.billed_cli_read += bills.cli.reads - before
            figures.billed_cli_input += mine.total
        figures.calls.append(
            {
                "index": request.index,
                "at": request.at,
                "model": request.model,
                "carried": carried,
                "why_not": why,
                "tokens": sent.total,
                "tokens_cli": mine.total,
                "cost": cost,
                "cost_cli": cost_cli,
            }
        )
        if compacted is not None:
            await _tell(compactor, compacted, request, sent, bills, _output(session, request))
    return figures, session_id


async def _compact(
    compactor: Compactor, request: Request, raw: bytes
) -> tuple[Compacted | None, str | None]:
    """The proxy's part of a request: what it made of it, or why it goes as it came. A large
    conversation new to the proxy goes as it came and is taken in once it was forwarded, as
    the app does; the replay waits for that (the CLI's next call comes seconds later)."""
    try:
        compacted = await compactor.compact(
            API, raw, client=CLIENT, at=request.at, model=request.model
        )
    except Unsupported as exc:
        return None, reason(f"not carried: {exc}")
    except (InvalidResult, TooSlow) as exc:
        return None, reason(str(exc))
    if compacted.passed:
        if compacted.forwarded is not None:
            compacted.forwarded.set()
        await compactor.taken_in()
        return compacted, PASSED
    return compacted, None


def _check(figures: Figures, request: Request, body: dict[str, Any], data: bytes) -> None:
    """The proxy's request held against the CLI's (``gemini_checks.py``)."""
    found = gemini_checks.problems(request.contents, request.rest(), body, data)
    figures.signatures += sum(
        1 for c in body["contents"] for p in c.get("parts", []) if "thoughtSignature" in p
    )
    figures.invalid += bool(found)
    figures.problems.update(found)


def _output(session: Session, request: Request) -> int:
    """The answer's tokens: as recorded, else as its content counts."""
    if request.usage is not None:
        return request.usage.output_tokens
    held = session.calls[request.index].held
    answer = session.history[held] if held < len(session.history) else None
    return content_tokens(answer) if answer is not None and answer.get("role") == "model" else 0


async def _tell(
    compactor: Compactor,
    compacted: Compacted,
    request: Request,
    sent: Units,
    bills: _Bills,
    output: int,
) -> None:
    """The call's usage, as the proxy reads it from the answer's ``usageMetadata``: the bill
    of its request (``promptTokenCount``, ``cachedContentTokenCount``), the answer's
    output."""
    billed = Billed(
        input_tokens=sent.total,
        cache_read_tokens=bills.proxy.last_read,
        cache_write_tokens=0,
        output_tokens=output,
        waits_on=waiting_after("tool_calls" if request.calls else "stop"),
    )
    await compactor.record(compacted.session_id, billed, at=request.answered)


def by_project(sessions: Iterable[Session]) -> dict[str, list[Session]]:
    out: dict[str, list[Session]] = defaultdict(list)
    for session in sessions:
        out[session.project].append(session)
    return dict(out)


def run(sessions: Sequence[Session], bodies: Path | None = None) -> dict[str, Any]:
    prompt = prompts(sessions, Counts())
    rows: dict[str, Figures] = {}
    for of_project in by_project(sessions).values():
        rows.update(asyncio.run(replay_project(of_project, prompt, bodies)))
    return {
        "sessions": [gemini_table.session_facts(s) for s in sessions],
        "ceiling": gemini_ceiling.total(
            {s.name: gemini_ceiling.measure(s, prompt[s.name]) for s in sessions if s.calls}
        ),
        "prices": gemini_table.prices(sessions),
        "figures": gemini_table.summarize(sessions, rows),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.gemini_replay", description=__doc__)
    parser.add_argument("--only", help="the sessions of the projects whose name holds this")
    parser.add_argument(
        "--bodies", type=Path, help="write each request the proxy changed into this folder"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()
    sessions = find()
    if args.only:
        sessions = [s for s in sessions if args.only in s.project]
    result = run(sessions, args.bodies)
    result["date"] = time.strftime("%Y-%m-%d")
    print(gemini_table.render(result))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "gemini_replay.json"
    path.write_text(json.dumps(result, indent=1))
    print(f"\n(wrote {path} in {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
