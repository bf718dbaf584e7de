"""A session's rows read back as its history: the working view made of transcript references
and entries stored whole, and the damage those rows show.

Both stores read the same rows (``transcript`` by ``seq``, ``working`` by ``pos``) and mend the
same damage the same way (``recovery.py``), so the reading is written once, here; each store
runs its own queries and, when there is damage, ``repair`` in a transaction of its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ...core.history.stored import Blob
from ...core.session.state import SessionState
from .call_rows import Executes
from .records import Loaded
from .recovery import Damage, unpaired


@dataclass(frozen=True)
class Repair:
    """What to write to mend a damaged session (``repair``), and what to tell the user."""

    seqs: list[int]
    """The transcript's row numbers as found, in order: renumbered from 0."""
    drop: list[int]
    """Working rows (by ``pos``) to delete."""
    damage: Damage


@dataclass(frozen=True)
class Assembled:
    transcript: list[Blob]
    raw: list[Blob]
    counts: list[int]
    keys: list[int]
    repair: Repair | None


def assemble(
    session_id: str,
    transcript_rows: Iterable[tuple[int, str]],
    working_rows: Iterable[tuple[int, int | None, str | None, int]],
) -> Assembled:
    """The history of rows read in order: ``(seq, entry)`` of the transcript, ``(pos, seq,
    entry, tokens)`` of the working view. A working row that refers to a transcript row keeps
    the very object of the transcript, as after an append."""
    transcript: list[Blob] = []
    seqs: list[int] = []
    for seq, text in transcript_rows:
        seqs.append(int(seq))
        transcript.append(str(text).encode("utf-8"))
    holes = bool(seqs) and seqs[-1] != len(seqs) - 1
    index = {seq: n for n, seq in enumerate(seqs)} if holes else None
    raw: list[Blob] = []
    counts: list[int] = []
    keys: list[int] = []
    lost: list[int] = []
    referred = -1
    for pos, ref, entry, tokens in working_rows:
        if ref is not None:
            referred = max(referred, int(ref))
            n = int(ref) if index is None else index.get(int(ref), -1)
            if not 0 <= n < len(transcript):
                lost.append(int(pos))
                continue
            raw.append(transcript[n])
        else:
            raw.append(str(entry).encode("utf-8"))
        counts.append(int(tokens))
        keys.append(int(pos))
    repair: Repair | None = None
    if holes or lost:
        missing = max(seqs[-1] if seqs else -1, referred) + 1 - len(seqs)
        drop = sorted(unpaired(raw))
        repair = Repair(
            seqs, [keys[i] for i in drop] + lost, Damage(session_id, missing, len(lost), len(drop))
        )
        for i in reversed(drop):
            del raw[i], counts[i], keys[i]
    return Assembled(transcript, raw, counts, keys, repair)


def loaded_of(
    session_id: str, read: Assembled, state: str, model: str | None, created: int, version: int = 0
) -> Loaded:
    """The session as the daemon restores it, from its rows and its ``sessions`` row."""
    return Loaded(
        session_id=session_id,
        state=SessionState.from_json(state),
        transcript=read.transcript,
        raw=read.raw,
        counts=read.counts,
        keys=read.keys,
        model=model,
        created=created,
        version=version,
    )


def repair(db: Executes, session_id: str, seqs: Sequence[int], drop: Sequence[int]) -> None:
    """Close the holes of a transcript (rows keep their order) and point the working rows at
    the new numbers; delete the working rows ``drop`` (by ``pos``). Run it in a transaction."""
    for new, old in enumerate(seqs):  # ascending: a new number never meets a row still there
        if new != old:
            db.execute(
                "UPDATE transcript SET seq=? WHERE session_id=? AND seq=?", (new, session_id, old)
            )
            db.execute(
                "UPDATE working SET seq=? WHERE session_id=? AND seq=?", (new, session_id, old)
            )
    for pos in drop:
        db.execute("DELETE FROM working WHERE session_id=? AND pos=?", (session_id, pos))
