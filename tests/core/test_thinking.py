"""Thinking bound to its prefix (``core/history/thinking.py``): the price table says which models
bind their thinking, the session holds the edits that would invalidate the thinking of a turn still
calling tools, and takes out the thinking an edit invalidates.

The provider's prefix check is simulated (``PrefixCheck``) as Anthropic's page describes it: a
thinking block the model wrote in answer to a request is valid in a later request only if every
message before it is what that request held. The replays feed each request's answer back the way
an agent does (the next entries of a real session, or generated ones).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.core.cache.holds import held
from hdcontext.core.cache.schedule import Candidate
from hdcontext.core.compression.compressor import SessionSummarizer
from hdcontext.core.compression.types import SummarizeRequest
from hdcontext.core.content import (
    Block,
    IContent,
    Metadata,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    entry_from_json,
    entry_json,
)
from hdcontext.core.density.edits import BlockEdit, Edit
from hdcontext.core.density.types import DensityResult
from hdcontext.core.history.thinking import (
    Turn,
    compression_waits,
    first_change,
    keeps,
    latest_turn,
    unbound,
    waits,
    without_thinking,
)
from hdcontext.core.prices import PRICES, binds_thinking, lookup
from hdcontext.core.session.reply import CompactResult
from hdcontext.core.session.session import Session
from hdcontext.core.settings import Settings
from hdcontext.core.validity import problems
from hdcontext.formats.importers.claude_code import from_jsonl

from .builders import ai, call, human, tool_result

BOUND = "claude-opus-5-5"
UNBOUND = "claude-sonnet-4-6"
EVERY_TURN = {"compression.density.schedule": "every-turn"}
BODY = "".join(f"{k:>6}\u2192    value_{k} = compute({k})\n" for k in range(1, 200))


def think(n: int | str) -> ThinkingBlock:
    return ThinkingBlock.model_validate({"thought": f"reasoning {n}", "signature": f"sig-{n}"})


def thinking_of(entry: IContent) -> list[bytes]:
    """An entry's thinking blocks as JSON (their text and signature, byte for byte)."""
    return [
        entry_json(IContent(speaker="ai", blocks=(b,)))
        for b in entry.blocks
        if isinstance(b, ThinkingBlock)
    ]


def read(cid: str, path: str, n: int) -> list[IContent]:
    return [
        ai(think(n), call(cid, "Read", {"file_path": path})),
        tool_result(cid, "Read", BODY),
    ]


def bash(cid: str, n: int) -> list[IContent]:
    return [
        ai(think(n), call(cid, "Bash", {"command": f"pytest -q tests/test_{n}.py"})),
        tool_result(cid, "Bash", "passed\n"),
    ]


def timed(entries: Sequence[IContent], start: int) -> list[IContent]:
    """Entries with their times, as an agent's log gives them (the session stamps none)."""
    return [
        e.model_copy(
            update={
                "metadata": Metadata(timestamp=start + k, id=e.metadata.id if e.metadata else None)
            }
        )
        for k, e in enumerate(entries)
    ]


def loop() -> list[IContent]:
    """A person's request and the model's tool loop: it reads a.py twice (the first read is
    then stale), and its latest message (a Bash call, with thinking) goes on."""
    return timed(
        [human("fix a.py"), *read("r1", "/w/a.py", 1), *read("r2", "/w/a.py", 2), *bash("b3", 3)],
        1_000,
    )


def answered() -> list[IContent]:
    """The turn ends: the model answers without a call, and the person speaks."""
    return timed([ai(think(4), TextBlock(text="done")), human("thanks, now b.py")], 2_000)


def session(
    model: str | None,
    values: dict[str, object] | None = None,
    summarizer: SessionSummarizer | None = None,
) -> Session:
    chosen = dict(values or {})
    s = Session("t", settings=lambda: chosen, workspace_root=lambda: "/w", summarizer=summarizer)
    s.model = model
    return s


def first_difference(before: Sequence[IContent], after: Sequence[IContent]) -> int:
    """The first index where ``after`` differs from ``before`` (equality: replies are parsed
    anew, so ``thinking.first_change``'s identity would see every entry changed)."""
    for i, (old, new) in enumerate(zip(before, after, strict=False)):
        if old != new:
            return i
    return min(len(before), len(after))


