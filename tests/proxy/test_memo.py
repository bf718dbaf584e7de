"""The compactor's memory of the previous request changes nothing: a conversation taken in
after another (reusing what the two share) gives the same entries and digests as the same
conversation taken in cold, however the new one differs (grown by a turn, a breakpoint moved,
an earlier message edited, a tool run cut in the middle)."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.edges.proxy.anthropic import AnthropicApi
from hdcontext.edges.proxy.api import Api
from hdcontext.edges.proxy.compactor import Seen, _take
from hdcontext.edges.proxy.openai import OpenAiApi
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


def seen_of(api: Api, messages: list[dict[str, Any]]) -> Seen:
    t = _take(api, messages, None)
    return Seen(t.messages, t.wire, t.digests, t.cuts)


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
)
def test_taken_warm_is_taken_cold(api: Api, turns: list[int], grow: list[int], edit: int) -> None:
    before = conversation(api, turns)
    after = conversation(api, turns + grow)
    if 0 <= edit < len(after):
        message = after[edit]
        if isinstance(message.get("content"), str):
            message["content"] += " (edited)"
    if api.name == "anthropic":
        before, after = mark_last(before), mark_last(after)
    warm = _take(api, after, seen_of(api, before))
    cold = _take(api, after, None)
    assert warm.wire == cold.wire
    assert warm.digests == cold.digests
    assert warm.messages == cold.messages
    assert {c: e for c, e in warm.cuts.items()} == cold.cuts
    if edit < 0 or edit >= len(after):  # nothing edited: only the new turns were taken in
        assert warm.reused > 0
