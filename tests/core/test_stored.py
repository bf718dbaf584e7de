"""Entries kept as their wire JSON (stored.py): faithful both ways, and what a session holds."""

from __future__ import annotations

import gc
import json
import tracemalloc
from typing import Any

from hdcontext.core.content import (
    dump_entries,
    entries_json,
    entry_from_json,
    entry_json,
    parse_entries,
)
from hdcontext.core.history.stored import Entries
from hdcontext.core.session.session import Session

ODD: list[dict[str, Any]] = [
    {
        "speaker": "human",
        "blocks": [{"type": "text", "text": "naïve 日本語 🙂", "cacheHint": {"ttl": 5}}],
        "metadata": {"timestamp": 1, "cwd": "/w", "nested": {"k": [1, 2.5, None]}},
        "clientKey": True,
    },
    {
        "speaker": "ai",
        "blocks": [
            {"type": "thinking", "thought": "…"},
            {
                "type": "tool_call",
                "id": "c1",
                "name": "bash",
                "parameters": {"n": 10**30, "x": float("inf"), "y": float("-inf"), "z": -0.0},
            },
        ],
    },
    {
        "speaker": "tool",
        "blocks": [{"type": "tool_response", "callId": "c1", "toolName": "bash", "result": None}],
    },
    {"speaker": "ai", "blocks": [{"type": "text", "text": "lone \ud800 surrogate"}]},
    {"speaker": "ai", "blocks": [{"type": "code", "code": "x = 1"}], "metadata": None},
]


def test_an_entry_comes_back_as_it_went_in() -> None:
    entries = parse_entries(ODD)
    for entry in entries:
        back = entry_from_json(entry_json(entry))
        assert back == entry
        # Keys the client left out stay out; unknown keys are kept (same dump both ways).
        assert json.dumps(back.to_wire()) == json.dumps(entry.to_wire())


def test_the_stored_json_is_what_a_reply_would_say() -> None:
    entries = parse_entries(ODD)
    view = Entries([entry_json(e) for e in entries])
    assert json.loads(view.json()) == json.loads(entries_json(entries))
    plain = entries[:3]  # no lone surrogate: pydantic writes these as they are
    assert Entries([entry_json(e) for e in plain]).json() == entries_json(plain)


def test_the_view_reads_like_a_list() -> None:
    entries = parse_entries(ODD)
    view = Entries([entry_json(e) for e in entries])
    assert len(view) == len(entries)
    assert view[1] == entries[1] and view[-1] == entries[-1]
    assert view[1:3] == entries[1:3] and isinstance(view[1:3], Entries)
    assert list(view) == entries
    assert view == entries and view == Entries([entry_json(e) for e in entries])
    assert view != entries[:2]
    assert json.loads(Entries([]).json()) == [] and json.loads(view[:1].json()) == ODD[:1]
    assert dump_entries(view) == dump_entries(entries)


def _session_entries(chars: int) -> list[dict[str, Any]]:
    """A read whose output is mostly non-Latin text (4 bytes a character as a str, 1 to 4
    in UTF-8), then a write of the same file, then a question including another file."""
    output = ("🙂" + "x" * 63) * (chars // 64)
    included = "--- b.py ---\n" + output + "\n--- End of content ---"
    return [
        {
            "speaker": "ai",
            "blocks": [
                {"type": "tool_call", "id": "r", "name": "read_file", "parameters": {"path": "a"}}
            ],
            "metadata": {"timestamp": 1},
        },
        {
            "speaker": "tool",
            "blocks": [
                {"type": "tool_response", "callId": "r", "toolName": "read_file", "result": output}
            ],
            "metadata": {"timestamp": 2},
        },
        {
            "speaker": "human",
            "blocks": [{"type": "text", "text": included}],
            "metadata": {"timestamp": 3},
        },
    ]


async def test_a_session_holds_about_its_json_size_not_its_objects() -> None:
    """As pydantic objects, this session would take over four times its JSON size (each
    character of the outputs a 4-byte one); kept as JSON, and with the density index holding
    no tool output, it takes little more than its JSON."""
    text = json.dumps(_session_entries(200_000), ensure_ascii=False)
    size = len(text.encode("utf-8"))
    warm = Session("warm", workspace_root=lambda: "/w")  # modules and caches loaded
    warm.append(parse_entries(_session_entries(64)))
    await warm.compact()
    session = Session("mem", workspace_root=lambda: "/w")
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        entries = parse_entries(json.loads(text))  # as a request brings them
        session.append(entries)
        del entries
        await session.compact()
        session.read_times()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert session.history.total_tokens > 0
    assert held < 1.5 * size, f"{held:,} bytes held for {size:,} bytes of JSON"
