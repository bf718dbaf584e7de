"""Transcript entries the working view let go of are kept packed (``stored.pack``): about half
a long session's JSON, which only a look back reads again. Packed apart from the compaction
that let them go (``pack_left``: the daemon does it once the session is idle). Every reader of
the transcript gets the entry's JSON as it was appended, whoever reads it: ``transcript_json``,
``transcript``, a retrieve, a fork, the store, a rollback, a restart."""

from __future__ import annotations

import asyncio
import json

from hdcontext.core.content import entry_json
from hdcontext.core.history.stored import PACK_MIN, pack, unpack
from hdcontext.core.session.session import Session

from .builders import ai_call, ai_text, human, tool_result

OLD = "".join(f"{i:4}\told line {i} of a.py\n" for i in range(200))
SETTINGS = {"compression.density.schedule": "every-turn"}


def _pruned(pack: bool = True) -> tuple[Session, list[bytes]]:
    """A session whose first read of a.py a later write made stale, compacted: the read's
    response left the view. Also: every entry's JSON as appended."""
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0, settings=lambda: SETTINGS)
    appended = [
        human("look at a.py"),
        ai_call("r1", "Read", {"file_path": "/w/a.py"}, ts=10),
        tool_result("r1", "Read", OLD, ts=11),
        ai_text("it has 200 lines", ts=12),
        ai_call("w1", "Write", {"file_path": "/w/a.py", "content": "x = 1\n"}, ts=20),
        tool_result("w1", "Write", "File written", ts=21),
        ai_text("done", ts=22),
    ]
    s.append(appended)
    asyncio.run(s.compact(at=1_000))
    before = [entry_json(e) for e in s.history.transcript]
    assert not any(b[:1] == b"x" for b in _held(s))  # not while the compaction answers
    if pack:
        assert s.pack_left() > 0 and s.pack_left() == 0
    return s, before


def _held(s: Session) -> list[bytes]:
    return list(s.history._transcript)  # what the history holds, packed or not


def test_an_entry_that_left_the_view_is_held_packed_and_read_back_as_appended() -> None:
    s, before = _pruned()
    held = _held(s)
    packed = [seq for seq, blob in enumerate(held) if blob[:1] == b"x"]
    assert packed == [2]  # the stale read's output; its call left too, but is short
    assert len(held[2]) < len(before[2]) // 2
    assert list(s.history.transcript_json) == before
    assert s.history.transcript_json[2] == before[2]
    assert list(s.history.transcript_json[1:3]) == before[1:3]
    assert json.loads(s.history.transcript.json()) == [json.loads(b) for b in before]
    _, response = s.retrieve("r1")
    assert response.result == OLD
    # An entry still in the view is the very object the transcript holds.
    assert any(blob is held[-1] for blob in s.history.raw_json)


def test_the_journal_holds_the_packed_entry_not_the_unpacked_one() -> None:
    s, before = _pruned()
    kept = [
        blob for change in s.history.journal._changes for _, blob in change.added + change.removed
    ]
    assert kept and before[2] not in kept
    assert _held(s)[2] in kept


def test_a_rollback_gives_the_view_its_entries_back_whole() -> None:
    s = Session("s", workspace_root=lambda: "/w", clock=lambda: 0, settings=lambda: SETTINGS)
    s.append([human("look"), ai_call("r1", "Read", {"file_path": "/w/a.py"}, ts=10)])
    s.append([tool_result("r1", "Read", OLD, ts=11), ai_text("ok", ts=12)])
    s.append([ai_call("w1", "Write", {"file_path": "/w/a.py", "content": "x"}, ts=20)])
    s.append([tool_result("w1", "Write", "File written", ts=21)])
    snap = s.snapshot()
    asyncio.run(s.compact(at=1_000))
    s.restore(snap)  # (the daemon packs only once a change is committed)
    assert s.pack_left() == 0
    held = _held(s)
    assert held[2] is s.history.raw_json[2]  # the view's own object, not packed
    asyncio.run(s.compact(at=2_000))  # and it can leave the view again
    assert s.pack_left() > 0 and _held(s)[2][:1] == b"x"


def test_a_restored_history_packs_what_its_view_does_not_hold() -> None:
    s, before = _pruned()
    h = s.history
    again = Session("t", workspace_root=lambda: "/w", clock=lambda: 0, settings=lambda: SETTINGS)
    raw = list(h.raw_json)
    transcript = list(h.transcript_json)  # as the store reads it back: JSON, unpacked
    # The store hands back a view entry stored by reference as the transcript's own object.
    raw = [next((t for t in transcript if t == r), r) for r in raw]
    again.history.restore(raw, list(h.tokens), transcript, list(h.keys))
    assert again.pack_left() > 0
    assert [seq for seq, blob in enumerate(_held(again)) if blob[:1] == b"x"] == [2]
    assert list(again.history.transcript_json) == before


def test_a_fork_back_into_what_left_brings_it_back_whole() -> None:
    s, before = _pruned()
    s.history.reinstate(range(len(before)))
    assert list(s.history.raw_json) == before
    s, before = _pruned(pack=False)  # back before it was packed: it is not packed then
    s.history.reinstate(range(len(before)))
    assert s.pack_left() == 0 and _held(s)[2] is s.history.raw_json[2]


def test_pack_leaves_short_and_packed_entries_as_they_are() -> None:
    short = b'{"speaker":"human","blocks":[]}'
    assert pack(short) is short and unpack(short) is short
    long = entry_json(human("y" * PACK_MIN))
    packed = pack(long)
    assert packed != long and unpack(packed) == long and pack(packed) is packed
