"""High-density compression run after run reads only what changed (compression/incremental.py),
and installs exactly what compressing the whole history installs."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from hdcontext.core.compression import incremental
from hdcontext.core.compression.high_density import HighDensityStrategy
from hdcontext.core.compression.incremental import Summaries
from hdcontext.core.compression.types import CompressionContext
from hdcontext.core.content import IContent, entry_from_json
from hdcontext.core.density.types import DensityResult
from hdcontext.core.history.history import History
from hdcontext.core.session.session import Session
from hdcontext.formats.importers.claude_code import from_jsonl
from tests.examples import examples

from .builders import ai, ai_call, call, human, response, tool_result, tools

TRANSCRIPTS = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "claude-code"
)
FILES = sorted(TRANSCRIPTS.glob("*.jsonl"))[:4]
START = 1_700_000_000_000


def load(path: Path) -> list[IContent]:
    return from_jsonl(path.read_text(encoding="utf-8"))


def session(limit: int) -> tuple[Session, list[int]]:
    clock = [START]
    s = Session("incremental", clock=lambda: clock[0], settings=lambda: {})
    s.model = "claude-sonnet-4-5"
    s.set_override("contextLimit", limit)
    return s, clock


def reading(n: int, lines: int = 80) -> list[IContent]:
    """A Read call and its long numbered output, as an agent's turn brings them."""
    text = "\n".join(f"{i}\tvalue_{n}_{i} = compute({i}, {n})" for i in range(lines))
    return [
        ai_call(f"c{n}", "Read", {"file_path": f"/w/f{n}.py"}),
        tool_result(f"c{n}", "Read", text),
    ]


@pytest.mark.skipif(not FILES, reason=f"no transcripts at {TRANSCRIPTS}")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem[:12])
@pytest.mark.parametrize("limit", [8_000, 40_000])
def test_turn_by_turn_compaction_is_what_reading_everything_every_time_makes(
    path: Path, limit: int
) -> None:
    """Two sessions fed the same turns with a limit that keeps them compressing: one keeps
    what its runs learnt, the other forgets it before every run (each run reads the whole
    history, as compressing did before). Every reply and every history agree, through a
    rewind that drops entries the first runs read."""
    entries = load(path)
    kept, kept_clock = session(limit)
    fresh, fresh_clock = session(limit)
    rewound = False
    for k in range(0, len(entries), 2):
        for s, clock in ((kept, kept_clock), (fresh, fresh_clock)):
            clock[0] += 30_000
            s.append(entries[k : k + 2])
            if not rewound and k >= len(entries) // 2:
                s.history.truncate(len(s.history.raw_json) - 5)
            if s is fresh:
                s._compressor.summaries = Summaries()
            reply = asyncio.run(s.compact())
            s.history.mark_stable()
            if s is kept:
                kept_reply = reply
        rewound = rewound or k >= len(entries) // 2
        assert kept_reply == reply
        assert list(kept.history.raw_json) == list(fresh.history.raw_json)
        assert list(kept.history.keys) == list(fresh.history.keys)
        assert list(kept.history.tokens) == list(fresh.history.tokens)


