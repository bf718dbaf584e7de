"""The daemon's message decoder (edges/lsp/decode.py), on its own: pure, so hypothesis can try
many thousands of bodies in seconds. The transport tests drive the same code end to end.

Two ways decode a body: pydantic-core's parser on the bytes (fast, most messages) and the
json module on the text (exact, names where a value is wrong). They must agree on every
body, and whatever either accepts must hold nothing the daemon refuses.
"""

from __future__ import annotations

import math
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.edges.lsp.decode import (
    INT_MAX,
    INT_MIN,
    MAX_DEPTH,
    Incoming,
    Refused,
    decode,
    decode_text,
)
from tests.examples import examples

from .jsonish import JSON, ODD, write_json

EXAMPLES = int(os.environ.get("HDCONTEXT_FUZZ_EXAMPLES", "600"))
"""``make fuzz`` asks for more (50,000)."""

ENVELOPES = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.sampled_from(["2.0", "2.0", "1.0"]),
        "id": st.one_of(st.integers(-5, 5), st.text(max_size=4), JSON),
        "method": st.one_of(st.sampled_from(["history/open", "initialize"]), JSON),
        "params": JSON,
        "result": JSON,
    },
)


def _nested(depth: int, inner: str = "1") -> str:
    return "[" * depth + inner + "]" * depth


BODIES = st.one_of(
    ENVELOPES.map(write_json),
    JSON.map(write_json),
    st.integers(195, 210).map(
        lambda d: '{"jsonrpc":"2.0","id":1,"method":"m","params":' + _nested(d) + "}"
    ),
    st.integers(195, 210).map(
        lambda d: (
            '{"jsonrpc":"2.0","id":1,"method":"m","params":'
            + _nested(d, "12345678901234567890")
            + "}"
        )
    ),
    st.tuples(ENVELOPES.map(write_json), st.integers(0, 64), st.text(max_size=3)).map(
        lambda t: t[0][: t[1]] + t[2] + t[0][t[1] :]
    ),
    ODD.map(write_json),
)


def _clean(value: Any, depth: int = 0) -> None:
    """Nothing the daemon refuses: no NaN or ±Infinity, no integer beyond 64 bits, no lone
    surrogate, no nesting beyond the limit."""
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int):
        assert INT_MIN <= value <= INT_MAX
    elif isinstance(value, float):
        assert math.isfinite(value)
    elif isinstance(value, str):
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in value)
    else:
        assert depth <= MAX_DEPTH
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            _clean(key, depth)
            _clean(item, depth + 1)


def _verdict(outcome: Incoming | Refused) -> tuple[Any, ...]:
    if isinstance(outcome, Refused):
        return ("refused", outcome.code, outcome.reply_to, outcome.answer)
    return ("taken", outcome.kind, outcome.message)


@settings(max_examples=EXAMPLES, deadline=None)
@given(BODIES)
def test_both_ways_agree_and_what_they_take_is_clean(text: str) -> None:
    body = text.encode("utf-8", "surrogatepass")
    fast = decode(bytearray(body))
    try:
        exact = decode_text(body.decode("utf-8"))
    except UnicodeDecodeError:
        assert isinstance(fast, Refused) and fast.code == -32700
        return
    assert _verdict(fast) == _verdict(exact), text[:300]
    if isinstance(fast, Incoming):
        _clean(fast.message)
        assert fast.message.get("jsonrpc") == "2.0"
    else:
        assert fast.code in (-32700, -32600, -32602)
        assert not any(0xD800 <= ord(c) <= 0xDFFF for c in fast.message)


@settings(max_examples=examples(200), deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_are_decoded_or_refused_never_raised(body: bytes) -> None:
    outcome = decode(bytearray(body))
    assert isinstance(outcome, Incoming | Refused)


def test_decode_frees_the_body_it_was_given() -> None:
    body = bytearray(b'{"jsonrpc":"2.0","id":1,"method":"m","params":{"x":"' + b"a" * 1000 + b'"}}')
    assert isinstance(decode(body), Incoming)
    assert body == bytearray()
    slow = bytearray(b'{"jsonrpc":"2.0","id":1,"method":"m","params":' + b"1" * 30 + b"}")
    assert isinstance(decode(slow), Refused)
    assert slow == bytearray()


def test_the_depth_limit_counts_levels_inside_the_message() -> None:
    def request(depth: int) -> bytearray:
        text = '{"jsonrpc":"2.0","id":1,"method":"m","params":' + _nested(depth) + "}"
        return bytearray(text.encode())

    assert isinstance(decode(request(MAX_DEPTH)), Incoming)
    refused = decode(request(MAX_DEPTH + 1))
    assert isinstance(refused, Refused) and refused.code == -32602
    assert refused.message.endswith(f"nested deeper than {MAX_DEPTH} levels")


def test_params_left_out_reach_the_handler_as_null() -> None:
    for body in (
        b'{"jsonrpc":"2.0","id":1,"method":"history/list"}',
        b'{"jsonrpc":"2.0","method":"exit"}',
    ):
        incoming = decode(bytearray(body))
        assert isinstance(incoming, Incoming)
        assert "params" in incoming.message and incoming.message["params"] is None
