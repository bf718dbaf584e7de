"""The prompt cache's lifetime (``cache/prompt_cache.py``, ``lifetimes.py``, ``refresh.py``,
``rhythm.py``): entries that live their own lifetime, Anthropic's billing of mixed lifetimes,
the lifetime each breakpoint asks, refresh calls, and the daemon's ledger held to the bench's
independent bill with all of it on real sessions."""

from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from bench.billing import PRICE_MODELS, Bill, priced
from hdcontext.core.cache import rhythm
from hdcontext.core.cache.ledger import LIFETIME_ALLOWANCE, Charge, CostLedger
from hdcontext.core.cache.pricing import ANTHROPIC, LONG_TTL_MS
from hdcontext.core.cache.prompt_cache import Call, Lifetimes, Placed, PromptCache
from hdcontext.core.cache.refresh_call import RefreshTooEarly
from hdcontext.core.content import IContent
from hdcontext.core.session.session import Session
from hdcontext.formats.importers.claude_code import from_jsonl

from .builders import ai_call, ai_text, human, tool_result

SHORT = ANTHROPIC.ttl_ms
HOUR = LONG_TTL_MS


@dataclass(frozen=True)
class Flat:
    """A working view of entries of ``tokens`` tokens and one block each."""

    tokens: int = 100

    def tokens_between(self, start: int, stop: int) -> int:
        return max(0, stop - start) * self.tokens

    def blocks_between(self, start: int, stop: int) -> int:
        return max(0, stop - start)


def _call(length: int, unchanged: int, at: int, lifetimes: Lifetimes = "5m") -> Call:
    return Call(Flat(), length, unchanged, at, ANTHROPIC, slots=3, lifetimes=lifetimes)


def _cache(*held: tuple[int, int, int], calls: int = 1) -> PromptCache:
    last = max(used for _, used, _ in held)
    return PromptCache(held=held, ledger=CostLedger(calls=calls, last_at=last, touched_at=last))


# -- what the provider holds and bills ------------------------------------------------------


def test_an_entry_lives_the_lifetime_it_was_written_with() -> None:
    cache = _cache((10, 0, SHORT), (20, 0, HOUR))
    half_hour = _call(30, unchanged=30, at=30 * 60_000)
    assert cache.live(half_hour) == ((20, 0, HOUR),)
    assert cache.live(_call(30, unchanged=30, at=HOUR + 1)) == ()


def test_mixed_lifetimes_are_billed_as_anthropic_bills_them() -> None:
    # Read 10 entries (A), an hour up to 20 (B), five minutes up to 30 (C):
    # 0.1·A + 2·(B − A) + 1.25·(C − B).
    cache = _cache((10, 1_000, SHORT))
    call = _call(30, unchanged=30, at=2_000)
    read, charge = cache.charge(call, Placed((20, 30), (True, False)))
    assert read == 10
    assert charge == Charge(read=1_000, write_long=1_000, write=1_000)
    assert charge.cost(ANTHROPIC) == 0.1 * 1_000 + 2 * 1_000 + 1.25 * 1_000
    # An hour only at or before what is read costs nothing more.
    _, same = cache.charge(call, Placed((10, 30), (True, False)))
    assert same == Charge(read=1_000, write=2_000)


def test_a_read_keeps_an_entry_for_its_own_lifetime_and_never_lengthens_it() -> None:
    cache = _cache((10, 1_000, SHORT))
    after, _ = cache.called(_call(12, 12, at=2_000), Placed((10, 12), (True, True)), 1_200)
    lives = {q: ttl for q, _, ttl in after.held}
    assert lives == {10: SHORT, 12: HOUR}  # 10 was read: refreshed, still five minutes
    # A breakpoint before the read where none was held holds one of the read entry's life.
    again, _ = after.called(_call(14, 14, 3_000), Placed((5, 14), (False, False)), 1_400)
    assert {q: ttl for q, _, ttl in again.held}[5] == HOUR


def test_the_client_asks_only_what_it_can() -> None:
    cache = _cache((10, 1_000, SHORT), calls=30)
    for lifetimes, expected in (("5m", {False}), ("1h", {True})):
        placed = cache.lifetimes(_call(40, 40, 2_000, lifetimes), (10, 40))
        assert set(placed.long) == expected
    # A provider without a longer lifetime (OpenAI) gets the default whatever is asked.
    openai = dataclasses.replace(_call(40, 40, 2_000, "1h"), pricing=PRICE_MODELS_OPENAI)
    assert cache.lifetimes(openai, (40,)).long == (False,)