def test_a_turn_near_the_limit_reads_only_its_new_entries(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once every old output is a one-liner and the history still does not fit, a turn's
    compression parses the entries it brought, not the history (it parsed every entry on
    every turn before)."""
    s, clock = session(4_000)
    s.append([human("go")])
    for n in range(61):
        s.append(reading(n))
        clock[0] += 30_000
        asyncio.run(s.compact())
    assert s.history.total_tokens > 0.85 * 4_000  # still over: every turn compresses
    parsed: list[bytes] = []

    def counting(data: bytes) -> IContent:
        parsed.append(data)
        return entry_from_json(data)

    monkeypatch.setattr(incremental, "entry_from_json", counting)
    for n in range(61, 65):
        clock[0] += 30_000
        parsed.clear()
        s.append(reading(n))
        asyncio.run(s.compact())
        # the two new entries, the outputs leaving the recent tail and their calls: a few of
        # the 120-odd entries the history holds
        assert 0 < len(parsed) <= 6, len(parsed)
    assert len(s.history.raw_json) == 1 + 2 * 65


def test_each_run_starts_where_the_last_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a run cut is as compressing leaves it: run again over the same history (its recent
    tail shorter, since the history is), a run cuts only entries from where the last stopped,
    and once nothing is left to cut it cuts nothing and parses nothing."""
    entries = [human("go")] + [e for n in range(40) for e in reading(n)]
    history = History()
    history.append(entries)
    summaries = Summaries()
    parsed: list[bytes] = []

    def counting(data: bytes) -> IContent:
        parsed.append(data)
        return entry_from_json(data)

    monkeypatch.setattr(incremental, "entry_from_json", counting)
    stop = 0
    for _ in range(20):
        parsed.clear()
        changes, next_stop = summaries.run(history.raw_json, history.tokens, 2_000, 0.3)
        assert all(i >= stop for i in changes)
        history.apply_density_result(DensityResult((), changes))
        summaries.settle(history.raw_json, next_stop)
        if not changes and next_stop == stop:
            break
        stop = next_stop
    assert changes == {}
    assert parsed == []


def test_the_cuts_are_the_strategys_own() -> None:
    """The incremental run cuts what ``HighDensityStrategy.compress`` cuts from the whole list."""
    entries = [human("go")] + [e for n in range(30) for e in reading(n)]
    history = History()
    history.append(entries)
    context = CompressionContext(
        history=list(history.raw), tokens=history.tokens, context_limit=4_000, threshold=0.85
    )
    whole = asyncio.run(HighDensityStrategy().compress(context)).new_history
    changes, _ = Summaries().run(
        history.raw_json, history.tokens, context.target_tokens, context.preserve_threshold
    )
    assert changes
    assert [changes.get(i, e) for i, e in enumerate(history.raw)] == list(whole)


def test_a_cut_installs_what_replacing_all_installs_under_the_same_keys() -> None:
    """The session installs its cuts as a density edit's replacements: the view
    ``replace_all`` of the same list makes, but the rewritten entries keep their keys, and
    the change is a journal's change (the density engine and the store take in the entries
    that changed, not the whole history again)."""
    entries = [human("go")] + [e for n in range(6) for e in reading(n)]
    a, b = History(), History()
    a.append(entries)
    b.append(entries)
    keys, revision = list(a.keys), a.journal.revision
    parsed = list(b.raw)
    changes = {2: entry_from_json(a.raw_json[2]).with_blocks([]), 6: human("cut")}
    a.apply_density_result(DensityResult((), changes))
    b.replace_all([changes.get(i, e) for i, e in enumerate(parsed)], parsed=parsed)
    for name in ("raw_json", "tokens", "timestamps"):
        assert list(getattr(a, name)) == list(getattr(b, name)), name
    assert a.total_tokens == b.total_tokens
    assert a.curated().json_parts() == b.curated().json_parts()
    assert a.changed_from == b.changed_from == 2
    assert a.cut_point(3) == b.cut_point(3)
    assert list(a.keys) == keys
    assert [sorted(k for k, _ in c.added) for c in a.journal.since(revision) or []] == [
        [keys[2], keys[6]]
    ]


def test_a_session_cuts_old_output_in_place() -> None:
    """A session over the threshold cuts old outputs and every entry keeps its key (installed
    whole, as it was, every key was new and the density engine read every entry again)."""
    s, _ = session(4_000)
    s.append([human("go")])
    for n in range(12):
        s.append(reading(n))
    before, keys = list(s.history.raw_json), list(s.history.keys)
    asyncio.run(s.compact())
    assert list(s.history.raw_json) != before  # an output was cut
    assert list(s.history.keys) == keys


@st.composite
def agent_turns(draw: st.DrawFn) -> list[list[IContent]]:
    """Turns of an agent at work: reads, edits and shell runs of a few files, one or two calls
    a turn, outputs from empty to long, some failed; a user's line now and then. Reads of a
    file an edit later changes go stale, so edits between compressions rewrite old entries."""
    turns: list[list[IContent]] = [[human("start")]]
    for n in range(draw(st.integers(4, 30))):
        kinds = draw(st.lists(st.sampled_from(["Read", "Edit", "Bash"]), min_size=1, max_size=2))
        calls, answers = [], []
        for j, kind in enumerate(kinds):
            path = f"/w/{draw(st.sampled_from('abc'))}.py"
            params: JsonValue = {"file_path": path}
            if kind == "Bash":
                params = {"command": f"cat {path} | head -{draw(st.integers(1, 90))}"}
            elif kind == "Edit":
                params = {"file_path": path, "old_string": "x", "new_string": "y"}
            lines = draw(st.integers(0, 90))
            text = "\n".join(f"{i}\tline {i} of {path} in turn {n}" for i in range(lines))
            error = "failed" if draw(st.integers(0, 9)) == 0 else None
            calls.append(call(f"c{n}-{j}", kind, params))
            answers.append(response(f"c{n}-{j}", kind, text, error))
        turn = [ai(*calls), tools(*answers)]
        if draw(st.integers(0, 4)) == 0:
            turn.append(human(f"go on {n}"))
        turns.append(turn)
    return turns


@settings(max_examples=examples(30), deadline=None)
@given(agent_turns(), st.data())
def test_for_every_history_compacting_turn_by_turn_is_reading_everything_each_time(
    turns: list[list[IContent]], data: st.DataObject
) -> None:
    """Generated agent sessions fed turn by turn with a drawn limit, a drawn rewind before
    some compactions: the session that keeps what its compressions learnt replies and holds
    exactly what one that forgets it before every run does."""
    limit = data.draw(st.sampled_from([1_500, 4_000, 8_000]), label="limit")
    kept, kept_clock = session(limit)
    fresh, fresh_clock = session(limit)
    for turn in turns:
        rewind = data.draw(st.sampled_from([0, 0, 0, 1, 3]), label="rewind")
        replies = []
        for one, clock in ((kept, kept_clock), (fresh, fresh_clock)):
            clock[0] += 30_000
            one.append(turn)
            held = len(one.history.raw_json)
            if rewind and held > rewind:
                one.history.truncate(held - rewind)
            if one is fresh:
                one._compressor.summaries = Summaries()
            replies.append(asyncio.run(one.compact()))
            one.history.mark_stable()
        assert replies[0] == replies[1]
        assert list(kept.history.raw_json) == list(fresh.history.raw_json)
        assert list(kept.history.keys) == list(fresh.history.keys)
