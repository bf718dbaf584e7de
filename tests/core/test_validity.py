"""Provider validity (core/validity.py): each rule on small histories, the repair of what an
agent's log writes out of place, and properties over random histories, checked on the
exporters' own output too."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.content import (
    Block,
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from hdcontext.core.validity import (
    NO_RESULT,
    UNREPAIRABLE,
    Problem,
    payload_problems,
    problems,
    repair,
    summary,
)
from hdcontext.formats.conversation import Conversation
from hdcontext.formats.exporters import export
from tests.examples import examples

from .builders import ai, ai_call, ai_text, call, human, response, tool_result, tools

PROVIDERS = ("openai", "anthropic", "gemini")


def kinds(history: list[IContent]) -> list[tuple[str, int, str]]:
    return [(p.kind, p.index, p.key) for p in problems(history)]


def shape(history: tuple[IContent, ...] | list[IContent]) -> list[tuple[str, list[str]]]:
    """Each entry as (speaker, [call ids, response ids and texts]) to compare layouts."""
    out = []
    for entry in history:
        items = []
        for b in entry.blocks:
            if isinstance(b, ToolCallBlock):
                items.append(f"call {b.id}")
            elif isinstance(b, ToolResponseBlock):
                items.append(f"result {b.call_id}")
            elif isinstance(b, TextBlock):
                items.append(b.text)
            else:
                items.append(b.type)
        out.append((entry.speaker, items))
    return out


# -- the rules -------------------------------------------------------------------------------


def test_a_history_of_answered_calls_is_valid() -> None:
    history = [
        human("go"),
        ai(call("a", "Read"), call("b", "Read")),
        tools(response("b", "Read"), response("a", "Read")),  # any order within the answer
        ai_call("c", "Edit"),
        tool_result("c", "Edit"),
        human("thanks"),
        ai_text("done"),
    ]
    assert problems(history) == []
    assert repair(history).entries == tuple(history)
    assert repair(history).notes == ()


def test_parallel_results_written_after_the_next_model_turn_break_the_rules() -> None:
    """The issue's case: assistant[A,B] → result A → assistant[C] → results B, C."""
    history = [
        human("go"),
        ai(call("A", "Read"), call("B", "Read")),
        tool_result("A", "Read"),
        ai_call("C", "Read"),
        tools(response("B", "Read"), response("C", "Read")),
    ]
    assert kinds(history) == [("unanswered_call", 1, "B"), ("misplaced_response", 4, "B")]
    fixed = repair(history)
    assert shape(fixed.entries) == [
        ("human", ["go"]),
        ("ai", ["call A", "call B"]),
        ("tool", ["result A", "result B"]),
        ("ai", ["call C"]),
        ("tool", ["result C"]),
    ]
    assert problems(fixed.entries) == []
    assert fixed.notes == ("moved 1 tool result(s) next to the call they answer",)


def test_a_user_message_between_a_call_and_its_result_breaks_the_rules() -> None:
    history = [ai_call("a", "Read"), human("wait"), tool_result("a", "Read")]
    assert kinds(history) == [("unanswered_call", 0, "a"), ("misplaced_response", 2, "a")]
    assert shape(repair(history).entries) == [
        ("ai", ["call a"]),
        ("tool", ["result a"]),
        ("human", ["wait"]),
    ]


def test_text_beside_results_in_one_entry_is_fine_the_exporters_put_results_first() -> None:
    history = [
        ai_call("a", "Read"),
        IContent(speaker="tool", blocks=(TextBlock(text="note"), response("a", "Read"))),
    ]
    assert problems(history) == []
    for fmt in PROVIDERS:
        assert export(Conversation(tuple(history)), fmt).problems == (), fmt


def test_results_without_a_call_before_them_cannot_be_repaired() -> None:
    history = [tool_result("x", "Read"), ai_call("y", "Read"), tool_result("y", "Read")]
    assert kinds(history) == [("orphan_response", 0, "x")]
    assert kinds(list(repair(history).entries)) == [("orphan_response", 0, "x")]


def test_answering_twice_and_reusing_a_call_id_are_reported() -> None:
    twice = [ai_call("a", "Read"), tools(response("a", "Read"), response("a", "Read"))]
    assert kinds(twice) == [("duplicate_response", 1, "a")]
    reused = [ai_call("a", "Read"), tool_result("a", "Read")] * 2
    assert kinds(reused) == [("duplicate_call", 2, "a"), ("duplicate_response", 3, "a")]


def test_calls_outside_a_model_turn_and_results_inside_one_are_reported() -> None:
    history = [IContent(speaker="human", blocks=(call("a", "Read"),)), ai_text("ok")]
    assert kinds(history) == [("misplaced_call", 0, "a")]
    inside = [ai(call("a", "Read"), response("a", "Read"))]
    assert kinds(inside) == [("misplaced_response", 0, "a"), ("unanswered_call", 0, "a")]
    assert shape(repair(inside).entries) == [("ai", ["call a"]), ("tool", ["result a"])]


