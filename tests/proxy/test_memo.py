"""The compactor's memory of the previous request changes nothing: a conversation taken in
after another (reusing the bytes the two share) gives the same entries, digests and memo as
the same conversation taken in cold, however the new one differs (grown by a turn, a
breakpoint moved, an earlier message edited, a tool run cut in the middle) and however the
client writes its JSON (compact, or Python's spaces and escapes)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.edges.proxy.anthropic import AnthropicApi
from hdcontext.edges.proxy.api import Api
from hdcontext.edges.proxy.compactor import Memo, _take, _take_whole, _Taken, best_match
from hdcontext.edges.proxy.openai import OpenAiApi
from hdcontext.edges.proxy.prefix import Splicer
from tests.examples import examples

CC = {"type": "ephemeral"}


def anthropic_turn(k: int, parallel: int) -> list[dict[str, Any]]:
    calls = [
        {"type": "tool_use", "id": f"t{k}_{j}", "name": "Read", "input": {"file_path": f"/f{j}"}}
        for j in range(parallel)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": f"t{k}_{j}", "content": f"body {k} {j}"}
        for j in range(parallel)
    ]
    return [
        {"role": "assistant", "content": [{"type": "text", "text": f"step {k}"}, *calls]},
        {"role": "user", "content": [*results, {"type": "text", "text": f"note {k}"}]},
    ]


def openai_turn(k: int, parallel: int) -> list[dict[str, Any]]:
    calls = [
        {"id": f"c{k}_{j}", "type": "function", "function": {"name": "Read", "arguments": "{}"}}
        for j in range(parallel)
    ]
    return [
        {"role": "assistant", "content": f"step {k}", "tool_calls": calls},
        *(
            {"role": "tool", "tool_call_id": f"c{k}_{j}", "content": f"r{k}{j}"}
            for j in range(parallel)
        ),
    ]


def conversation(api: Api, turns: list[int]) -> list[dict[str, Any]]:
    first = {"role": "user", "content": "start"}
    made = anthropic_turn if api.name == "anthropic" else openai_turn
    out = [first]
    for k, parallel in enumerate(turns):
        out += made(k, parallel)
    if api.name == "openai" and out[-1]["role"] == "assistant":
        out.append({"role": "user", "content": "go on"})
    return out


def encoded(api: Api, messages: list[dict[str, Any]], style: int) -> bytes:
    """The body as a client writes it: compact (JavaScript), Python's defaults, or laid out
    over lines with a blank before each comma (no client known, but JSON allows it)."""
    head = [{"role": "system", "content": "be brief"}] if api.name == "openai" else []
    body = {"model": "m", "messages": [*head, *messages], "system": "sys", "stream": True}
    if style == 0:
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    if style == 1:
        return json.dumps(body).encode()
    return json.dumps(body, indent=1, separators=(" ,", ": ")).encode()


def memo_fields(memo: Memo) -> tuple[Any, ...]:
    return (
        memo.session_id,
        memo.head,
        memo.first,
        memo.digests,
        memo.calls,
        list(memo.cut_at),
        list(memo.cut_entry),
        list(memo.cut_calls),
        memo.cut_mode,
        list(memo.layout.starts),
        list(memo.layout.ends),
    )


def entries(taken: _Taken, cold: _Taken) -> list[Any]:
    """All entries of ``taken``: the kept ones are the cold take's (checked by digest)."""
    return [e.to_wire() for e in (*cold.tail[: taken.kept], *taken.tail)]


def mark_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The client's own breakpoint on its last message (it moves every request)."""
    out = copy.deepcopy(messages)
    last = out[-1]
    if isinstance(last["content"], str):
        last["content"] = [{"type": "text", "text": last["content"]}]
    last["content"][-1]["cache_control"] = CC
    return out


