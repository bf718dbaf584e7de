"""How an answer ended, read along with its usage: a tool call leaves the session waiting on
the agent, an answer on a person, anything else unknown; for whole answers and streams."""

from __future__ import annotations

import json

from hdcontext.core.cache.rhythm import waiting_after as waits_on
from hdcontext.edges.proxy.usage import (
    StreamUsage,
    anthropic_billed,
    from_json,
    openai_billed,
)

_USAGE = {"input_tokens": 10, "output_tokens": 2}


def _events(*events: dict[str, object]) -> bytes:
    return b"".join(f"event: x\ndata: {json.dumps(e)}\n\n".encode() for e in events)


def test_the_stop_reasons_of_both_apis() -> None:
    assert waits_on("tool_use") == waits_on("tool_calls") == "tool"
    assert waits_on("end_turn") == waits_on("stop") == "person"
    assert waits_on("max_tokens") == waits_on(None) == waits_on("pause_turn") == "unknown"
    assert waits_on(["tool_use"]) == waits_on({"stop": 1}) == "unknown"  # odd values, no error


def test_a_whole_answer_says_how_it_ended() -> None:
    anthropic = json.dumps({"stop_reason": "tool_use", "usage": _USAGE}).encode()
    billed = from_json(anthropic, anthropic_billed)
    assert billed is not None and billed.waits_on == "tool"
    openai = json.dumps(
        {"choices": [{"finish_reason": "stop"}], "usage": {"prompt_tokens": 5}}
    ).encode()
    billed = from_json(openai, openai_billed)
    assert billed is not None and billed.waits_on == "person"


def test_an_anthropic_stream_says_it_in_its_message_delta_whatever_the_chunks() -> None:
    stream = _events(
        {"type": "message_start", "message": {"usage": _USAGE}},
        {"type": "content_block_delta", "delta": {"text": "stop_reason"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": _USAGE},
    )
    for size in (1, 7, len(stream)):
        reader = StreamUsage("anthropic")
        for k in range(0, len(stream), size):
            reader.feed(stream[k : k + size])
        billed = reader.billed
        assert billed is not None and billed.waits_on == "person"


def test_an_openai_stream_says_it_before_its_usage_chunk() -> None:
    stream = (
        b'data: {"choices":[{"delta":{"tool_calls":[]},"finish_reason":"tool_calls"}]}\n\n'
        b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":1}}\n\n'
        b"data: [DONE]\n\n"
    )
    reader = StreamUsage("openai")
    reader.feed(stream)
    billed = reader.billed
    assert billed is not None and billed.waits_on == "tool"
