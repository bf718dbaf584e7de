"""The conversation the proxy sends, written from kept pieces: request after request, whatever
the daemon changed (entries appended, removed, replaced), the bytes and the provider-validity
problems are those of the conversation made whole and checked whole; and messages of one role
left in a row are merged as the provider reads them."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hdcontext.core.content import (
    Block,
    IContent,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
    entry_json,
)
from hdcontext.core.validity import payload_problems
from hdcontext.edges.proxy.anthropic import AnthropicApi
from hdcontext.edges.proxy.api import Api
from hdcontext.edges.proxy.assembly import Pieces, assemble, conversation
from hdcontext.edges.proxy.openai import OpenAiApi
from hdcontext.formats.conversation import role_metadata

ANTHROPIC = AnthropicApi()
OPENAI = OpenAiApi()
IDS = ("a", "b", "c", "d")


def thinking(text: str) -> ThinkingBlock:
    return ThinkingBlock.model_validate({"type": "thinking", "thought": text, "signature": "s"})


@st.composite
def blocks(draw: st.DrawFn, speaker: str) -> list[Block]:
    out: list[Block] = []
    for _ in range(draw(st.integers(0 if speaker == "ai" else 1, 3))):
        kind = draw(st.sampled_from(["text", "blank", "think", "call", "result"]))
        if kind == "text":
            out.append(TextBlock(text=draw(st.sampled_from(["ok", "more", "done"]))))
        elif kind == "blank":
            out.append(TextBlock(text=" "))
        elif kind == "think" and speaker == "ai":
            out.append(thinking(draw(st.sampled_from(["hm", "so"]))))
        elif kind == "call" and speaker == "ai":
            out.append(ToolCallBlock(id=draw(st.sampled_from(IDS)), name="Read", parameters={}))
        elif kind in ("call", "result") and speaker != "ai":
            call_id = draw(st.sampled_from(IDS))
            out.append(ToolResponseBlock(call_id=call_id, tool_name="Read", result="x"))
    return out


@st.composite
def entries(draw: st.DrawFn) -> IContent:
    speaker = draw(st.sampled_from(["human", "ai", "ai", "tool"]))
    made = IContent(speaker=speaker, blocks=tuple(draw(blocks(speaker))))
    if speaker == "human" and draw(st.integers(0, 9)) == 0:
        made = made.model_copy(update={"metadata": role_metadata("system")})
    return made


@st.composite
def turns(draw: st.DrawFn, k: int) -> list[IContent]:
    """A valid turn, mostly: the model's message (text, thinking, calls numbered ``k``),
    its calls answered right after it, maybe a user message; now and then any entry."""
    if draw(st.integers(0, 5)) == 0:
        return [draw(entries())]
    n = draw(st.integers(0, 2))
    calls = [ToolCallBlock(id=f"t{k}_{j}", name="Read", parameters={}) for j in range(n)]
    first: list[Block] = [thinking("hm")] if draw(st.booleans()) else []
    texts: list[Block] = [TextBlock(text="ok")] if draw(st.booleans()) or not calls else []
    out = [IContent(speaker="ai", blocks=(*first, *texts, *calls))]
    if calls:
        results = [ToolResponseBlock(call_id=c.id, tool_name="Read", result="x") for c in calls]
        out.append(IContent(speaker="tool", blocks=tuple(results)))
    if draw(st.booleans()):
        out.append(IContent(speaker="human", blocks=(TextBlock(text="go on"),)))
    return out


@st.composite
def requests(draw: st.DrawFn) -> list[list[bytes]]:
    """The daemon's histories of a conversation, request after request, as stored JSON: an
    entry kept is the same object from one to the next, as the daemon keeps it. Mostly valid
    turns appended; entries removed or replaced here and there (pruning), which may leave
    what is sent invalid."""
    made = [IContent(speaker="human", blocks=(TextBlock(text="q"),))]
    for k in range(draw(st.integers(0, 4))):
        made += draw(turns(k))
    history = [entry_json(e) for e in made]
    out = [history]
    k = 10
    for _ in range(draw(st.integers(1, 5))):
        history = list(history)
        for _ in range(draw(st.integers(1, 3))):
            change = draw(st.sampled_from(["append", "append", "append", "remove", "replace"]))
            at = min(draw(st.integers(0, len(history))), len(history) - 1)
            if change == "append":
                k += 1
                history.extend(entry_json(e) for e in draw(turns(k)))
            elif change == "remove" and len(history) > 1:
                del history[at]
            elif change == "replace":
                history[at] = entry_json(draw(entries()))
        out.append(history)
    return out


def body_of(api: Api, model: str, own: bool) -> dict[str, Any]:
    if api.name == "openai":
        mark = {"prompt_cache_breakpoint": {"mode": "explicit"}} if own else {}
        system = {"role": "system", "content": [{"type": "text", "text": "s", **mark}]}
        return {"model": model, "messages": [system, {"role": "user", "content": "q"}]}
    system = [{"type": "text", "text": "s", **({"cache_control": {"type": "ephemeral"}})}]
    return {"model": model, "system": system if own else "s", "messages": []}


@pytest.mark.parametrize("api", [ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
@settings(max_examples=200, deadline=None)
@given(
    history=requests(),
    marks=st.lists(st.integers(0, 12), max_size=5),
    own=st.booleans(),
    reasoning=st.booleans(),
    model=st.sampled_from(["gpt-5.6", "gpt-4.1", "claude-sonnet-4-5"]),
)
def test_kept_pieces_make_what_a_whole_assembly_makes(
    api: Api,
    history: list[list[bytes]],
    marks: list[int],
    own: bool,
    reasoning: bool,
    model: str,
) -> None:
    body = body_of(api, model, own)
    mode = ("reasoning_content" if reasoning else "drop") if api.name == "openai" else ""
    pieces: Pieces | None = None
    kept = 0
    for blobs in history:
        breakpoints = [m for m in marks if m < len(blobs)]
        warm = assemble(api, body, blobs, breakpoints, mode, pieces)
        cold = assemble(api, body, blobs, breakpoints, mode, None)
        exported = [api.export_entry(IContent.model_validate_json(b), mode) for b in blobs]
        whole = conversation(api, body, exported, breakpoints)
        assert warm.messages == cold.messages
        assert [orjson.loads(m) for m in warm.messages] == whole
        head = body["messages"][: api.head(body["messages"])]
        assert warm.problems == cold.problems
        assert warm.problems == payload_problems(api.name, {"messages": [*head, *whole]})
        if not warm.problems:  # the compactor keeps the pieces of what it sent
            pieces = warm.pieces
            kept += 1
    assume(kept > 1)


def _sent(api: Api, history: list[IContent]) -> list[dict[str, Any]]:
    body = body_of(api, "gpt-4.1", False)
    blobs = [entry_json(e) for e in history]
    mode = "drop" if api.name == "openai" else ""
    built = assemble(api, body, blobs, [], mode, None)
    assert built.problems == []
    return [orjson.loads(m) for m in built.messages]


def human(text: str) -> IContent:
    return IContent(speaker="human", blocks=(TextBlock(text=text),))


def ai(*content: Block) -> IContent:
    return IContent(speaker="ai", blocks=content)


def tool(*content: Block) -> IContent:
    return IContent(speaker="tool", blocks=content)


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


CALL = ToolCallBlock(id="t1", name="Read", parameters={"file_path": "/a"})
RESULT = ToolResponseBlock(call_id="t1", tool_name="Read", result="x = 1")


@pytest.mark.parametrize("api", [ANTHROPIC, OPENAI], ids=["anthropic", "openai"])
def test_messages_of_one_role_left_in_a_row_are_merged(api: Api) -> None:
    """Pruning took the user message between two answers, and the two questions that were
    answered by nothing: what goes upstream alternates, as the provider reads it."""
    sent = _sent(
        api,
        [human("q"), ai(TextBlock(text="a1")), ai(TextBlock(text="a2")), human("x"), human("y")],
    )
    roles = [m["role"] for m in sent]
    assert roles == ["user", "assistant", "user"]
    assert sent[1]["content"] == [text("a1"), text("a2")]
    assert sent[2]["content"] == [text("x"), text("y")]


def test_the_latest_assistant_message_keeps_its_thinking_in_front() -> None:
    """Merged into the message before it, the latest assistant message's thinking would no
    longer lead it (Anthropic refuses that while it answers tool results): it stays apart, its
    thinking and signature as they came; an earlier one with thinking is merged."""
    history = [
        human("q"),
        ai(TextBlock(text="a0")),
        ai(thinking("first"), TextBlock(text="a1")),
        human("go on"),
        ai(TextBlock(text="a2")),
        ai(thinking("second"), CALL),
        tool(RESULT),
    ]
    sent = _sent(ANTHROPIC, history)
    roles = [m["role"] for m in sent]
    assert roles == ["user", "assistant", "user", "assistant", "assistant", "user"]
    assert sent[1]["content"] == [
        {"type": "text", "text": "a0"},
        {"type": "thinking", "thinking": "first", "signature": "s"},
        {"type": "text", "text": "a1"},
    ]
    assert sent[4]["content"][0] == {"type": "thinking", "thinking": "second", "signature": "s"}


def test_results_stay_in_front_of_the_message_that_answers() -> None:
    """Tool results open the user message they go in: a text before them is not merged with
    them (the pairing would break), results and the text after them are."""
    history = [human("q"), ai(CALL), tool(RESULT), human("and then")]
    sent = _sent(ANTHROPIC, history)
    assert sent[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"},
        {"type": "text", "text": "and then"},
    ]
