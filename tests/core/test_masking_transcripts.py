"""Masking on the real transcripts (shared/data/transcripts): every masked output comes back.

Each conversation the importers read (each sub-agent thread on its own) is
replayed through a session with the default settings, one ``history/compact`` per model call at
the time the transcript gives it (the cache goes cold where the agent paused), then once more
an hour after its end, when everything the rule allows is masked. Every output masked in any
reply must come back from ``history/retrieve`` exactly as it was appended, and must have had
the same pointer in every reply that carried it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from hdcontext.core.content import IContent, ToolResponseBlock
from hdcontext.core.history.stored import Entries
from hdcontext.core.session.session import Session
from hdcontext.core.tools.summary import is_masked
from hdcontext.formats.conversation import Conversation, FormatError
from hdcontext.formats.importers import load_threads

TRANSCRIPTS = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts"
FOLDERS = (
    sorted(p.name for p in TRANSCRIPTS.iterdir() if p.is_dir()) if TRANSCRIPTS.is_dir() else []
)
SUFFIXES = (".jsonl", ".traj", ".json")
HOUR = 3_600_000

pytestmark = pytest.mark.skipif(not FOLDERS, reason=f"no transcripts at {TRANSCRIPTS}")


def conversations(folder: str) -> Iterator[tuple[str, Conversation]]:
    seen: set[str] = set()
    for path in sorted(p for p in (TRANSCRIPTS / folder).rglob("*") if p.name.endswith(SUFFIXES)):
        text = path.read_text(encoding="utf-8")
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        try:
            threads, _ = load_threads(text)
        except FormatError:
            continue
        for thread, conversation in threads:
            yield f"{path.relative_to(TRANSCRIPTS)}#{thread}", conversation


def _pointers(history: Entries, into: dict[str, str], name: str) -> None:
    for entry in history:
        for block in entry.blocks:
            if isinstance(block, ToolResponseBlock) and is_masked(block.result):
                assert isinstance(block.result, str)
                first = into.setdefault(block.call_id, block.result)
                assert first == block.result, f"{name}: {block.call_id}'s pointer changed"


def _originals(entries: tuple[IContent, ...]) -> dict[str, ToolResponseBlock]:
    """Each call id's latest response, as appended (what history/retrieve gives back)."""
    out: dict[str, ToolResponseBlock] = {}
    for entry in entries:
        for block in entry.blocks:
            if isinstance(block, ToolResponseBlock):
                out[block.call_id] = block
    return out


async def _replay(name: str, conversation: Conversation) -> int:
    entries = conversation.entries
    root = conversation.workspace_root or "/"
    session = Session("replay", workspace_root=lambda: root, clock=lambda: 0)
    session.model = "claude-sonnet-4"
    pointers: dict[str, str] = {}
    appended = 0
    clock = 0
    for i, entry in enumerate(entries):
        if entry.speaker != "ai" or i == 0:
            continue
        session.append(entries[appended:i])
        appended = i
        clock = entry.timestamp if entry.timestamp is not None else clock + 10_000
        _pointers((await session.compact(at=clock)).history, pointers, name)
    session.append(entries[appended:])
    last = await session.compact(at=clock + HOUR)
    assert last.cache.cold
    _pointers(last.history, pointers, name)
    assert last.status.masked_outputs == len(pointers), name
    originals = _originals(entries)
    for call_id in pointers:
        _, back = session.retrieve(call_id)
        original = originals[call_id]
        assert back == original, f"{name}: {call_id} came back changed"
        assert back.model_dump_json(by_alias=True) == original.model_dump_json(by_alias=True)
    return len(pointers)


@pytest.mark.parametrize("folder", FOLDERS)
async def test_every_masked_output_comes_back_byte_for_byte(folder: str) -> None:
    masked = 0
    for name, conversation in conversations(folder):
        masked += await _replay(name, conversation)
    assert masked > 10, f"{folder}: only {masked} outputs masked, the test proves little"
