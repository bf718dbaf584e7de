"""JSON as hypothesis writes it for the daemon's tests, including what json.dumps will not
write: NaN, ±Infinity, numbers beyond 64 bits or a double, lone surrogate escapes, nesting
deeper than the daemon takes."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st


class Raw:
    """A piece of JSON text written as it stands (NaN, a 5,000-digit number, a lone
    surrogate escape): what json.dumps will not write."""

    def __init__(self, text: str) -> None:
        self.text = text


def write_json(value: Any) -> str:
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{write_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(write_json(v) for v in value) + "]"
    return json.dumps(value)


ODD = st.sampled_from(
    [
        Raw("NaN"),
        Raw("Infinity"),
        Raw("-Infinity"),
        Raw("1e400"),
        Raw("-1e999"),
        Raw("9" * 25),
        Raw("-" + "9" * 5000),
        Raw(str(2**63)),
        Raw('"\\ud800"'),
        Raw('"x\\udfff"'),
        Raw('"\\ud83d\\ude00"'),
        Raw("[" * 300 + "]" * 300),
        Raw("[" * 1200 + "]" * 1200),
        Raw('{"a":' * 250 + "1" + "}" * 250),
    ]
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=30),
    ODD,
)
JSON = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
