"""What the daemon believes the provider holds (``cache/prompt_cache.py``), where it puts the
breakpoints, and what the schedule makes of it: an entry is found only at a breakpoint and only
20 content blocks back (Anthropic), so the daemon anchors a breakpoint before the edits that
wait, and a batch rewrites from that anchor instead of from the start."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.billing import PRICE_MODELS, Bill
from hdcontext.core.cache.ledger import Charge, CostLedger
from hdcontext.core.cache.pricing import ANTHROPIC, OPENAI, OPENAI_BREAKPOINTS, Pricing
from hdcontext.core.cache.prompt_cache import Call, Placed, PromptCache
from hdcontext.core.cache.schedule import Candidate
from hdcontext.core.density.edits import Edit
from hdcontext.core.session.session import Session
from hdcontext.core.session.state import SessionState
from hdcontext.formats.importers.claude_code import from_jsonl

from .builders import ai, ai_call, ai_text, call, human, response, tool_result, tools

TTL = 300_000


@dataclass(frozen=True)
class Flat:
    """A working view of equal entries: ``tokens`` and ``blocks`` each."""

    tokens: int = 100
    blocks: int = 1

    def tokens_between(self, start: int, stop: int) -> int:
        return max(0, stop - start) * self.tokens

    def blocks_between(self, start: int, stop: int) -> int:
        return max(0, stop - start) * self.blocks


def _call(
    length: int,
    unchanged: int,
    at: int = 10_000,
    pricing: Pricing = ANTHROPIC,
    slots: int = 2,
    view: Flat | None = None,
    carries: Sequence[int] | None = None,
) -> Call:
    return Call(
        view=view or Flat(),
        length=length,
        unchanged=unchanged,
        at=at,
        pricing=pricing,
        slots=slots,
        carries=(lambda p: True) if carries is None else (lambda p: p in carries),
    )


def _warm(held: tuple[tuple[int, int], ...]) -> PromptCache:
    """Entries of the default lifetime, each (length, last used)."""
    entries = tuple((q, used, TTL) for q, used in held)
    return PromptCache(held=entries, ledger=CostLedger(calls=1, last_at=held[-1][1]))


def _used(cache: PromptCache) -> tuple[tuple[int, int], ...]:
    """The entries as (length, last used)."""
    return tuple((q, used) for q, used, _ in cache.held)


def test_live_entries_are_those_the_request_starts_with_and_the_cache_still_holds() -> None:
    cache = _warm(((3, 1_000), (7, 2_000), (12, 3_000), (20, 4_000)))
    early = cache.live(_call(30, unchanged=15, at=4_500))
    assert early == ((3, 1_000, TTL), (7, 2_000, TTL), (12, 3_000, TTL))
    later = _call(30, unchanged=20, at=301_500)  # 3 was last used more than five minutes before
    assert cache.live(later) == ((7, 2_000, TTL), (12, 3_000, TTL), (20, 4_000, TTL))
    assert cache.reported_cold().live(later) == ()


def test_a_breakpoint_finds_an_entry_only_within_the_lookback() -> None:
    cache = _warm(((10, 1_000), (40, 2_000)))
    # 25 entries of one block each after the entry at 40: the last one's lookback misses it.
    request = _call(65, unchanged=65)
    assert cache.reading(request, [65]) == 0
    assert cache.reading(request, [40, 65]) == 40
    assert cache.reading(request, [45, 65]) == 40  # five blocks back from a breakpoint at 45
    # 20 blocks back is still found; OpenAI GPT-5.6 finds it however far back.
    assert cache.reading(_call(60, unchanged=60), [60]) == 40
    gpt = _call(65, unchanged=65, pricing=OPENAI_BREAKPOINTS)
    assert cache.reading(gpt, [65]) == 40
    # A provider that matches any shared prefix reads all the request shares while warm.
    assert cache.reading(_call(65, unchanged=50, pricing=OPENAI), [65]) == 50


def test_the_last_entry_always_carries_one_and_a_far_read_gets_its_own() -> None:
    cache = _warm(((40, 2_000),))
    assert cache.place(_call(45, unchanged=45), []) == (45,)  # the tail finds 40 itself
    assert cache.place(_call(65, unchanged=65), []) == (40, 65)  # it would not
    assert cache.place(_call(65, unchanged=65, slots=1), []) == (65,)
    # Where the entry itself cannot carry one, the first place after it that can and finds it.
    assert cache.place(_call(65, unchanged=65, carries=[50, 65]), []) == (50, 65)


def test_an_anchor_goes_right_before_the_first_waiting_edit() -> None:
    cache = _warm(((40, 2_000),))
    request = _call(45, unchanged=45)
    assert cache.place(request, [12, 30]) == (12, 45)
    assert cache.place(_call(45, unchanged=45, slots=3), [12, 30]) == (12, 30, 45)
    # OpenAI: not on the model's own message; the anchor goes to the last one before it that can.
    gpt = _call(45, unchanged=45, pricing=OPENAI_BREAKPOINTS, carries=[9, 11, 45])
    assert cache.place(gpt, [12]) == (11, 45)
    # The read comes first when the slots are few: without it the request reads nothing.
    far = _call(65, unchanged=65)
    assert cache.place(far, [12]) == (40, 65)
    assert cache.place(_call(65, unchanged=65, slots=3), [12]) == (12, 40, 65)


def test_a_call_keeps_the_entries_it_wrote_and_read_and_the_ledger_bills_the_read() -> None:
    cache = _warm(((10, 1_000), (40, 2_000)))
    request = _call(45, unchanged=45, at=5_000)
    after, bill = cache.called(request, Placed.default((12, 45)), off_total=4_500)
    assert _used(after) == ((10, 1_000), (12, 5_000), (40, 5_000), (45, 5_000))
    # 40 entries read at 0.1, 5 written at 1.25.
    assert after.ledger.spent == 40 * 100 * 0.1 + 5 * 100 * 1.25
    assert bill.charge == Charge(read=4_000, write=500) and bill.cost == after.ledger.spent
    # An entry past a change is gone for good.
    changed, _ = after.called(_call(47, unchanged=11, at=6_000), Placed.default((47,)), 4_700)
    assert [q for q, _, _ in changed.held] == [10, 47]


def _edit(start: int, saving: int) -> Candidate:
    return Candidate(Edit("readWrite", ()), start, saving)


def test_the_schedule_plans_with_the_anchor_it_placed() -> None:
    # One edit at entry 12 of 45 that saves 3,000 tokens, the session having saved 1,000.
    edit = [_edit(12, 3_000)]
    ledger = CostLedger(calls=10, last_at=2_000, spent=2_000.0, spent_off=3_000.0)
    without = PromptCache(held=((45, 2_000, TTL),), ledger=ledger)
    # Without an anchor, applying it would write the whole history again: it waits.
    assert not without.choose(_call(47, unchanged=45), edit, all_now=False).apply
    # With the anchor at 12 alive, the batch rewrites from there: it applies.
    anchored = PromptCache(held=((12, 2_000, TTL), (45, 2_000, TTL)), ledger=ledger)
    assert anchored.choose(_call(47, unchanged=45), edit, all_now=False).apply
    # A client that places only the last breakpoint cannot re-hit the anchor: it waits.
    tail = _call(47, unchanged=45, slots=1)
    assert not anchored.choose(tail, edit, all_now=False).apply
    # Nothing the request could read: everything applies.
    assert PromptCache().choose(_call(47, unchanged=45), edit, all_now=False).apply


def _reads(n: int) -> list:  # type: ignore[type-arg]
    """``n`` parallel reads in one turn: 2n + 1 content blocks."""
    calls = [call(f"r{k}", "Read", {"file_path": f"/w/f{k}.py"}) for k in range(n)]
    results = [response(f"r{k}", "Read", f"line {k}\n" * 50) for k in range(n)]
    return [ai(*calls), tools(*results)]


async def test_a_turn_of_many_blocks_gets_a_breakpoint_where_the_previous_request_ended() -> None:
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    s.model = "claude-sonnet-4"
    s.append([human("look at everything")])
    first = await s.compact(at=1_000)
    assert first.cache.breakpoints == [0]
    s.append(_reads(12))  # 25 blocks: the last entry's lookback would not reach entry 0
    second = await s.compact(at=2_000)
    assert second.cache.breakpoints == [0, 2]
    s.append([ai_text("Done."), human("thanks")])
    third = await s.compact(at=3_000)
    assert third.cache.breakpoints == [4]


async def test_breakpoints_come_with_a_delta_reply_and_a_same_history_keeps_its_revision() -> None:
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    s.append([human("hello")])
    first = await s.compact(at=1_000)
    again = await s.compact(at=2_000)
    assert again.revision == first.revision
    assert again.delta(first.revision) == (first.revision, 1, again.history[1:])
    assert again.cache.breakpoints == [0]
    s.append([ai_text("hi"), human("more")])
    third = await s.compact(at=3_000)
    assert third.revision != first.revision


REVIEW = "Replaced 1 occurrences. Please review the changes.\n" + "".join(
    f"{n}: total = total + item.price  # line {n}\n" for n in range(1, 40)
)


async def _calls(model: str) -> list[str]:
    """Three model calls; the third could trim the edit's echo, which the second request
    ended with, right after a long answer of the model's that the second request began."""
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    s.model = model
    s.append([human("fix the total")])
    await s.compact(at=1_000)
    s.append(
        [
            ai_text("Let me think about this. " * 600),
            ai_call("e1", "Edit", {"file_path": "/w/a.py", "old_string": "a", "new_string": "b"}),
            tool_result("e1", "Edit", REVIEW),
        ]
    )
    await s.compact(at=2_000)
    s.append([ai_text("Done.")])
    third = await s.compact(at=3_000)
    return [b.decode() for b in third.history.blobs]


