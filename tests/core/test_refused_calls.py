"""A call that never reached the model (``Session.call_refused``): the provider answered it
with an error, or could not be reached, so nothing of it was billed or cached. The agent
retries; the retry must be weighed and priced as if the refused call had never been made,
and ``hdcontext stats`` must not count it."""

from __future__ import annotations

import asyncio

from hdcontext.core.session.reply import CompactResult
from hdcontext.core.session.session import Session
from hdcontext.core.stats.calls import CallMade, CallRefused, UsageReported

from .builders import ai_call, ai_text, human, tool_result
from .test_lifetimes import _long_session

FILE = "def f():\n    return 1\n" * 120


def _session(schedule: str) -> Session:
    """A session whose first call is made and billed, and whose second turn brings a write
    that makes the first read stale (an edit the second call applies)."""
    s = Session(
        "s",
        workspace_root=lambda: "/w",
        clock=lambda: 0,
        settings=lambda: {"compression.density.schedule": schedule},
    )
    s.model = "claude-sonnet-4-5"
    s.append([human("look at a.py"), ai_call("r1", "Read", {"file_path": "/w/a.py"}, ts=10)])
    s.append([tool_result("r1", "Read", FILE, ts=11), ai_text("it returns 1", ts=12)])
    first = asyncio.run(s.compact(at=1_000))
    assert first.bill is not None
    s.record_usage(first.bill.charge.total, first.bill.charge.read, first.bill.charge.write)
    s.append(
        [
            human("make it return 2", ts=20),
            ai_call("w1", "Write", {"file_path": "/w/a.py", "content": "x = 2\n"}, ts=21),
            tool_result("w1", "Write", "File written", ts=22),
            ai_call("r2", "Read", {"file_path": "/w/a.py"}, ts=23),
            tool_result("r2", "Read", "x = 2\n", ts=24),
        ]
    )
    return s


def _same_call(a: CompactResult, b: CompactResult) -> None:
    assert a.bill is not None and b.bill is not None
    assert b.bill.charge == a.bill.charge
    assert b.bill.off == a.bill.off
    assert list(b.history) == list(a.history)


def test_the_retry_of_a_refused_call_is_priced_as_if_it_had_never_been_made() -> None:
    for schedule in ("every-turn", "cache-aware"):
        never = _session(schedule)
        alone = asyncio.run(never.compact(at=60_000))

        refused = _session(schedule)
        made = asyncio.run(refused.compact(at=60_000))
        assert made.density is not None and made.density.removals + made.density.replacements
        assert refused.call_refused(at=60_500)
        retry = asyncio.run(refused.compact(at=60_000))

        _same_call(alone, retry)
        # Taken as made, the retry would read from the cache what the refused call wrote.
        assert retry.bill is not None and made.bill is not None
        assert retry.bill.charge.read < made.bill.charge.read + made.bill.charge.write
        # What the provider holds and what the calls cost, as if it had never been made.
        assert refused.export_state().cache.prompt == never.export_state().cache.prompt
        assert _wire(refused) == _wire(never)


def _wire(s: Session) -> dict[str, object]:
    status = s.status().to_wire()
    del status["version"]  # (a refusal is a change of the session)
    return status


def test_only_the_last_call_is_taken_back_and_only_once() -> None:
    s = _session("every-turn")
    asyncio.run(s.compact(at=60_000))
    s.record_usage(500, 0, 500)  # it reached the model: its usage came
    assert not s.call_refused()
    asyncio.run(s.compact(at=61_000))
    assert s.call_refused()
    assert not s.call_refused()  # nothing left to take back
    events = s.take_calls()
    assert [type(e) for e in events if not isinstance(e, UsageReported)] == [
        CallMade,
        CallMade,
        CallMade,
        CallRefused,
    ]


def test_a_refusal_is_noted_for_stats_after_its_call() -> None:
    s = _session("every-turn")
    s.take_calls()
    asyncio.run(s.compact(at=60_000))
    s.call_refused(at=60_400)
    made, refused = s.take_calls()
    assert isinstance(made, CallMade) and refused == CallRefused(60_400)


def test_a_call_rolled_back_leaves_nothing_to_take_back() -> None:
    s = _session("every-turn")
    snap = s.snapshot()
    asyncio.run(s.compact(at=60_000))
    s.restore(snap)
    assert not s.call_refused()


def test_a_refused_refresh_call_leaves_the_cache_as_the_last_call_left_it() -> None:
    s = _long_session({"cache.refresh": True})
    last = asyncio.run(s.compact(at=1_600_000))
    s.append([ai_call("long", "Bash", {"command": "make test"})])
    assert last.cache is not None and last.cache.refresh_at is not None
    before = s.export_state().cache
    refreshed = s.refresh(at=last.cache.refresh_at)
    assert refreshed.bill is not None and s.export_state().cache.prompt != before.prompt
    assert s.call_refused()
    after = s.export_state().cache
    assert (after.prompt, after.reply, after.expected) == (before.prompt, before.reply, None)
    # The next refresh is decided again, from the cache as the last model call left it.
    again = s.refresh(at=last.cache.refresh_at)
    assert again.bill == refreshed.bill
