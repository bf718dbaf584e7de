"""The IContent wire model: exact shapes, unknown keys kept, errors that name the JSON path."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from hdcontext.core.content import (
    ContentError,
    IContent,
    TextBlock,
    dump_entries,
    is_empty_ai,
    parse_entries,
    parse_entries_json,
    text_entry,
)

FULL = [
    {
        "speaker": "human",
        "blocks": [{"type": "text", "text": "hi", "providerMetadata": {"x": [1, 2]}}],
        "metadata": {"timestamp": 1760000000000, "id": "u1", "model": "m", "nested": {"a": 1}},
        "customEntryKey": True,
    },
    {
        "speaker": "ai",
        "blocks": [
            {"type": "thinking", "thought": "hmm", "signature": "abc"},
            {"type": "tool_call", "id": "c1", "name": "read_file", "parameters": {"path": "a"}},
            {"type": "code", "code": "print(1)", "language": "python"},
            {"type": "media", "mimeType": "image/png", "data": "AAAA", "encoding": "base64"},
        ],
    },
    {
        "speaker": "tool",
        "blocks": [
            {
                "type": "tool_response",
                "callId": "c1",
                "toolName": "read_file",
                "result": {"lines": ["x"], "n": 1},
                "error": "partial",
            }
        ],
    },
]


def test_round_trip_keeps_every_key_and_adds_none() -> None:
    assert dump_entries(parse_entries(FULL)) == FULL


def test_round_trip_through_json_text() -> None:
    entries = parse_entries_json(json.dumps(FULL))
    assert dump_entries(entries) == FULL


def test_missing_field_names_the_json_path() -> None:
    bad = [
        *FULL[:3],
        {"speaker": "tool", "blocks": [{"type": "tool_response", "toolName": "x", "result": 1}]},
    ]
    with pytest.raises(ContentError) as err:
        parse_entries(bad)
    assert err.value.errors == ["entries[3].blocks[0].callId: field required"]


def test_each_fault_is_reported_with_its_own_path() -> None:
    with pytest.raises(ContentError) as err:
        parse_entries(
            [
                {"speaker": "robot", "blocks": []},
                {"speaker": "ai", "blocks": [{"type": "video"}]},
                {
                    "speaker": "ai",
                    "blocks": [{"type": "media", "mimeType": "a", "data": "", "encoding": "hex"}],
                },
            ]
        )
    paths = [line.split(":")[0] for line in err.value.errors]
    assert paths == ["entries[0].speaker", "entries[1].blocks[0]", "entries[2].blocks[0].encoding"]


def test_not_a_list_is_an_error_at_the_root() -> None:
    with pytest.raises(ContentError) as err:
        parse_entries({"speaker": "ai"})
    assert err.value.errors[0].startswith("entries: ")


def test_blocks_built_in_code_carry_their_type() -> None:
    assert TextBlock(text="x").model_dump(mode="json", exclude_unset=True) == {
        "type": "text",
        "text": "x",
    }
    assert text_entry("ai", "ok").to_wire() == {
        "speaker": "ai",
        "blocks": [{"type": "text", "text": "ok"}],
    }


def test_entries_are_immutable() -> None:
    entry = parse_entries(FULL)[0]
    with pytest.raises(ValidationError):
        entry.speaker = "ai"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("blocks", "empty"),
    [
        ([], True),
        ([{"type": "text", "text": "  \n"}], True),
        ([{"type": "text", "text": "x"}], False),
        ([{"type": "thinking", "thought": ""}], False),
    ],
)
def test_empty_ai_entries(blocks: list[dict[str, str]], empty: bool) -> None:
    entry = IContent.model_validate({"speaker": "ai", "blocks": blocks})
    assert is_empty_ai(entry) is empty
    human = IContent.model_validate({"speaker": "human", "blocks": blocks})
    assert is_empty_ai(human) is False
