"""``Session.warm`` fills caches and decides nothing: a session loaded from what was stored and
warmed answers every later turn exactly as the same session loaded and not warmed (what the
proxy does at start for the conversations it served last, so that their next request is a
turn's work)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from hdcontext.core.content import IContent
from hdcontext.core.history.sync import entry_digest
from hdcontext.core.session.session import Session
from hdcontext.core.session.state import SessionState
from hdcontext.formats.importers.claude_code import from_jsonl

from .builders import ai_call, human, tool_result

TRANSCRIPTS = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "claude-code"
)
FILES = sorted(TRANSCRIPTS.glob("*.jsonl"))[:3]
START = 1_700_000_000_000


def _session(limit: int, clock: list[int]) -> Session:
    s = Session("warm", clock=lambda: clock[0], settings=lambda: {})
    s.model = "claude-sonnet-4-5"
    s.set_override("contextLimit", limit)
    return s


def _digests(entries: list[IContent]) -> list[bytes]:
    """The entries' digests as a client's JSON gives them: without the ``metadata: null``
    that ``to_wire`` writes for an entry that has none."""
    return [entry_digest({k: v for k, v in e.to_wire().items() if v is not None}) for e in entries]


def _resend(s: Session, conversation: list[IContent]) -> None:
    """The whole conversation sent again, as an agent behind the proxy sends it."""
    digests = _digests(conversation)
    held = s.sync_point(digests)
    s.sync(held, digests, s.prepare(conversation[held:]))


def _loaded(s: Session, limit: int, clock: list[int]) -> Session:
    """``s`` as the registry loads it from what the store kept."""
    copy = _session(limit, clock)
    h = s.history
    copy.history.restore(list(h.raw_json), list(h.tokens), list(h.transcript_json), list(h.keys))
    copy.import_state(SessionState.from_json(s.export_state().to_json()))
    return copy


def _reads(n: int) -> list[IContent]:
    """Reads of three files, again and again: later reads make earlier ones stale."""
    out: list[IContent] = []
    for k in range(n):
        text = "\n".join(f"{i}\tline {i} of file {k % 3}, read {k}" for i in range(60))
        out += [
            ai_call(f"c{k}", "Read", {"file_path": f"/w/f{k % 3}.py"}),
            tool_result(f"c{k}", "Read", text),
        ]
    return out


def _conversations() -> list[tuple[str, list[IContent]]]:
    made = [("reads", [human("go"), *_reads(40)])]
    return made + [(p.stem[:12], from_jsonl(p.read_text(encoding="utf-8"))) for p in FILES]


@pytest.mark.parametrize("limit", [20_000, 200_000])
@pytest.mark.parametrize("name", [name for name, _ in _conversations()])
def test_a_warmed_session_decides_as_one_that_was_not(name: str, limit: int) -> None:
    entries = dict(_conversations())[name]
    clock = [START]
    s = _session(limit, clock)
    half = len(entries) // 2 // 2 * 2
    for k in range(2, half + 1, 2):
        clock[0] += 20_000
        _resend(s, entries[:k])
        asyncio.run(s.compact())
        s.history.mark_stable()
    cold, warm = _loaded(s, limit, clock), _loaded(s, limit, clock)
    warm.warm(_digests(entries[:half]))  # the conversation as the client last sent it
    # Warmed: the density engine has taken the history in, each proposal's saving is made,
    # and the client's entries are known by their digests; the cold copy has none of it.
    revision = warm.history.journal.revision
    warmed, unwarmed = warm._proposals, cold._proposals
    assert (warmed._density._revision, unwarmed._density._revision) == (revision, -1)
    proposed = warmed.edits(warm.history, warm.resolved().values)
    assert len(warmed._savings._shapes) == len(proposed) and unwarmed._savings._shapes == {}
    assert warm._lineage.held(_digests(entries[:half]), warm.history.transcript) == half
    assert len(warm._lineage._digests) > 0 and cold._lineage._digests == {}
    for k in range(half + 2, len(entries) + 1, 2):
        clock[0] += 20_000
        replies = []
        for t in (cold, warm):
            _resend(t, entries[:k])
            replies.append(asyncio.run(t.compact()).to_wire())
            t.history.mark_stable()
        assert replies[0] == replies[1], k
        assert list(cold.history.raw_json) == list(warm.history.raw_json)