def test_blank_text_and_empty_entries_go() -> None:
    history = [
        human("go", " \n"),
        ai(TextBlock(text=""), call("a", "Read")),
        tool_result("a", "Read"),
        ai_text("\t"),
        IContent(speaker="human", blocks=()),
    ]
    assert kinds(history) == [
        ("blank_text", 0, ""),
        ("blank_text", 1, ""),
        ("blank_text", 3, ""),
        ("empty_message", 4, ""),
    ]
    fixed = repair(history)
    assert shape(fixed.entries) == [
        ("human", ["go"]),
        ("ai", ["call a"]),
        ("tool", ["result a"]),
    ]
    assert fixed.notes == (
        "dropped 3 empty or whitespace-only text block(s)",
        "dropped 2 entries left empty",
    )


def test_a_call_never_answered_gets_an_error_result_that_says_so() -> None:
    history = [human("go"), ai(TextBlock(text="submitting"), call("s", "submit"))]
    assert kinds(history) == [("unanswered_call", 1, "s")]
    fixed = repair(history)
    assert fixed.entries[-1] == tools(
        ToolResponseBlock(call_id="s", tool_name="submit", result=None, error=NO_RESULT)
    )
    assert problems(fixed.entries) == []


def test_a_problem_reads_as_one_line() -> None:
    found = [Problem("orphan_response", 3, "toolu_1"), Problem("blank_text", 5)]
    assert summary(found) == "entry 3: tool result 'toolu_1' has no call before it (and 1 more)"
    assert summary([]) == "provider-valid"
    assert Problem("unanswered_call", 2, "c").describe("message") == (
        "message 2: tool call 'c' is not answered right after it"
    )


# -- the payloads the exporters write --------------------------------------------------------


def test_openai_tool_messages_must_follow_their_assistant_message() -> None:
    good = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "a"}, {"id": "b"}]},
        {"role": "tool", "tool_call_id": "a", "content": ""},
        {"role": "tool", "tool_call_id": "b", "content": "x"},
    ]
    assert payload_problems("openai", good) == []
    late = [good[2], good[3], {"role": "user", "content": "hm"}, good[4]]
    assert [p.kind for p in payload_problems("openai", late)] == [
        "unanswered_call",
        "misplaced_response",
    ]
    assert [p.kind for p in payload_problems("openai", [{"role": "user", "content": " "}])] == [
        "blank_text"
    ]
    empty = [{"role": "assistant", "content": None}]
    assert [p.kind for p in payload_problems("openai", empty)] == ["empty_message"]


def test_anthropic_results_must_open_the_next_user_message() -> None:
    use = {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "n"}]}
    result = {"type": "tool_result", "tool_use_id": "a", "content": "x"}
    first = {"role": "user", "content": [result, {"type": "text", "text": "and"}]}
    assert payload_problems("anthropic", {"messages": [use, first]}) == []
    second = {"role": "user", "content": [{"type": "text", "text": "and"}, result]}
    assert [p.kind for p in payload_problems("anthropic", {"messages": [use, second]})] == [
        "unanswered_call",
        "misplaced_response",
    ]
    blank = {"role": "user", "content": [{"type": "text", "text": "  "}]}
    assert [p.kind for p in payload_problems("anthropic", [blank])] == ["blank_text"]


def test_gemini_pairs_calls_without_ids_by_name_and_order() -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "go"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "f"}}] * 2},
            {"role": "user", "parts": [{"functionResponse": {"name": "f"}}] * 2},
            {"role": "model", "parts": [{"functionCall": {"name": "f"}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "f"}}]},
        ]
    }
    assert payload_problems("gemini", body) == []
    body["contents"][2]["parts"] = body["contents"][2]["parts"][:1]
    assert [p.kind for p in payload_problems("gemini", body)] == ["unanswered_call"]


def test_exporters_leave_blank_texts_out_and_count_them() -> None:
    history = (
        human("go", " "),
        ai(TextBlock(text="\n"), call("a", "Read")),
        tool_result("a", "Read"),
        ai_text(""),
    )
    for fmt in PROVIDERS:
        exported = export(Conversation(history), fmt)
        assert exported.problems == (), fmt
        assert exported.dropped["blank text"] == 3, fmt
        assert exported.dropped["empty ai entry"] == 1, fmt


# -- properties ------------------------------------------------------------------------------

WORDS = st.sampled_from(["read it", "x", "done.", "ok"])
BLANKS = st.sampled_from(["", " ", "\n", "\t \n"])
NAMES = st.sampled_from(["Read", "Edit", "bash"])


@st.composite
def valid_histories(draw: st.DrawFn) -> list[IContent]:
    """Model turns with parallel calls, each answered right after it (in any order), with
    user messages between some turns."""
    out: list[IContent] = [human(draw(WORDS))]
    for k in range(draw(st.integers(1, 6))):
        n = draw(st.integers(0, 3))
        texts: list[Block] = [TextBlock(text=t) for t in draw(st.lists(WORDS, max_size=1))]
        if not n and not texts:
            texts = [TextBlock(text="answer")]
        calls = [call(f"c{k}_{j}", draw(NAMES)) for j in range(n)]
        out.append(ai(*texts, *calls))
        if calls:
            answers = [response(c.id, c.name, draw(WORDS)) for c in calls]
            out.append(tools(*draw(st.permutations(answers))))
        if draw(st.booleans()):
            out.append(human(draw(WORDS)))
    return out


