"""What a session notes of each call for ``hdcontext stats`` (``core/stats/calls.py``): a model
call and a refresh call with the daemon's bill, the session's model and masked count; a usage,
attached to the call that waits for it or on its own; a retrieve. Taken once; a change rolled
back takes its own back."""

from __future__ import annotations

import asyncio

from hdcontext.core.session.session import Session
from hdcontext.core.stats.calls import CallMade, Retrieved, UsageReported

from .builders import ai_call, human, tool_result
from .test_lifetimes import _long_session


def test_each_model_call_is_noted_with_its_bill_model_and_masked_count() -> None:
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0)
    s.model = "claude-sonnet-4-5"
    s.append([human("look"), ai_call("r1", "Read", {"file_path": "/w/a.py"})])
    s.append([tool_result("r1", "Read", "print(1)\n" * 50)])
    result = asyncio.run(s.compact(at=1_000))
    s.model = "claude-opus-4-8"  # the next call is another model's
    asyncio.run(s.compact(at=2_000))
    first, second = s.take_calls()
    assert isinstance(first, CallMade) and isinstance(second, CallMade)
    assert (first.at, first.refresh, first.model) == (1_000, False, "claude-sonnet-4-5")
    assert first.bill == result.bill
    assert first.masked == s.masked_outputs
    assert second.model == "claude-opus-4-8"
    assert s.take_calls() == []  # taken once


def test_a_usage_belongs_to_the_call_that_waits_for_it() -> None:
    s = Session("s", clock=lambda: 5)
    s.model = "gpt-4.1"
    s.append([human("hello")])
    asyncio.run(s.compact(at=1_000))
    s.record_usage(900, 0, 0, 12, at=1_500, write_1h_tokens=0)
    s.record_usage(800)  # a second report: no call waits for it
    s.note_retrieved(at=1_700)
    call, usage, again, retrieved = s.take_calls()
    assert isinstance(call, CallMade)
    assert usage == UsageReported(1_500, "gpt-4.1", True, usage.billed)
    assert (usage.billed.input, usage.billed.output, usage.billed.write_1h) == (900, 12, 0)
    assert isinstance(again, UsageReported) and not again.attached and again.at == 5
    assert again.billed.write_1h is None
    assert retrieved == Retrieved(1_700)


def test_a_refresh_call_is_noted_as_one() -> None:
    s = _long_session({"cache.refresh": True})
    last = asyncio.run(s.compact(at=1_600_000))
    s.append([ai_call("long", "Bash", {"command": "make test"})])
    s.take_calls()
    assert last.cache.refresh_at is not None
    refreshed = s.refresh(at=last.cache.refresh_at)
    (noted,) = s.take_calls()
    assert isinstance(noted, CallMade) and noted.refresh and noted.bill == refreshed.bill


def test_a_change_rolled_back_takes_its_calls_back() -> None:
    s = Session("s", clock=lambda: 0)
    s.append([human("hello")])
    snap = s.snapshot()
    asyncio.run(s.compact(at=1_000))
    s.record_usage(100)
    s.restore(snap)
    assert s.take_calls() == []
