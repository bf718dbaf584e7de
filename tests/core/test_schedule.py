"""The cache-aware schedule (PROTOCOL.md ``compression.density.schedule``): when edits pay.

The pure decision first (``cache/schedule.py``), on hand-made numbers; then the session: a
cold cache applies everything, a warm one keeps edits of cached entries waiting until they pay,
edits of entries the provider has not seen yet apply at once, and the reply says so.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.core.cache.ledger import Charge, CostLedger
from hdcontext.core.cache.pricing import Pricing, pricing_for
from hdcontext.core.cache.schedule import Candidate, plan
from hdcontext.core.density.edits import drop
from hdcontext.core.prices import provider_of
from hdcontext.core.session.session import Session
from hdcontext.core.settings import SettingError, resolve, validate
from hdcontext.core.tools.summary import DISK_POINTER
from tests.examples import examples

from .builders import ai_call, ai_text, human, tool_result

ANTHROPIC = Pricing("anthropic", 0.1, 1.25, 300_000)


def candidate(start: int, saving: int) -> Candidate:
    return Candidate(drop("recency", [(start, 0)]), start, saving)


def flat(tokens_per_entry: int):  # type: ignore[no-untyped-def]
    return lambda i, j: max(0, j - i) * tokens_per_entry


def test_edits_past_the_cached_prefix_apply_at_once() -> None:
    chosen = plan(
        [candidate(12, 50)],
        cached_end=10,
        tokens_between=flat(100),
        pricing=ANTHROPIC,
        horizon=1,
        budget=0,
    )
    assert [c.start for c in chosen.apply] == [12] and not chosen.wait


def test_a_small_edit_deep_in_the_cached_prefix_waits() -> None:
    chosen = plan(
        [candidate(1, 50)],
        cached_end=100,
        tokens_between=flat(100),
        pricing=ANTHROPIC,
        horizon=40,
        budget=1e9,
    )
    assert not chosen.apply and chosen.waiting_tokens == 50


def test_a_batch_that_pays_over_the_horizon_applies_together() -> None:
    # 100 entries of 100 tokens; edits from entry 60 on save 3,000 of the 4,000 after it.
    edits = [candidate(60 + k, 300) for k in range(10)]
    args = {"cached_end": 100, "tokens_between": flat(100), "pricing": ANTHROPIC}
    rewrite = (4_000 - 3_000) * 1.25 - 4_000 * 0.1  # 850
    assert rewrite < 3_000 * 0.1 * 3  # pays within three calls
    short = plan(edits, horizon=2, budget=1e9, **args)  # type: ignore[arg-type]
    long = plan(edits, horizon=3, budget=1e9, **args)  # type: ignore[arg-type]
    assert not short.apply
    assert len(long.apply) == 10


def test_the_cut_is_where_the_batch_pays_best() -> None:
    # One cheap edit early, a rich run late: only the late run applies.
    edits = [candidate(5, 10), *[candidate(90 + k, 90) for k in range(10)]]
    chosen = plan(
        edits,
        cached_end=100,
        tokens_between=flat(100),
        pricing=ANTHROPIC,
        horizon=10,
        budget=1e9,
    )
    assert sorted(c.start for c in chosen.apply) == list(range(90, 100))
    assert [c.start for c in chosen.wait] == [5]


def test_a_batch_waits_while_the_session_cannot_pay_for_it() -> None:
    edits = [candidate(60 + k, 300) for k in range(10)]
    args = {"cached_end": 100, "tokens_between": flat(100), "pricing": ANTHROPIC, "horizon": 40}
    assert not plan(edits, budget=100, **args).apply  # type: ignore[arg-type]
    assert plan(edits, budget=1_000, **args).apply  # type: ignore[arg-type]


def test_pricing_comes_from_the_model_unless_set() -> None:
    assert provider_of("claude-sonnet-4-5") == "anthropic"
    assert provider_of("gpt-4.1") == "openai" and provider_of("o3-mini") == "openai"
    assert provider_of("models/gemini-2.5-pro") == "gemini"
    assert provider_of("llama-3") == "anthropic" and provider_of(None) == "anthropic"
    # Another provider named: its preset, whatever the model.
    values = resolve({"cache.pricing": "openai", "cache.writeCost": 1.5}, {}).values
    assert pricing_for(values, "claude-3") == Pricing("openai", 0.1, 1.5, 300_000)
    auto = resolve({"cache.ttlSeconds": 3600}, {}).values
    # A Gemini model: its row (any prefix, a tenth, no premium); one the table lacks, Gemini's
    # fallback row, and it says so.
    gemini = pricing_for(auto, "gemini-2.5-flash")
    assert gemini == Pricing(
        "gemini", 0.1, 1.0, 3_600_000, min_prefix=1024, row="gemini-2.5-flash", match="exact"
    )
    older = pricing_for(auto, "gemini-2.0")
    assert (older.read, older.write, older.at_breakpoints) == (0.1, 1.0, False)
    assert (older.row, older.match) == ("gemini-3.1-pro-preview", "fallback")
    named = resolve({"cache.pricing": "gemini"}, {}).values
    assert pricing_for(named, "claude-3") == Pricing("gemini", 0.1, 1.0, 300_000)
    defaults = resolve({}, {}).values
    # A Claude model: its row of the price table. Sonnet 4.6 reads at 0.1x, Opus 5.5 at
    # 0.05x; both write at 1.25x (five minutes) and 2x (an hour), at breakpoints found 20
    # content blocks back at most.
    sonnet = pricing_for(defaults, "claude-sonnet-4-6")
    assert (sonnet.read, sonnet.write, sonnet.write_long) == (0.1, 1.25, 2.0)
    assert (sonnet.at_breakpoints, sonnet.lookback_blocks, sonnet.ttl_ms) == (True, 20, 300_000)
    assert (sonnet.row, sonnet.match) == ("claude-sonnet-4-6", "exact")
    opus = pricing_for(defaults, "claude-opus-5-5-20260922")
    assert (opus.read, opus.write, opus.write_long) == (0.05, 1.25, 2.0)
    assert (opus.row, opus.match) == ("claude-opus-5-5", "family")
    # A model the table lacks: its provider's fallback row, and it says so.
    unknown = pricing_for(defaults, "claude-foo")
    assert (unknown.name, unknown.match) == ("anthropic", "fallback")
    assert unknown.row == "claude-opus-5-5"
    # GPT-5.6 and later cache at breakpoints (never on the model's own message, found however
    # far back), write at 1.25x and keep a prefix 30 minutes; older ones match any prefix.
    for model in ("gpt-5.6", "openai/gpt-5.6-sol", "gpt-6.1-sol", "gpt-5.6-codex"):
        newer = pricing_for(defaults, model)
        assert (newer.at_breakpoints, newer.assistant_breakpoints) == (True, False), model
        assert (newer.write, newer.ttl_ms, newer.lookback_blocks) == (1.25, 1_800_000, None)
    for model in ("gpt-4.1", "gpt-4o", "o3-mini"):
        older = pricing_for(defaults, model)
        assert not older.at_breakpoints and older.write == 1.0, model
    assert pricing_for(defaults, "gpt-4o").match == "fallback"
    # OpenAI named for a model that is not OpenAI's: OpenAI's preset.
    for model in ("claude-3", None):
        assert pricing_for(resolve({"cache.pricing": "openai"}, {}).values, model) == Pricing(
            "openai", 0.1, 1.0, 300_000
        ), model


def test_a_price_override_changes_only_what_it_names() -> None:
    mine = resolve({"cache.prices": {"claude-sonnet-4-6": {"cacheRead": 0.15}}}, {}).values
    pricing = pricing_for(mine, "claude-sonnet-4-6")
    assert (pricing.read, pricing.write, pricing.match) == (0.05, 1.25, "override")
    # A model the table lacks gets a row of its own over its provider's fallback.
    own = resolve({"cache.prices": {"claude-foo": {"input": 2, "cacheRead": 0.2}}}, {}).values
    assert pricing_for(own, "claude-foo").read == 0.1
    for bad in ({"claude-sonnet-4-6": {"cacheRead": -1}}, {"x": {"nope": 1}}, {"x": 3}, []):
        with pytest.raises(SettingError):
            validate("cache.prices", bad)


def test_the_ledger_knows_a_cold_cache_and_what_was_saved() -> None:
    ledger = CostLedger()
    assert not ledger.warm(0, ANTHROPIC)
    after, bill = ledger.record(at=0, charge=Charge(write=80), off_total=100, pricing=ANTHROPIC)
    assert bill.off == Charge(write=100) and bill.off_cost - bill.cost == 20 * 1.25
    assert after.warm(300_000, ANTHROPIC) and not after.warm(300_001, ANTHROPIC)
    assert after.saved == 20 * 1.25
    assert dataclasses.replace(after, cold_reported=True).warm(1, ANTHROPIC) is False


# -- in a session ---------------------------------------------------------------------------


def _bash(cid: str, output: str) -> list:  # type: ignore[type-arg]
    return [ai_call(cid, "bash", {"command": f"echo {cid}"}), tool_result(cid, "bash", output)]


def _session() -> Session:
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    s.set_override("compression.density.recencyPruning", True)
    s.set_override("compression.density.recencyRetention", 1)
    s.model = "claude-sonnet-4"
    return s


BIG = "output line\n" * 300


async def test_warm_edits_of_cached_entries_wait_and_a_cold_cache_applies_them() -> None:
    s = _session()
    s.append([human("go"), *_bash("b1", BIG), ai_text("next " * 500)])
    first = await s.compact(at=1_000)
    assert first.cache.cold and first.cache.stable_prefix == 0
    s.append([*_bash("b2", "short")])
    warm = await s.compact(at=2_000)  # b1's output is now old, but sits in the cached prefix
    assert not warm.cache.cold
    assert warm.cache.edits_pending == 1 and warm.cache.pending_tokens > 500
    assert warm.status.pending_tokens == warm.cache.pending_tokens
    assert warm.cache.stable_prefix == len(first.history)
    assert "output line" in warm.history.json().decode()
    s.append([ai_text("more")])
    cold = await s.compact(at=2_000 + 301_000)  # the provider's cache has expired
    assert cold.cache.cold and cold.cache.edits_applied == 1 and cold.cache.edits_pending == 0
    assert "output line" not in cold.history.json().decode()


async def test_every_turn_applies_at_once_whatever_the_cache() -> None:
    s = _session()
    s.set_override("compression.density.schedule", "every-turn")
    s.append([human("go"), *_bash("b1", BIG), ai_text("next " * 500)])
    await s.compact(at=1_000)
    s.append([*_bash("b2", "short")])
    result = await s.compact(at=2_000)
    assert result.cache.edits_applied == 1 and result.cache.edits_pending == 0
    assert result.cache.stable_prefix < len(result.history)  # the prefix broke


async def test_revisions_and_the_delta_name_what_the_client_holds() -> None:
    s = _session()
    s.append([human("go"), ai_text("ok")])
    first = await s.compact(at=1_000)
    s.append([human("and then"), ai_text("done")])
    second = await s.compact(at=2_000)
    assert first.revision != second.revision and second.previous == first.revision
    base, keep, entries = second.delta(first.revision)
    assert (base, keep) == (first.revision, 2)
    assert list(first.history) + list(entries) == list(second.history)
    assert second.delta("something else") == (None, 0, second.history)
    assert second.delta(None)[1] == 0


async def test_an_edit_that_takes_nothing_out_is_not_made() -> None:
    # A small edit's old and new text, shown again by a later read, are shorter than the
    # pointer that would stand for them: cache-aware leaves the call as it is, cold cache or
    # not; the seeds' schedule makes every edit.
    small = {"file_path": "/w/a.py", "old_string": "a - b", "new_string": "a + b"}
    entries = [
        human("fix it"),
        ai_call("e1", "Edit", small),
        tool_result("e1", "Edit", "ok"),
        ai_call("r1", "Read", {"file_path": "/w/a.py"}),
        tool_result("r1", "Read", "def add(a, b):\n    return a + b\n"),
        ai_text("fixed"),
    ]
    for schedule, made in (("cache-aware", False), ("every-turn", True)):
        s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
        s.set_override("compression.density.schedule", schedule)
        s.append(entries)
        result = await s.compact(at=1_000)
        assert result.cache.cold
        assert ('"old_string"' not in result.history.json().decode()) is made
        assert (result.density is not None and result.density.replacements == 1) is made


async def test_a_disk_pointer_is_made_though_it_is_longer_than_the_read() -> None:
    # It tells the model that the file it read changed on disk: worth it whatever the tokens.
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    s.append(
        [
            human("look"),
            ai_call("r1", "Read", {"file_path": "/w/a.py"}),
            tool_result("r1", "Read", "x = 1", ts=100),
            ai_text("seen"),
        ]
    )
    s.note_write("/w/a.py", 500)
    result = await s.compact(at=1_000)
    assert DISK_POINTER in result.history.json().decode()


def _plan_asking_every_start(
    candidates: list[Candidate],
    cached_end: int,
    tokens_between,  # type: ignore[no-untyped-def]
    restart,  # type: ignore[no-untyped-def]
    horizon: float,
    budget: float,
) -> tuple[list[Candidate], list[Candidate]]:
    """``plan`` as first written: where the read restarts asked for every start."""
    free = [c for c in candidates if c.start >= cached_end]
    costly = sorted((c for c in candidates if c.start < cached_end), key=lambda c: c.start)
    best, best_net, saved = len(costly), 0.0, 0
    for k in range(len(costly) - 1, -1, -1):
        saved += costly[k].saving
        if k > 0 and costly[k - 1].start == costly[k].start:
            continue
        after = tokens_between(restart(costly[k].start), cached_end)
        rewrite = (after - saved) * ANTHROPIC.write - after * ANTHROPIC.read
        net = horizon * saved * ANTHROPIC.read - rewrite
        if net > best_net and rewrite <= budget:
            best, best_net = k, net
    return free + costly[best:], costly[:best]


@settings(max_examples=examples(200), deadline=None)
@given(
    starts=st.lists(st.integers(0, 60), max_size=40),
    savings=st.lists(st.integers(-50, 400), min_size=40, max_size=40),
    entries=st.lists(st.integers(1, 60), max_size=5),
    cached_end=st.integers(0, 60),
    horizon=st.floats(0.5, 50),
    budget=st.floats(0, 1e5),
)
def test_the_plan_asks_where_the_read_restarts_once_per_cache_entry_and_decides_the_same(
    starts: list[int],
    savings: list[int],
    entries: list[int],
    cached_end: int,
    horizon: float,
    budget: float,
) -> None:
    live = sorted(set(entries))
    asked: list[int] = []

    def restart(i: int) -> int:
        asked.append(i)
        return max((e for e in live if e <= i), default=0)

    tokens = [(7 * i) % 23 + 1 for i in range(61)]

    def tokens_between(i: int, j: int) -> int:
        return sum(tokens[i:j])

    candidates = [candidate(s, v) for s, v in zip(starts, savings, strict=False)]
    apply, wait = _plan_asking_every_start(
        candidates, cached_end, tokens_between, restart, horizon, budget
    )
    ends = {restart(c.start) for c in candidates if c.start < cached_end}
    asked.clear()
    chosen = plan(
        candidates,
        cached_end=cached_end,
        tokens_between=tokens_between,
        pricing=ANTHROPIC,
        horizon=horizon,
        budget=budget,
        restart=restart,
    )
    assert (list(chosen.apply), list(chosen.wait)) == (apply, wait)
    assert len(asked) <= len(ends)