def all_thinking(entries: Sequence[IContent]) -> list[bytes]:
    return [t for e in entries for t in thinking_of(e)]


# -- which models bind their thinking ----------------------------------------------------------

PREFIX_CHECKED = (
    "claude-fable-5-2",
    "claude-mythos-5-2",
    "claude-fable-5-1",
    "claude-mythos-5-1",
    "claude-opus-5-5",
    "claude-sonnet-5-5",
    "claude-haiku-5-5",
)


def test_the_models_the_prefix_check_page_lists_bind_their_thinking() -> None:
    for model in PREFIX_CHECKED:
        assert binds_thinking(model), model
        assert lookup(model).row is not None and lookup(model).how == "exact"
    bound_rows = {row.model for row in PRICES if row.bound_thinking}
    assert bound_rows == {lookup(m).row.model for m in PREFIX_CHECKED}  # type: ignore[union-attr]
    for model in ("claude-sonnet-4-6", "claude-opus-5", "claude-fable-5", "claude-haiku-4-5"):
        assert not binds_thinking(model), model
    for model in ("gpt-6.2-sol", "gpt-4.1", "gemini-3-pro"):
        assert not binds_thinking(model), model
    # A snapshot of a bound model is bound; a Claude model the table lacks is taken for bound.
    assert binds_thinking("claude-opus-5-5-20261001")
    assert binds_thinking("anthropic/claude-sonnet-5.5")
    assert binds_thinking("claude-opus-7")


# -- the module on its own ---------------------------------------------------------------------


def blobs(entries: Sequence[IContent]) -> list[bytes]:
    return [entry_json(e) for e in entries]


def test_the_latest_turn_is_the_last_run_of_the_models_entries() -> None:
    entries = loop()
    assert latest_turn(blobs(entries)) == Turn(5, 6, calls=True, thinks=True)
    ended = [*entries, *answered()]
    assert latest_turn(blobs(ended)) == Turn(7, 8, calls=False, thinks=True)
    two = [human("x"), ai(think(1)), ai(call("c", "Bash", {})), tool_result("c", "Bash")]
    assert latest_turn(blobs(two)) == Turn(1, 3, calls=True, thinks=True)
    # An empty answer is not shown to the model: the turn before it still goes on.
    blank = [*two, ai(TextBlock(text=" "))]
    assert latest_turn(blobs(blank)) == Turn(1, 3, calls=True, thinks=True)
    assert latest_turn(blobs([human("x")])) is None
    assert latest_turn(blobs([human("x"), ai(call("c", "Bash", {}))])) == Turn(1, 2, True, False)


def test_an_edit_waits_while_the_latest_turn_calls_tools() -> None:
    turn = Turn(5, 6, calls=True, thinks=True)
    assert waits({5}, turn, bound=False) and waits({6, 5}, turn, bound=False)
    assert not waits({1, 2}, turn, bound=False)  # before it: only a bound model's waits
    assert waits({1, 2}, turn, bound=True)
    assert not waits({6}, turn, bound=True)  # after it (its results): nothing bound there
    assert not waits({1}, Turn(5, 6, calls=True, thinks=False), bound=True)
    assert not waits({5}, Turn(5, 6, calls=False, thinks=True), bound=True)
    assert not waits({1}, None, bound=True)
    assert compression_waits(turn, True) and not compression_waits(turn, False)
    assert not compression_waits(Turn(5, 6, calls=False, thinks=True), True)