PRICE_MODELS_OPENAI = dataclasses.replace(ANTHROPIC, name="openai", write_long=None)


def test_auto_asks_an_hour_where_a_pause_would_cost_more_than_its_premium() -> None:
    # A session that has saved enough and pauses often: the hour goes on the cheapest place
    # that keeps most (right after what the request reads), not on the whole new turn.
    ledger = CostLedger(calls=40, last_at=1_000, pauses=10, spent=5_000.0, spent_off=9_000.0)
    cache = PromptCache(held=((30, 1_000, SHORT),), ledger=ledger)
    call = _call(40, 30, 2_000, "auto")
    breakpoints = cache.place(call, [])
    assert breakpoints == (31, 40)  # the checkpoint right after the read, and the tail
    assert cache.lifetimes(call, breakpoints).long == (True, False)
    # A session with nothing saved pays no premium (never dearer than without hdcontext).
    poor = PromptCache(held=((30, 1_000, SHORT),), ledger=dataclasses.replace(ledger, spent=9e4))
    assert poor.lifetimes(call, breakpoints).long == (False, False)


def test_the_chance_of_a_pause_and_of_a_return_follow_the_session() -> None:
    calm = CostLedger(calls=100)
    restless = CostLedger(calls=100, pauses=20)
    assert rhythm.pause_chance(calm) < rhythm.PAUSE_PRIOR < rhythm.pause_chance(restless)
    assert rhythm.return_chance(calm, "tool") > rhythm.return_chance(calm, "person")
    assert rhythm.return_chance(restless, "person") > rhythm.return_chance(calm, "person")
    for waiting in ("tool", "person", "unknown"):
        back = rhythm.back_between(calm, waiting, SHORT, HOUR)
        assert 0.0 <= back <= 1.0
        assert rhythm.idle_at(calm, waiting, SHORT, HOUR) <= 1.0


# -- refresh calls --------------------------------------------------------------------------


def _long_session(settings: dict[str, object]) -> Session:
    """A session whose calls have saved tokens (files read again, the stale reads pruned at a
    cold call after a pause), ready to pause again."""
    values = {"cache.maxBreakpoints": 2, **settings}
    s = Session("s", settings=lambda: values, workspace_root=lambda: "/w", clock=lambda: 0)
    s.model = "claude-sonnet-4-6"
    s.append([human("look")])
    body = "".join(f"line {k} = compute({k})\n" for k in range(400))
    at = 1_000_000
    for n in range(8):
        path = f"/w/{n % 2}.py"
        s.append(
            [ai_call(f"r{n}", "Read", {"file_path": path}), tool_result(f"r{n}", "Read", body)]
        )
        asyncio.run(s.compact(at=at))
        at += 20_000 if n != 5 else 400_000
    return s


def test_a_refresh_is_named_only_when_asked_and_ends_where_a_request_may() -> None:
    assert asyncio.run(_long_session({}).compact(at=2_000_000)).cache.refresh_at is None
    s = _long_session({"cache.refresh": True})
    last = asyncio.run(s.compact(at=1_600_000))
    due = last.cache.refresh_at
    assert due is not None and due > 1_600_000
    # The model called a tool (the agent is running it): the refresh pays, and it sends the
    # history up to before that call, whose result is not there yet.
    s.append([ai_call("long", "Bash", {"command": "make test"})])
    refreshed = s.refresh(at=due)
    sent = list(refreshed.history)
    assert sent and sent == list(last.history)
    assert refreshed.cache.breakpoints[-1] == len(sent) - 1
    assert refreshed.bill is not None and refreshed.bill.refresh
    with pytest.raises(RefreshTooEarly):
        s.refresh(at=due - 1)


def test_a_client_that_appends_no_answer_says_how_it_ended() -> None:
    """The proxy appends no answer: the stop reason it read says what the session waits on.
    A tool call comes back within seconds (the refresh pays); a person, or nothing said,
    is not worth a refresh here."""
    outcomes = {}
    for waiting in ("tool", "person", None):
        s = _long_session({"cache.refresh": True})
        due = asyncio.run(s.compact(at=1_600_000)).cache.refresh_at
        assert due is not None
        if waiting is not None:
            s.note_waiting(waiting)
        outcomes[waiting] = bool(s.refresh(at=due).history)
    assert outcomes == {"tool": True, "person": False, None: False}


