"""Density on real Codex rollouts (DESIGN.md decision 11): a ``cat``/``sed -n`` read goes once a
later view shows the file whole (an ``apply_patch`` Add File, a Delete File, a full re-read), and
a read followed only by Update Files stays, the model's view of what it edits, untouched."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hdcontext.core.content import IContent, ToolCallBlock, ToolResponseBlock
from hdcontext.core.density.optimize import find_stale_reads
from hdcontext.core.density.types import DensityConfig
from hdcontext.core.session.session import Session
from hdcontext.formats.conversation import Conversation
from hdcontext.formats.importers import load

SESSIONS = (
    Path(__file__).resolve().parents[3]
    / "shared/data/transcripts/codex/Kooksun__Lotto645/sessions/2025/11"
)
SPEC_REWRITTEN = "06/rollout-2025-11-06T15-44-45-019a57e9-1a14-75b1-b49d-ef2792f0fb5e.jsonl"
TASKS_EDITED = "06/rollout-2025-11-06T16-45-42-019a5820-e5d7-7692-aae6-926261b8b5c9.jsonl"
PAGE_DELETED = "07/rollout-2025-11-07T09-19-52-019a5baf-15f8-7f52-84b2-7f5e68d5e8cd.jsonl"

pytestmark = pytest.mark.skipif(not SESSIONS.is_dir(), reason=f"no rollouts at {SESSIONS}")


def _compacted(name: str) -> tuple[Conversation, tuple[IContent, ...], Session]:
    """The rollout, and its history after one compaction with the default settings (a limit
    high enough that only the density rules run), as ``hdcontext compact`` runs it."""
    conversation, _ = load((SESSIONS / name).read_text(encoding="utf-8"))
    root = conversation.workspace_root or "/"
    session = Session("codex", workspace_root=lambda: root)
    session.model = conversation.model
    session.set_override("contextLimit", 10_000_000)
    session.append(conversation.entries)
    history = tuple(asyncio.run(session.compact()).history)
    return conversation, history, session


def _calls(entries: tuple[IContent, ...]) -> dict[str, ToolCallBlock]:
    return {b.id: b for e in entries for b in e.blocks if isinstance(b, ToolCallBlock)}


def _responses(entries: tuple[IContent, ...]) -> dict[str, ToolResponseBlock]:
    return {b.call_id: b for e in entries for b in e.blocks if isinstance(b, ToolResponseBlock)}


def test_a_cat_goes_once_apply_patch_deletes_and_adds_the_file_again() -> None:
    read, deleted, added = (
        "call_brd3VBOzJ4s2p5seJcqHt5AS",  # cat specs/001-lotto-ticketing/spec.md
        "call_dbEpBu33AUB7a3DgISq332Wd",  # *** Delete File: specs/001-lotto-ticketing/spec.md
        "call_ilkvu7ZJ0JKlClSnxJhdGwyl",  # *** Add File: specs/001-lotto-ticketing/spec.md
    )
    conversation, history, _ = _compacted(SPEC_REWRITTEN)
    before = _calls(conversation.entries)
    assert before[read].parameters == {
        "command": ["bash", "-lc", "cat specs/001-lotto-ticketing/spec.md"],
        "workdir": "/Users/kooksun/PythonProjects/Lotto645",
    }
    after = _calls(history)
    assert read not in after and read not in _responses(history)
    assert deleted in after and added in after  # the writes stay: the model's own work


def test_a_full_re_read_takes_an_earlier_cat_and_an_update_alone_takes_nothing() -> None:
    superseded = "call_lYUJcFZkaE4pc6nEPmAZxlTI"  # cat frontend/src/main.tsx, later nl -ba'd
    edited = "call_MePC8o0Y3nC92AvTqtzGZldU"  # cat …/tasks.md, then an Update File only
    conversation, history, session = _compacted(TASKS_EDITED)
    stale = {s.call_id: s for s in find_stale_reads(conversation.entries, _config(session))}
    assert stale[superseded].prunable and not stale[edited].prunable
    assert superseded not in _calls(history)
    # The read the model edits from stays as it was: no rule, masking included, touches it.
    assert _calls(history)[edited] == _calls(conversation.entries)[edited]
    assert _responses(history)[edited] == _responses(conversation.entries)[edited]


def test_a_sed_range_read_goes_once_apply_patch_deletes_the_file() -> None:
    read = "call_ExtbwMpjhuwdl1iSz9AF99mt"  # sed -n '1,200p' …/pages/DrawDashboardPage.tsx
    conversation, history, _ = _compacted(PAGE_DELETED)
    assert read in _calls(conversation.entries)
    assert read not in _calls(history)


def _config(session: Session) -> DensityConfig:
    return session.density_config(session.resolved())