async def test_an_edit_inside_the_previous_request_waits_where_it_would_rewrite_the_answer() -> (
    None
):
    # Anthropic: trimming the echo would make it write the long answer again.
    anthropic = await _calls("claude-sonnet-4")
    assert any("# line 5" in blob for blob in anthropic)
    # OpenAI matches any shared prefix: the trim loses only the echo's own cache.
    openai = await _calls("gpt-4o")
    assert not any("# line 5" in blob for blob in openai)


async def test_what_the_provider_holds_is_saved_with_the_session() -> None:
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    for k in range(3):
        s.append([human(f"question {k}"), ai_text(f"answer {k}")])
        await s.compact(at=1_000 * (k + 1))
    state = s.export_state()
    # Each request's end was read again by the next call (it hit it), the last one written.
    assert _used(state.cache.prompt) == ((2, 2_000), (4, 3_000), (6, 3_000))
    again = SessionState.from_json(state.to_json())
    assert again.cache == state.cache


def test_a_session_saved_before_breakpoints_keeps_its_request_ends() -> None:
    old = (
        '{"overrides": {}, "version": 3, "savedTokens": 0, "dirty": false, "todos": [],'
        ' "todosSince": 0, "writes": {}, "model": null, "epoch": "", "lineage": null,'
        ' "cache": {"ledger": {"calls": 2, "last_at": 3000, "off_tokens": 10, "spent": 5.0,'
        ' "spent_off": 6.0, "cold_reported": false}, "reply": {"revision": 2, "raw_len": 4,'
        ' "curated_len": 4, "changed_from": null, "earlier": [[2, 2000]]}, "density_saved": 0,'
        ' "pending_tokens": 0, "pending_edits": 0, "usage": {"calls": 0, "input_tokens": 0,'
        ' "cache_read_tokens": 0, "cache_write_tokens": 0, "output_tokens": 0}}}'
    )
    state = SessionState.from_json(old)
    assert state.cache.prompt.held == ((2, 2_000, TTL), (4, 3_000, TTL))
    assert state.cache.prompt.ledger.spent == 5.0
    assert state.cache.reply.raw_len == 4