@pytest.mark.parametrize("api", [AnthropicApi(), OpenAiApi()], ids=["anthropic", "openai"])
@settings(max_examples=examples(40), deadline=None)
@given(
    turns=st.lists(st.integers(min_value=1, max_value=3), min_size=1, max_size=6),
    grow=st.lists(st.integers(min_value=1, max_value=3), max_size=3),
    edit=st.integers(min_value=-1, max_value=30),
    style=st.integers(min_value=0, max_value=2),
)
def test_taken_warm_is_taken_cold(
    api: Api, turns: list[int], grow: list[int], edit: int, style: int
) -> None:
    before = conversation(api, turns)
    after = conversation(api, turns + grow)
    if 0 <= edit < len(after):
        message = after[edit]
        if isinstance(message.get("content"), str):
            message["content"] += " (edited é)"
    if api.name == "anthropic":
        before, after = mark_last(before), mark_last(after)
    raw = encoded(api, after, style)
    memo = _take_whole(api, encoded(api, before, style), "client").memo
    match = best_match(api, raw, [memo])
    warm = _take(api, raw, match, Splicer(), "client")
    cold = _take_whole(api, raw, "client")
    assert memo_fields(warm.memo) == memo_fields(cold.memo)
    assert entries(warm, cold) == entries(cold, cold)
    assert warm.mode == cold.mode
    assert warm.body["system"] == cold.body["system"]
    if edit < 0 or edit >= len(after):  # nothing edited: only the new turns were taken in
        assert match is not None and warm.kept > 0


@pytest.mark.parametrize("api", [AnthropicApi(), OpenAiApi()], ids=["anthropic", "openai"])
def test_a_conversation_resent_shorter_resumes_where_it_can(api: Api) -> None:
    """A retry without the last answer: the body is a prefix of the previous one up to an
    assistant message; what is left after it is read, and nothing else."""
    before = conversation(api, [1, 2, 1])
    shorter = before[:-2]  # the last turn: its assistant message and the answer
    raw = encoded(api, shorter, 0)
    memo = _take_whole(api, encoded(api, before, 0), "client").memo
    match = best_match(api, raw, [memo])
    assert match is not None
    warm = _take(api, raw, match, Splicer(), "client")
    cold = _take_whole(api, raw, "client")
    assert warm.kept > 0
    assert memo_fields(warm.memo) == memo_fields(cold.memo)
    assert entries(warm, cold) == entries(cold, cold)


def test_a_message_put_where_an_assistant_one_stood_resumes_earlier() -> None:
    """The known bytes end before an assistant message of the previous body; an edit that
    put a user message there (the conversation forked) resumes at the assistant message
    before it, as the conversation read whole says."""
    api = AnthropicApi()
    before = conversation(api, [1, 1, 1])
    forked = [*before[:3], {"role": "user", "content": "instead, this"}]
    raw = encoded(api, forked, 0)
    memo = _take_whole(api, encoded(api, before, 0), "client").memo
    match = best_match(api, raw, [memo])
    assert match is not None and memo.cut_at[match.k] == 3
    warm = _take(api, raw, match, Splicer(), "client")
    cold = _take_whole(api, raw, "client")
    assert 0 < warm.kept < len(cold.memo.digests)
    assert memo_fields(warm.memo) == memo_fields(cold.memo)
    assert entries(warm, cold) == entries(cold, cold)


def test_a_body_that_only_looks_known_is_read_whole() -> None:
    """The marker must come out of the parse where the known messages were. A body with a
    nested copy of its conversation ahead of it (``meta.messages``) lays out as the nested
    one; the next body's cut falls there, the marker is not in the top-level messages, and
    the body is read whole."""
    api = AnthropicApi()
    messages = conversation(api, [1, 1, 1])
    grown = conversation(api, [1, 1, 1, 2])

    def body(conv: list[dict[str, Any]]) -> bytes:
        doc = {"meta": {"messages": messages}, "messages": conv}
        return json.dumps(doc, separators=(",", ":")).encode()

    memo = _take_whole(api, body(messages), "c").memo
    assert memo.layout.starts[0] < body(messages).index(b'"messages":[', 10)  # the nested one
    match = best_match(api, body(grown), [memo])
    assert match is not None
    taken = _take(api, body(grown), match, Splicer(), "c")
    assert taken.kept == 0
    assert memo_fields(taken.memo) == memo_fields(_take_whole(api, body(grown), "c").memo)