@settings(max_examples=60, deadline=None)
@given(
    bound=st.booleans(),
    removed=st.sets(st.integers(0, 6), max_size=2),
    edits=st.lists(st.sets(st.integers(-2, 12), min_size=1, max_size=4), max_size=8),
)
def test_the_session_holds_the_edits_waits_names(
    bound: bool, removed: set[int], edits: list[set[int]]
) -> None:
    """The session reads ``waits`` through the view's keys, without the positions of every
    edit: the same edits wait, whatever keys they name (some no longer in the view)."""
    s = session(BOUND if bound else UNBOUND)
    s.append(loop())
    for key in sorted(removed, reverse=True):  # some keys leave the view
        if key < len(s.history.raw) - 2:
            s.history.apply_density_result(DensityResult((key,), {}))
    listed = [
        Candidate(Edit("masking", tuple(BlockEdit(k, 0) for k in keys)), 0, 0) for keys in edits
    ]
    turn = latest_turn(s.history.raw_json)
    expected = {
        id(c)
        for c in listed
        if waits(
            {p for k in c.edit.keys if (p := s.history.position(k)) is not None},
            turn,
            binds_thinking(s.model),
        )
    }
    assert held(listed, s.history, binds_thinking(s.model)) == expected


def test_unbound_takes_the_thinking_from_a_place_on_and_nothing_else() -> None:
    entries = [*loop(), *answered()]
    stored = blobs(entries)
    out = unbound(stored, 3)
    assert sorted(out) == [3, 5, 7]
    for i, entry in out.items():
        assert entry == without_thinking(entries[i]) and not thinking_of(entry)
        assert entry.blocks == tuple(
            b for b in entries[i].blocks if not isinstance(b, ThinkingBlock)
        )
    # A removed entry is left alone; a replaced one loses it from its replacement.
    replaced = entries[5].with_blocks([think(9), TextBlock(text="other")])
    out = unbound(stored, 0, removals={1}, replacements={5: replaced})
    assert 1 not in out and out[5].blocks == (TextBlock(text="other"),)
    # Thinking in a person's entry is not the model's: not touched.
    odd = [IContent(speaker="human", blocks=(think(1), TextBlock(text="x")))]
    assert unbound(blobs(odd), 0) == {}


def test_first_change_and_keeps() -> None:
    entries = loop()
    assert first_change(entries, list(entries)) is None
    assert first_change(entries, entries[2:]) == 0
    assert first_change(entries, [*entries[:3], human("summary"), *entries[5:]]) == 3
    assert first_change(entries, entries[:4]) == 4
    turn = latest_turn(blobs(entries))
    assert keeps(turn, entries, [entries[0], *entries[3:]])
    assert not keeps(turn, entries, [*entries[:5], ai(think(3)), entries[6]])
    assert keeps(Turn(5, 6, calls=False, thinks=True), entries, entries[:1])


# -- the session ---------------------------------------------------------------------------------


def request_valid(result: CompactResult) -> None:
    assert problems(list(result.history)) == []


async def test_a_bound_models_edits_wait_for_the_turn_then_take_the_thinking_after_them() -> None:
    s = session(BOUND, EVERY_TURN)
    s.append(loop())
    first = await s.compact()
    request_valid(first)
    assert list(first.history) == loop()  # the stale read waits: the turn goes on
    assert first.cache.edits_pending == 1 and first.cache.edits_applied == 0
    s.append(answered())
    second = await s.compact()
    request_valid(second)
    assert second.cache.edits_applied == 1
    sent = list(second.history)
    assert "r1" not in {b.id for e in sent for b in e.blocks if isinstance(b, ToolCallBlock)}
    # Everything from the first edited entry on lost its thinking, the rest as it was.
    assert all_thinking(sent) == []
    assert sent[0] == loop()[0]
    assert [b for e in sent for b in e.blocks if not isinstance(b, ThinkingBlock)] == [
        b
        for e in [loop()[0], *loop()[3:], *answered()]
        for b in e.blocks
        if not isinstance(b, ThinkingBlock)
    ]
    # The model's next answer is written on that history: nothing takes it out again.
    s.append(
        [ai(think(5), call("r5", "Read", {"file_path": "/w/b.py"})), tool_result("r5", "Read")]
    )
    third = await s.compact()
    assert all_thinking(third.history) == thinking_of(ai(think(5)))


async def test_an_unbound_models_edits_apply_and_every_thinking_block_stays() -> None:
    s = session(UNBOUND, EVERY_TURN)
    s.append(loop())
    result = await s.compact()
    request_valid(result)
    assert result.cache.edits_applied == 1
    assert all_thinking(result.history) == all_thinking(loop())