@st.composite
def scrambled(draw: st.DrawFn) -> tuple[list[IContent], list[IContent]]:
    """(a valid history, the same as an agent's log might write it): some results written
    after later entries, or lost; blank texts added here and there."""
    history = draw(valid_histories())
    out = list(history)
    for _ in range(draw(st.integers(1, 4))):
        answers = [i for i, e in enumerate(out) if e.speaker == "tool" and len(e.blocks) > 0]
        if not answers:
            break
        i = draw(st.sampled_from(answers))
        entry = out[i]
        k = draw(st.integers(0, len(entry.blocks) - 1))
        moved = entry.blocks[k]
        assert isinstance(moved, ToolResponseBlock)
        out[i] = entry.with_blocks(entry.blocks[:k] + entry.blocks[k + 1 :])
        if draw(st.booleans()):  # written later, or never
            j = draw(st.integers(i, len(out)))
            out.insert(j, tools(moved))
    for _ in range(draw(st.integers(0, 3))):
        i = draw(st.integers(0, len(out) - 1))
        out[i] = out[i].with_blocks((*out[i].blocks, TextBlock(text=draw(BLANKS))))
    return history, out


def _content(history: tuple[IContent, ...] | list[IContent]) -> Counter[str]:
    """Every block but blank texts and the error results repair adds, as JSON."""
    return Counter(
        b.model_dump_json()
        for e in history
        for b in e.blocks
        if not (isinstance(b, TextBlock) and not b.text.strip())
        and not (isinstance(b, ToolResponseBlock) and b.error == NO_RESULT)
    )


@settings(max_examples=examples(60), deadline=None)
@given(history=valid_histories())
def test_valid_histories_pass_unchanged_and_export_valid(history: list[IContent]) -> None:
    assert problems(history) == []
    assert pairing_problems(history) == set()  # the invariant implies the weaker check
    assert repair(history).entries == tuple(history)
    for fmt in PROVIDERS:
        exported = export(Conversation(tuple(history), system="s"), fmt)
        assert exported.problems == (), fmt


@settings(max_examples=examples(80), deadline=None)
@given(pair=scrambled())
def test_repair_puts_every_result_back_and_loses_nothing(
    pair: tuple[list[IContent], list[IContent]],
) -> None:
    _, written = pair
    fixed = repair(written)
    assert problems(fixed.entries) == []
    assert _content(fixed.entries) == _content(written)  # moved, never dropped or changed
    calls = [b.id for e in fixed.entries for b in e.blocks if isinstance(b, ToolCallBlock)]
    assert calls == [b.id for e in written for b in e.blocks if isinstance(b, ToolCallBlock)]
    assert repair(fixed.entries).entries == fixed.entries  # idempotent
    for fmt in PROVIDERS:
        assert export(Conversation(fixed.entries), fmt).problems == (), fmt


def _block(draw: st.DrawFn) -> Block:
    ids = st.sampled_from(["a", "b", "c"])
    return draw(
        st.one_of(
            st.builds(lambda t: TextBlock(text=t), st.one_of(WORDS, BLANKS)),
            st.builds(lambda i: call(i, "Read"), ids),
            st.builds(lambda i: response(i, "Read"), ids),
            st.just(ThinkingBlock(thought="hm")),
            st.just(MediaBlock(mime_type="image/png", data="AA==", encoding="base64")),
        )
    )


@st.composite
def any_histories(draw: st.DrawFn) -> list[IContent]:
    """Anything IContent allows: blocks in any entry, ids reused, results before calls."""
    out = []
    for _ in range(draw(st.integers(0, 7))):
        speaker = draw(st.sampled_from(["human", "ai", "tool"]))
        blocks = [_block(draw) for _ in range(draw(st.integers(0, 3)))]
        out.append(IContent(speaker=speaker, blocks=tuple(blocks)))
    return out


@settings(max_examples=examples(100), deadline=None)
@given(history=any_histories())
def test_repair_leaves_only_what_cannot_be_repaired(history: list[IContent]) -> None:
    fixed = repair(history)
    left = problems(fixed.entries)
    assert {p.kind for p in left} <= UNREPAIRABLE
    assert repair(fixed.entries).entries == fixed.entries
    if not left:
        for fmt in PROVIDERS:
            assert export(Conversation(fixed.entries), fmt).problems == (), fmt


@settings(max_examples=examples(100), deadline=None)
@given(history=any_histories())
def test_a_valid_history_exports_valid_in_every_format(history: list[IContent]) -> None:
    """What problems() accepts, every exporter writes acceptably: one invariant for both."""
    if problems(history):
        return
    for fmt in PROVIDERS:
        assert export(Conversation(tuple(history)), fmt).problems == (), fmt


@pytest.mark.parametrize("fmt", ["icontent", "yaml"])
def test_payload_rules_are_for_provider_formats_only(fmt: str) -> None:
    with pytest.raises(ValueError):
        payload_problems(fmt, [])
