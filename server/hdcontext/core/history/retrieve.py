"""``history/retrieve``: a tool call and its response back from the transcript, by call id.

The transcript keeps every entry as it was appended, so whatever density or compression took
out of the working view is there. A long session's transcript is megabytes: only entries
whose stored JSON mentions the id are parsed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ..content import ToolCallBlock, ToolResponseBlock, entry_from_json
from .stored import Blob


def find_call(
    transcript: Sequence[Blob], call_id: str
) -> tuple[ToolCallBlock | None, ToolResponseBlock]:
    """The latest response to ``call_id`` and the call before it (``None`` if none is);
    KeyError when no response has that id."""
    needle = json.dumps(call_id).encode("utf-8", "surrogatepass")
    response: ToolResponseBlock | None = None
    at = len(transcript)
    for seq in range(len(transcript) - 1, -1, -1):
        if needle in transcript[seq]:
            for block in entry_from_json(transcript[seq]).blocks:
                if isinstance(block, ToolResponseBlock) and block.call_id == call_id:
                    response, at = block, seq
        if response is not None:
            break
    if response is None:
        raise KeyError(call_id)
    for seq in range(at, -1, -1):
        if needle in transcript[seq]:
            for block in entry_from_json(transcript[seq]).blocks:
                if isinstance(block, ToolCallBlock) and block.id == call_id:
                    return block, response
    return None, response