def test_what_the_client_said_of_an_answer_holds_for_that_call_only() -> None:
    after = []
    for waiting in ("tool", None):
        s = _long_session({"cache.refresh": True})
        asyncio.run(s.compact(at=1_600_000))
        if waiting is not None:
            s.note_waiting(waiting)
        due = asyncio.run(s.compact(at=1_610_000)).cache.refresh_at
        assert due is not None
        after.append(len(s.refresh(at=due).history))
    assert after[0] == after[1]


def test_a_refresh_that_does_not_pay_sends_nothing() -> None:
    s = _long_session({"cache.refresh": True, "cache.refreshIdleSeconds": 60})
    idle = s.refresh(at=1_600_000 + 10 * 60_000)  # idle longer than the limit
    assert not idle.history and idle.cache.refresh_at is None and idle.bill is None


def test_what_the_provider_billed_is_held_against_what_the_daemon_expected() -> None:
    s = _long_session({})
    check = s.record_usage(50_000, cache_read_tokens=45_000, cache_write_tokens=5_000)
    assert check is not None and check.expected_tokens > 0
    status = s.status()
    assert status.predicted.calls == 1 and status.predicted.cache_read_tokens > 0
    asyncio.run(s.compact(at=1_700_000))
    # Nothing read where nearly everything was expected read: a misprediction shows.
    s.record_usage(50_000, cache_read_tokens=0, cache_write_tokens=50_000)
    assert s.status().mispredicted == 1
    assert s.status().priced_as is not None and s.status().priced_as.match == "exact"


# -- the ledger is the bill -----------------------------------------------------------------

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts"
REAL = sorted((SHARED / "claude-code").glob("*.jsonl"))


async def _replay_billed(
    entries: list[IContent], values: dict[str, object], bill: Bill, refresh: bool
) -> Session:
    s = Session("s", settings=lambda: values, workspace_root=lambda: "/w", clock=lambda: 0)
    s.model = bill.price.model
    calls = [i for i, e in enumerate(entries) if e.speaker == "ai" and i > 0]
    appended, clock = 0, 0
    times = []
    for i in calls:
        clock = entries[i].timestamp if entries[i].timestamp is not None else clock + 10_000
        times.append(clock)
    for k, i in enumerate(calls):
        s.append(entries[appended:i])
        appended = i
        result = await s.compact(at=times[k])
        _bill(s, result, bill, times[k], None)
        due = result.cache.refresh_at
        following = times[k + 1] if k + 1 < len(calls) else None
        if refresh and due is not None:
            s.append(entries[i : i + 1])
            appended = i + 1
        while refresh and due is not None and (following is None or due < following):
            refreshed = s.refresh(at=due)
            if not refreshed.history:
                break
            _bill(s, refreshed, bill, due, 12)
            due = refreshed.cache.refresh_at
    return s


def _bill(s: Session, result: object, bill: Bill, at: int, plain: int | None) -> None:
    history = result.history  # type: ignore[attr-defined]
    cache = result.cache  # type: ignore[attr-defined]
    counts = dict(zip(s.history.raw_json, s.history.tokens, strict=True))
    request = list(history.blobs)
    blocks = [len(e.blocks) for e in history]
    breakpoints = [b + 1 for b in cache.breakpoints]
    long = [t == "1h" for t in cache.breakpoint_ttls]
    tokens = [counts[b] for b in request]
    if plain is None:
        bill.call(request, tokens, blocks, breakpoints, at, long)
    else:
        bill.refresh(request, tokens, blocks, breakpoints, at, long, plain)


@pytest.mark.skipif(not REAL, reason="no shared transcripts")
@pytest.mark.parametrize(
    "lifetimes",
    [
        {"cache.ttl": "auto"},
        {"cache.ttl": "1h"},
        {"cache.ttl": "auto", "cache.refresh": True},
        {"cache.refresh": True},
    ],
)
@pytest.mark.parametrize("price", ["anthropic", "anthropic_005"])
async def test_the_daemon_prices_lifetimes_as_the_provider_bills_them(
    lifetimes: dict[str, object], price: str
) -> None:
    """What the daemon's ledger says the calls and refresh calls cost is what the bench's
    independent bill says the provider charges, lifetimes and all."""
    model = PRICE_MODELS[price]
    for path in REAL:
        entries = from_jsonl(path.read_text(encoding="utf-8"))
        bill = Bill(model)
        s = await _replay_billed(
            list(entries),
            {"cache.maxBreakpoints": 2, **lifetimes},
            bill,
            "cache.refresh" in lifetimes,
        )
        ledger = s.export_state().cache.prompt.ledger
        assert ledger.spent == pytest.approx(bill.total, rel=1e-9), path.name
        assert ledger.refreshes == bill.refreshes