@pytest.mark.parametrize("model", [BOUND, UNBOUND, None])
async def test_the_latest_turn_is_never_touched_while_it_calls_tools(model: str | None) -> None:
    # The stale read is in the latest turn itself (a read, then a whole write of the file).
    turn = ai(
        think(1),
        call("r1", "Read", {"file_path": "/w/a.py"}),
        call("w1", "Write", {"file_path": "/w/a.py", "content": BODY}),
    )
    results = tool_result("r1", "Read", BODY).with_blocks(
        [*tool_result("r1", "Read", BODY).blocks, *tool_result("w1", "Write", "ok").blocks]
    )
    s = session(model, EVERY_TURN)
    s.append(timed([human("go"), turn, results], 1_000))
    first = await s.compact()
    assert list(first.history)[1].blocks == turn.blocks
    assert first.cache.edits_pending >= 1
    s.append(answered())
    second = await s.compact()
    request_valid(second)
    assert second.cache.edits_applied >= 1


async def test_the_cache_aware_schedule_holds_them_the_same_way() -> None:
    s = session(BOUND)
    s.append(loop())
    first = await s.compact(at=1_000_000)  # a cold cache: everything that may apply, applies
    assert list(first.history) == loop()
    assert first.cache.edits_pending == 1
    s.append(answered())
    second = await s.compact(at=1_001_000)
    request_valid(second)
    if second.cache.edits_applied:
        assert all_thinking(second.history) == []
    else:  # it waits for what pays, and nothing changed
        assert list(second.history) == [*loop(), *answered()]


async def test_a_changed_model_changes_the_rule_from_the_next_call() -> None:
    s = session(UNBOUND, EVERY_TURN)
    s.append(loop())
    s.model = BOUND
    held = await s.compact()
    assert held.cache.edits_pending == 1
    s.model = UNBOUND
    applied = await s.compact()
    assert applied.cache.edits_applied == 1
    assert all_thinking(applied.history) == all_thinking(loop())


# -- compression -------------------------------------------------------------------------------


def long_session(turns: int) -> list[IContent]:
    out: list[IContent] = [human("start")]
    for n in range(turns):
        out += [
            ai(think(n), call(f"b{n}", "Bash", {"command": f"make {n}"})),
            tool_result(f"b{n}", "Bash", BODY),
        ]
        out += [ai(think(f"{n}-done"), TextBlock(text=f"step {n} done")), human(f"next {n}")]
    return timed(out, 1_000)


@pytest.mark.parametrize("strategy", ["top-down-truncation", "high-density"])
async def test_compression_of_a_bound_model_takes_the_kept_turns_thinking(strategy: str) -> None:
    history = long_session(12)
    s = session(BOUND, {"compression.strategy": strategy, "contextLimit": 8_000})
    s.append(history)
    result = await s.compact()
    request_valid(result)
    assert result.compression is not None
    sent = list(result.history)
    assert result.compression.tokens_after < result.compression.tokens_before
    changed = first_difference(history, sent)
    # Before what compression changed, the thinking stays; from there on, none is left.
    assert all_thinking(sent[:changed]) == all_thinking(history[:changed])
    assert all_thinking(sent[changed:]) == []
    if strategy == "high-density":
        assert changed > 0


async def test_compression_keeps_an_unbound_models_thinking() -> None:
    history = long_session(12)
    s = session(UNBOUND, {"compression.strategy": "top-down-truncation", "contextLimit": 8_000})
    s.append(history)
    result = await s.compact()
    assert result.compression is not None
    sent = list(result.history)
    assert all_thinking(sent) == all_thinking(history[len(history) - len(sent) :])


async def test_a_summary_takes_the_thinking_of_the_turns_kept_after_it() -> None:
    async def summarizer(request: SummarizeRequest, values: Settings) -> str:
        return "<state_snapshot>what happened</state_snapshot>"

    history = long_session(12)
    s = session(
        BOUND, {"compression.strategy": "middle-out", "contextLimit": 8_000}, summarizer=summarizer
    )
    s.append(history)
    result = await s.compact()
    request_valid(result)
    sent = list(result.history)
    changed = first_difference(history, sent)
    assert changed > 0  # middle-out keeps the opening
    assert sent[:changed] == history[:changed]
    assert all_thinking(sent[changed:]) == []


