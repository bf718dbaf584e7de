"""High-density compression that reads only what changed since its last run.

Near the limit a session is compressed on every turn. Once every old tool output is a
one-liner and the history still does not fit, each of those runs read the whole history
again to change nothing: every entry parsed and every response looked at, about 0.08 s a
run at 2,000 entries, twice a turn when the history is over the limit itself.

What a run learnt stays true while the entries it read stay as they were: the entries before
where it stopped are as compressing leaves them (``high_density.summarize_from`` says why that
is exact), and the calls it found are where it found them. So a run starts where the stored
entries first differ from the ones the last run left, or where that run stopped, whichever
comes first, and parses the entries it reads from there, each once. Entries are compared by
the hash of their stored JSON (which each keeps once made), not held: the entries an edit
replaced are not kept alive for the next run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ..content import IContent, ToolCallBlock, entry_from_json
from ..history.stored import Blob
from .high_density import summarize_from


@dataclass
class _Seen:
    hashes: list[int] = field(default_factory=list)
    """The hash of each stored entry as the last run left them."""
    calls: dict[str, int] = field(default_factory=dict)
    """Each call id and the index of the first stored entry that holds it."""
    settled: int = 0
    """Entries before this index are as compressing leaves them."""


def _agreeing(now: Sequence[int], then: Sequence[int]) -> int:
    """How many hashes at the head of ``now`` are those of ``then``."""
    n = min(len(now), len(then))
    if now[:n] == then[:n]:  # compared in C: the usual case, a history that only grew
        return n
    for i in range(n):
        if now[i] != then[i]:
            return i
    return n  # pragma: no cover - the lists differ within the first n


class Summaries:
    """One session's high-density compression, run after run (see the module doc)."""

    def __init__(self) -> None:
        self._seen = _Seen()
        self._calls: dict[str, int] = {}

    def run(
        self, blobs: Sequence[Blob], tokens: Sequence[int], target: int, preserve_threshold: float
    ) -> tuple[dict[int, IContent], int]:
        """``summarize_from`` over the stored entries, from where the last run's knowledge
        ends: the entries it cuts and how far it went. ``settle`` must follow, once the
        session has installed the cuts (or not)."""
        seen = self._seen
        same = _agreeing(list(map(hash, blobs)), seen.hashes)
        if same == len(seen.hashes):
            calls = dict(seen.calls)
        else:
            calls = {cid: at for cid, at in seen.calls.items() if at < same}
        parsed: dict[int, IContent] = {}

        def entry_at(index: int) -> IContent:
            entry = parsed.get(index)
            if entry is None:
                entry = parsed[index] = entry_from_json(blobs[index])
            return entry

        for index in range(same, len(blobs)):
            for block in entry_at(index).blocks:
                if isinstance(block, ToolCallBlock):
                    calls.setdefault(block.id, index)

        def call_of(call_id: str) -> ToolCallBlock | None:
            index = calls.get(call_id)
            if index is None:
                return None
            for block in entry_at(index).blocks:
                if isinstance(block, ToolCallBlock) and block.id == call_id:
                    return block
            return None  # pragma: no cover - the index was taken from this very entry

        self._calls = calls
        return summarize_from(
            entry_at, tokens, target, preserve_threshold, call_of, min(same, seen.settled)
        )

    def settle(self, blobs: Sequence[Blob], settled: int) -> None:
        """Remember the stored entries as they are now, the first ``settled`` of them as
        compressing leaves them (after a run's cuts were installed, or up to the first cut
        when they were not)."""
        self._seen = _Seen(list(map(hash, blobs)), self._calls, settled)
        self._calls = {}