# -- for every session ----------------------------------------------------------------------

GAPS = st.sampled_from([5, 20, 60, 200, 400, 1_000, 2_000, 4_000])


@st.composite
def turns(draw: st.DrawFn) -> list[tuple[list[IContent], int]]:
    out: list[tuple[list[IContent], int]] = []
    for n in range(draw(st.integers(min_value=2, max_value=14))):
        size = draw(st.integers(min_value=1, max_value=200))
        body = "".join(f"value_{k} = compute({k})\n" for k in range(size))
        path = draw(st.sampled_from(["/w/a.py", "/w/b.py"]))
        if draw(st.booleans()):
            entries = [
                ai_call(f"c{n}", "Read", {"file_path": path}),
                tool_result(f"c{n}", "Read", body),
            ]
        else:
            entries = [ai_text(f"Step {n}. " * size), human(f"go on ({n})")]
        out.append((entries, draw(GAPS)))
    return out


OFF = {
    "compression.density.readWritePruning": False,
    "compression.density.fileDedupe": False,
    "compression.density.masking": "off",
}


def _read(call_id: str, lines: int) -> list[IContent]:
    text = "".join(f"value_{i} = compute({i})\n" for i in range(lines))
    return [ai_call(call_id, "Read", {"file_path": "/w/a.py"}), tool_result(call_id, "Read", text)]


def _step(k: int) -> list[IContent]:
    return [ai_text(f"Step {k}. "), human(f"go on ({k})")]


ENDS_AFTER_A_BATCH = [
    (_step(0), 5),
    (_read("c1", 5), 5),
    (_step(2), 5),
    (_step(3), 5),
    (_read("c4", 1), 4000),
    (_read("c5", 10), 5),
    *((_step(k), 5) for k in range(6, 12)),
    (_read("c12", 1), 5),
]
"""Found by the property below: with an hour on every breakpoint, the last call prunes a stale
read and rewrites what follows at 2x a token; priced at the five minutes' 1.25x, that batch
fitted the session's savings, and the session ended dearer than sending everything."""


@settings(max_examples=60, deadline=None)
@given(
    plan=turns(),
    ttl=st.sampled_from(["auto", "1h", "5m"]),
    refresh=st.booleans(),
)
@example(plan=ENDS_AFTER_A_BATCH, ttl="1h", refresh=False)
def test_lifetimes_keep_their_order_and_cost_at_most_the_allowance_more(
    plan: list[tuple[list[IContent], int]], ttl: str, refresh: bool
) -> None:
    """For every session: every request's longer lifetimes come before its shorter ones, an
    hour the agent asked is never shortened, and the bill, refresh calls included, is at most
    the allowance above sending everything with the agent's own lifetime."""
    price = priced("claude-sonnet-4-6", "")
    agent_ttl = "1h" if ttl == "1h" else "5m"
    bills = {"off": Bill(price), "on": Bill(price)}
    sessions = {}
    for name, values in (
        ("off", {**OFF, "cache.ttl": agent_ttl}),
        ("on", {"cache.ttl": ttl, "cache.refresh": refresh}),
    ):
        s = Session(name, settings=lambda v=values: {"cache.maxBreakpoints": 2, **v})
        s.model = "claude-sonnet-4-6"
        s.append([human("start")])
        sessions[name] = s
    at = 1_000_000
    due: int | None = None

    def refresh_until(stop: int | None) -> None:
        nonlocal due
        on = sessions["on"]
        while due is not None and (stop is None or due < stop):
            refreshed = on.refresh(at=due)
            if not refreshed.history:
                return
            _bill(on, refreshed, bills["on"], due, 12)
            due = refreshed.cache.refresh_at

    for entries, gap in plan:
        at += gap * 1_000
        refresh_until(at)
        for name, s in sessions.items():
            s.append(entries)
            result = asyncio.run(s.compact(at=at))
            ttls = result.cache.breakpoint_ttls
            assert ttls == sorted(ttls, key=lambda t: t != "1h")
            if ttl == "1h":
                assert set(ttls) == {"1h"}
            _bill(s, result, bills[name], at, None)
            if name == "on":
                due = result.cache.refresh_at
    refresh_until(None)  # a session that ends pays for the refreshes after its last call
    off = bills["off"].total
    assert bills["on"].total <= off * (1 + LIFETIME_ALLOWANCE) + 1e-6