async def test_compression_waits_while_a_bound_turn_calls_tools() -> None:
    history = [*long_session(12), *timed(bash("b-last", 99), 5_000)]
    s = session(BOUND, {"compression.strategy": "top-down-truncation", "contextLimit": 8_000})
    s.append(history)
    result = await s.compact()
    assert list(result.history) == history
    assert result.over_limit
    s.append(answered())
    after = await s.compact()
    assert len(after.history) < len(history)
    assert all_thinking(after.history) == []


async def test_an_unbound_turn_that_calls_tools_is_compressed_around() -> None:
    history = [*long_session(12), *timed(bash("b-last", 99), 5_000)]
    s = session(UNBOUND, {"compression.strategy": "top-down-truncation", "contextLimit": 8_000})
    s.append(history)
    result = await s.compact()
    sent = list(result.history)
    assert len(sent) < len(history)
    assert sent[-2:] == history[-2:]


# -- the provider's check, simulated --------------------------------------------------------------


class PrefixCheck:
    """Anthropic's prefix check, as its page describes it, on the requests of one conversation:
    a thinking block written in answer to one request is valid in a later one only if every
    entry before it there is what that request held (the entries as sent, JSON)."""

    def __init__(self) -> None:
        self.previous: tuple[bytes, ...] | None = None
        self.written_after: dict[bytes, tuple[bytes, ...]] = {}
        """An answer (its entry as first sent back) -> the request it answered."""

    def request(self, request: Sequence[bytes]) -> list[str]:
        failures: list[str] = []
        for p, blob in enumerate(request):
            if b'"thinking"' not in blob or not all_thinking([_parsed(blob)]):
                continue
            answered = self.written_after.setdefault(
                blob, tuple(request[:p]) if self.previous is None else self.previous
            )
            if tuple(request[:p]) != answered:
                failures.append(f"entry {p}: thinking after a changed prefix")
        self.previous = tuple(request)
        return failures


def _parsed(blob: bytes) -> IContent:
    return entry_from_json(blob)


def latest_agent_turn(entries: Sequence[IContent]) -> list[IContent]:
    turn = latest_turn(blobs(entries))
    if turn is None or not turn.calls:
        return []
    return list(entries[turn.start : turn.stop])


def by_id(entries: Sequence[IContent]) -> dict[str, IContent]:
    return {e.metadata.id: e for e in entries if e.speaker == "ai" and e.metadata and e.metadata.id}


async def replay(
    entries: Sequence[IContent], model: str, values: dict[str, object]
) -> tuple[int, int, int]:
    """A conversation call by call (a call before each answer of the model): checks every
    request, and says how many carried a continued turn, held edits, and lost thinking."""
    s = Session("replay", settings=lambda: values, workspace_root=lambda: "/w")
    s.model = model
    check = PrefixCheck()
    agent = by_id(entries)
    continued = held = lost = 0
    appended = 0
    calls = [i for i, e in enumerate(entries) if e.speaker == "ai" and i > 0]
    for k, i in enumerate(calls):
        s.append(entries[appended:i])
        appended = i
        result = await s.compact(at=1_000_000 + 10_000 * k)
        sent = list(result.history)
        request = list(result.history.blobs)
        assert problems(sent) == [], f"call {k}"
        # (i) the latest turn, while it calls tools, comes back as the agent sent it.
        turn = latest_agent_turn(entries[:i])
        if turn:
            continued += 1
            held += result.cache.edits_pending > 0
            for entry in turn:
                assert entry_json(entry) in request, f"call {k}: the latest turn was changed"
        if binds_thinking(model):
            # (ii) no thinking after anything that differs from what it was written after.
            assert check.request(request) == [], f"call {k}"
        else:
            # (iii) an unbound model's thinking is never taken out.
            for entry in sent:
                mid = entry.metadata.id if entry.metadata else None
                if entry.speaker == "ai" and mid in agent:
                    assert thinking_of(entry) == thinking_of(agent[mid]), f"call {k}"
        kept = all_thinking(sent)
        lost += len(kept) < len(all_thinking(entries[:i]))
    return continued, held, lost