SHARED = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts"
REAL = sorted((SHARED / "claude-code").glob("*.jsonl"))


@pytest.mark.skipif(not REAL, reason="no shared transcripts")
@pytest.mark.parametrize("price", ["anthropic", "anthropic_tail", "openai", "gpt_5_6"])
@pytest.mark.parametrize("settings", [{}, {"compression.density.recencyPruning": True}])
async def test_the_daemon_prices_what_the_provider_bills(
    price: str, settings: dict[str, object]
) -> None:
    """On real sessions, what the daemon's ledger says the calls cost is what the bench's
    independent bill says the provider charges for the requests with the breakpoints the
    daemon named: its plans are priced as the provider bills. (The bench's kinder models of
    Anthropic's cache, ``anthropic_ends`` and ``anthropic_any_prefix``, are not what it plans
    for.)"""
    model = PRICE_MODELS[price]
    for path in REAL:
        entries = from_jsonl(path.read_text(encoding="utf-8"))
        values = {**settings, "cache.maxBreakpoints": model.slots}
        s = Session("s", settings=lambda v=values: v, workspace_root=lambda: "/w", clock=lambda: 0)
        s.model = model.model
        bill = Bill(model)
        appended, clock = 0, 0
        for i, entry in enumerate(entries):
            if entry.speaker != "ai" or i == 0:
                continue
            s.append(entries[appended:i])
            appended = i
            clock = entry.timestamp if entry.timestamp is not None else clock + 10_000
            result = await s.compact(at=clock)
            counts = dict(zip(s.history.raw_json, s.history.tokens, strict=True))
            request = list(result.history.blobs)
            blocks = [len(e.blocks) for e in result.history]
            breakpoints = [b + 1 for b in result.cache.breakpoints]
            bill.call(request, [counts[b] for b in request], blocks, breakpoints, clock)
        spent = s.export_state().cache.prompt.ledger.spent
        assert spent == pytest.approx(bill.total, rel=1e-9), path.name
