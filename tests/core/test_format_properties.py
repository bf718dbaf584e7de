"""Round trips over generated histories: every block and pair a format can carry survives."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from hdcontext.core.content import (
    Block,
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from hdcontext.core.validity import problems
from hdcontext.formats.conversation import Conversation
from hdcontext.formats.exporters import export
from hdcontext.formats.importers import load
from tests.examples import examples

# Texts a model or a person wrote: never blank (importers drop blank texts, exporters never
# write them: test_validity.py covers those).
TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
    min_size=1,
    max_size=30,
).filter(str.strip)
NAMES = st.sampled_from(["read_file", "bash", "Edit", "grep"])
JSON_OBJECTS: st.SearchStrategy[dict[str, JsonValue]] = st.dictionaries(
    st.sampled_from(["path", "command", "n", "flags"]),
    st.one_of(TEXT, st.integers(-5, 5), st.booleans(), st.lists(TEXT, max_size=2)),
    max_size=3,
)
IMAGE = MediaBlock(mime_type="image/png", data="iVBORw0KGgo=", encoding="base64")


@st.composite
def turns(draw: st.DrawFn, thinking: bool) -> list[IContent]:
    """A human message, then model turns with parallel calls answered in one tool entry."""
    n = draw(st.integers(1, 4))
    out: list[IContent] = []
    human: list[Block] = [TextBlock(text=t) for t in draw(st.lists(TEXT, min_size=1, max_size=2))]
    if draw(st.booleans()):
        human.append(IMAGE)
    out.append(IContent(speaker="human", blocks=tuple(human)))
    for k in range(n):
        ai: list[Block] = []
        if thinking and draw(st.booleans()):
            ai.append(ThinkingBlock(thought=draw(TEXT)))
        ai += [TextBlock(text=t) for t in draw(st.lists(TEXT, max_size=1))]
        calls = [
            ToolCallBlock(id=f"c{k}_{j}", name=draw(NAMES), parameters=draw(JSON_OBJECTS))
            for j in range(draw(st.integers(0 if ai else 1, 3)))
        ]
        out.append(IContent(speaker="ai", blocks=(*ai, *calls)))
        if calls:
            responses = [
                ToolResponseBlock(call_id=c.id, tool_name=c.name, result=draw(TEXT)) for c in calls
            ]
            out.append(IContent(speaker="tool", blocks=tuple(responses)))
    return out


def round_trip(conversation: Conversation, fmt: str) -> Conversation:
    exported = export(conversation, fmt, thinking="reasoning_content")
    assert exported.dropped == {}
    assert exported.problems == ()
    back = load(json.dumps(exported.payload), fmt)[0]
    assert back.warnings == ()  # nothing to repair
    return back


@settings(max_examples=examples(60), deadline=None)
@given(history=turns(thinking=False), system=st.one_of(st.none(), TEXT))
def test_every_format_round_trips_histories_without_thinking(
    history: list[IContent], system: str | None
) -> None:
    conversation = Conversation(tuple(history), system=system)
    for fmt in ("icontent", "openai", "anthropic", "gemini"):
        back = round_trip(conversation, fmt)
        assert back == conversation, fmt
        assert problems(back.entries) == []


@settings(max_examples=examples(40), deadline=None)
@given(history=turns(thinking=True))
def test_gemini_and_openai_reasoning_content_round_trip_thinking(
    history: list[IContent],
) -> None:
    conversation = Conversation(tuple(history))
    for fmt in ("gemini", "openai"):
        assert round_trip(conversation, fmt) == conversation, fmt