TRANSCRIPTS = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "claude-code"
)
SIGNED = [
    TRANSCRIPTS / f"{n}.jsonl"
    for n in ("jssoundrecorder-7acd37a8", "coderabbit-review-helper-cb2e607c")
]


@pytest.mark.skipif(not all(p.exists() for p in SIGNED), reason=f"no transcripts at {TRANSCRIPTS}")
@pytest.mark.parametrize("values", [{}, EVERY_TURN], ids=["default", "every-turn"])
@pytest.mark.parametrize("path", SIGNED, ids=[p.stem for p in SIGNED])
async def test_a_real_session_with_signed_thinking(path: Path, values: dict[str, object]) -> None:
    entries = from_jsonl(path.read_text(encoding="utf-8"))
    signed = [b for e in entries for b in e.blocks if isinstance(b, ThinkingBlock)]
    assert signed and all((b.model_extra or {}).get("signature") for b in signed)
    ids = [e.metadata.id for e in entries if e.speaker == "ai" and e.metadata]
    assert len(set(ids)) == len(ids)
    continued, held, lost = await replay(entries, BOUND, dict(values))
    assert continued > 10 and held > 0  # not vacuous: turns went on, edits waited for them
    if values:
        assert lost > 0  # and some edit took the thinking after it
    _, _, lost_unbound = await replay(entries, UNBOUND, dict(values))
    assert lost_unbound == 0


# -- generated sessions --------------------------------------------------------------------------

FILES = ("/w/a.py", "/w/b.py")


@st.composite
def conversations(draw: st.DrawFn) -> list[IContent]:
    """A person's requests and the model's tool loops, every model message with signed thinking
    (sometimes two, sometimes none), reads, writes and shell runs of a few files."""
    out: list[IContent] = [human("start")]
    n = 0
    for _ in range(draw(st.integers(min_value=1, max_value=4))):
        for _ in range(draw(st.integers(min_value=0, max_value=6))):
            n += 1
            cid = f"c{n}"
            kind = draw(st.sampled_from(["read", "read", "write", "bash"]))
            path = draw(st.sampled_from(FILES))
            thoughts: list[Block] = [
                think(f"{n}.{j}") for j in range(draw(st.sampled_from([0, 1, 1, 2])))
            ]
            if kind == "read":
                made = call(cid, "Read", {"file_path": path})
                result = BODY[: draw(st.integers(min_value=50, max_value=len(BODY)))]
            elif kind == "write":
                made = call(cid, "Write", {"file_path": path, "content": BODY})
                result = "File written"
            else:
                made = call(cid, "Bash", {"command": f"cat {path}"})
                result = BODY
            out.append(ai(*thoughts, made).model_copy(update={"metadata": Metadata(id=f"a{n}")}))
            out.append(tool_result(cid, made.name, result))
        n += 1
        answer = ai(think(f"{n}.0"), TextBlock(text=f"answer {n}"))
        out.append(answer.model_copy(update={"metadata": Metadata(id=f"a{n}")}))
        out.append(human(f"request {n}"))
    # Every entry has its time, as an agent's log gives it (the session stamps none).
    return [
        e.model_copy(
            update={
                "metadata": Metadata(timestamp=1_000 + k, id=e.metadata.id if e.metadata else None)
            }
        )
        for k, e in enumerate(out)
    ]


@settings(max_examples=60, deadline=None)
@given(
    entries=conversations(),
    model=st.sampled_from([BOUND, "claude-fable-5-2", UNBOUND]),
    values=st.sampled_from(
        [
            {},
            EVERY_TURN,
            {**EVERY_TURN, "compression.density.recencyPruning": True},
            {"compression.strategy": "top-down-truncation", "contextLimit": 6_000},
            {**EVERY_TURN, "contextLimit": 6_000},
        ]
    ),
)
def test_no_request_sends_thinking_its_provider_would_refuse(
    entries: list[IContent], model: str, values: dict[str, object]
) -> None:
    asyncio.run(replay(entries, model, values))
