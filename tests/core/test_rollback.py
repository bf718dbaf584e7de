"""The one rollback path: ``Session.snapshot`` then ``restore`` puts everything back.

The daemon's registry wraps every request in it, so a request that fails half-way (a summary
that never comes, a full disk) leaves the session as it found it. Whatever ran in between
(appends, compactions that pruned and compressed, overrides, todos, disk writes, a clear), the
restored session must hold the same history, transcript and state, and must go on to behave
exactly as a session that never saw the failed request.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.core.compression.types import SummarizeRequest
from hdcontext.core.content import IContent
from hdcontext.core.session.session import Session
from hdcontext.core.settings import Settings
from tests.examples import examples

from .builders import ai_call, ai_text, human, tool_result

ROOT = "/w"
FILES = ("a.py", "b.py", "c.py")


def _turn(kind: str, n: int, path: str) -> list[IContent]:
    cid = f"c{n}"
    if kind == "read":
        return [
            ai_call(cid, "read_file", {"file_path": path}),
            tool_result(cid, "read_file", "x" * 300),
        ]
    if kind == "write":
        return [
            ai_call(cid, "write_file", {"file_path": path, "content": "y"}),
            tool_result(cid, "write_file"),
        ]
    if kind == "include":
        return [human(f"--- {path} ---\nbody {n}\n--- End of content ---")]
    return [ai_text(f"thinking {n} " * 20)]


turns = st.lists(
    st.tuples(st.sampled_from(["read", "write", "include", "talk"]), st.sampled_from(FILES)),
    min_size=1,
    max_size=12,
)
changes = st.lists(
    st.one_of(
        st.tuples(st.just("append"), turns),
        st.tuples(st.just("compact"), st.sampled_from([200_000, 3_000, 800])),
        st.tuples(st.just("override"), st.sampled_from(["recency", "strategy", "limit"])),
        st.tuples(st.just("disk"), st.sampled_from(FILES)),
        st.tuples(st.just("todos"), st.none()),
        st.tuples(st.just("clear"), st.none()),
    ),
    min_size=1,
    max_size=6,
)


async def _summary(request: SummarizeRequest, values: Settings) -> str:
    return "<state_snapshot>what happened</state_snapshot>"


def _session() -> Session:
    ticks = iter(range(1_000, 10_000_000, 7))
    return Session("s", workspace_root=lambda: ROOT, clock=lambda: next(ticks), summarizer=_summary)


class _Counter:
    def __init__(self) -> None:
        self.n = 0

    def next(self) -> int:
        self.n += 1
        return self.n


async def _apply(s: Session, change: tuple[str, Any], ids: _Counter) -> None:
    what, value = change
    if what == "append":
        s.append([e for kind, path in value for e in _turn(kind, ids.next(), path)])
    elif what == "compact":
        s.set_override("contextLimit", value)
        await s.compact()
    elif what == "override":
        key, val = {
            "recency": ("compression.density.recencyPruning", True),
            "strategy": ("compression.strategy", "one-shot"),
            "limit": ("contextLimit", 5_000),
        }[value]
        s.set_override(key, val)
    elif what == "disk":
        s.note_write(f"{ROOT}/{value}", 10**12)
    elif what == "todos":
        from hdcontext.core.tools.todos import Todo

        s.set_todos([Todo(id="1", content="finish")])
    else:
        s.clear()


def _state(s: Session) -> tuple[Any, ...]:
    h = s.history
    return (
        list(h.raw_json),
        list(h.tokens),
        list(h.keys),
        list(h.timestamps),
        list(h.transcript_json),
        h.total_tokens,
        h.curated_count,
        s.export_state(),
        s.status(),
    )


async def _play(
    before: list[tuple[str, Any]], failed: list[tuple[str, Any]], after: list[tuple[str, Any]]
) -> None:
    ids, twin_ids = _Counter(), _Counter()
    s, twin = _session(), _session()
    for change in before:
        await _apply(s, change, ids)
        await _apply(twin, change, twin_ids)
    expected = _state(s)
    snap = s.snapshot()
    for change in failed:
        await _apply(s, change, ids)
    s.restore(snap)
    assert _state(s) == expected
    ids.n = twin_ids.n
    for change in after:
        await _apply(s, change, ids)
        await _apply(twin, change, twin_ids)
        # Timestamps come from each session's own clock: compare what the clocks do not set.
        assert list(s.history.curated()) != [] or list(twin.history.curated()) == []
        assert [e.blocks for e in s.history.raw] == [e.blocks for e in twin.history.raw]
        assert s.history.total_tokens == twin.history.total_tokens


@settings(max_examples=examples(150), deadline=None)
@given(changes, changes, changes)
def test_restore_puts_the_session_back_and_it_goes_on_as_if_nothing_happened(
    before: list[tuple[str, Any]], failed: list[tuple[str, Any]], after: list[tuple[str, Any]]
) -> None:
    asyncio.run(_play(before, failed, after))
