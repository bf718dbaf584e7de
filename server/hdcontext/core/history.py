"""One chat's history: the working view, its token counts, and the append-only transcript.

This is the seeds' HistoryService. Each entry is counted once, when it arrives or when an
edit replaces it, and the count is kept beside it (the seeds' "Option B"): a total after an
append costs the appended entries only, and compression results reuse the counts of the
entries they kept unchanged. Whether the curated view shows an entry is kept beside it the
same way, so an edit looks again only at the entries it replaced, and the totals are sums
over plain lists. Only the session calls the mutating methods; the async lock keeps a recount
from interleaving with an append while token counting runs off the event loop.

Every entry of the working view has a key (``journal.py``), and every change is recorded in
the journal, so that readers that keep what they learnt about the history (the density
index, the read log) can catch up by the entries that changed.

Entries are held as their wire JSON (``stored.py``): the views parse what they are asked for,
and the timestamp of each entry is kept beside it, as its count is, for the readers that
order reads against writes.
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import compress, pairwise

from .content import IContent, entry_from_json, entry_json, is_empty_ai
from .density.types import DensityResult
from .journal import Change, Journal
from .stored import Blob, Entries
from .tokens import count_entry


class DensityApplyError(ValueError):
    """A DensityResult that breaks REQ-HD-001.6 (conflict) or REQ-HD-001.7 (bounds)."""


def check_density_result(result: DensityResult, length: int) -> None:
    removals = set(result.removals)
    conflict = removals.intersection(result.replacements)
    if conflict:
        raise DensityApplyError(
            f"indices both removed and replaced: {sorted(conflict)} (REQ-HD-001.6)"
        )
    bad = sorted(i for i in removals.union(result.replacements) if not 0 <= i < length)
    if bad:
        raise DensityApplyError(
            f"indices out of bounds for a history of {length}: {bad} (REQ-HD-001.7)"
        )


@dataclass(frozen=True)
class HistorySnapshot:
    """A history's working view and transcript at one moment (``History.snapshot``)."""

    raw: tuple[Blob, ...]
    tokens: tuple[int, ...]
    keys: tuple[int, ...]
    shown: tuple[bool, ...]
    stamps: tuple[int | None, ...]
    transcript: tuple[Blob, ...]


class History:
    def __init__(self, counter: Callable[[IContent], int] = count_entry) -> None:
        self._count = counter
        self._raw: list[Blob] = []
        self._tokens: list[int] = []
        self._keys: list[int] = []  # increasing along the history (journal.py)
        self._shown: list[bool] = []  # False where the curated view leaves an entry out
        self._stamps: list[int | None] = []  # each entry's metadata.timestamp
        self._curated_tokens: list[int] = []  # 0 where the curated view leaves an entry out
        self._curated_len = 0
        self._total = 0
        self._next_key = 0
        self._transcript: list[Blob] = []
        self.journal = Journal()
        self._lock = asyncio.Lock()

    # -- views ---------------------------------------------------------------------------

    @property
    def raw(self) -> Entries:
        """The working history with density edits applied (REQ-HD-003.5), parsed as read."""
        return Entries(self._raw)

    @property
    def raw_json(self) -> Sequence[Blob]:
        """``raw`` as stored: each entry's JSON. Do not mutate."""
        return self._raw

    @property
    def tokens(self) -> Sequence[int]:
        """``tokens[i]`` is the count of ``raw[i]``."""
        return self._tokens

    @property
    def keys(self) -> Sequence[int]:
        """``keys[i]`` is the key of ``raw[i]`` (journal.py); increasing. Do not mutate."""
        return self._keys

    @property
    def timestamps(self) -> Sequence[int | None]:
        """``timestamps[i]`` is ``raw[i].timestamp``, without parsing the entry."""
        return self._stamps

    def position(self, key: int) -> int | None:
        """The index of the entry with ``key`` in the working view, if it is there."""
        i = bisect_left(self._keys, key)
        return i if i < len(self._keys) and self._keys[i] == key else None

    @property
    def transcript(self) -> Entries:
        """Everything ever appended, in order; nothing prunes or compresses it."""
        return Entries(self._transcript)

    @property
    def transcript_json(self) -> Sequence[Blob]:
        """``transcript`` as stored. An entry still in the working view as it was appended
        is the very same object in both lists. Do not mutate."""
        return self._transcript

    def curated(self) -> Entries:
        """What a model receives: the working view without empty AI entries."""
        return Entries(list(compress(self._raw, self._shown)))

    @property
    def total_tokens(self) -> int:
        """Tokens of the curated view."""
        return self._total

    @property
    def curated_count(self) -> int:
        return self._curated_len

    # -- changes -------------------------------------------------------------------------

    async def _count_all(self, entries: Sequence[IContent]) -> tuple[list[int], list[Blob]]:
        # tiktoken releases the GIL while encoding: a large append does not stall the loop
        # (other sessions' requests go on), and the hop costs tens of microseconds.
        def work() -> tuple[list[int], list[Blob]]:
            return [self._count(e) for e in entries], [entry_json(e) for e in entries]

        return await asyncio.to_thread(work)

    def _new_keys(self, n: int) -> range:
        keys = range(self._next_key, self._next_key + n)
        self._next_key += n
        return keys

    def _install(
        self,
        blobs: list[Blob],
        counts: list[int],
        shown: list[bool],
        stamps: list[int | None],
        keys: list[int] | None = None,
    ) -> None:
        """Install a whole new working view (with new keys, unless it brings its own)."""
        if keys is None:
            keys = list(self._new_keys(len(blobs)))
        elif len(keys) != len(blobs) or any(a >= b for a, b in pairwise(keys)):
            raise ValueError("keys must increase along the history, one per entry")
        else:
            self._next_key = max(self._next_key, keys[-1] + 1 if keys else 0)
        if not len(blobs) == len(counts) == len(shown) == len(stamps):
            raise ValueError("one count, flag and timestamp per entry")
        self._raw = blobs
        self._tokens = counts
        self._keys = keys
        self._shown = shown
        self._stamps = stamps
        self._curated_tokens = [c if s else 0 for c, s in zip(counts, shown, strict=True)]
        self._curated_len = sum(shown)
        self._total = sum(self._curated_tokens)
        self.journal.reset()

    async def append(self, entries: Sequence[IContent]) -> None:
        counts, blobs = await self._count_all(entries)
        async with self._lock:
            keys = self._new_keys(len(entries))
            shown = [not is_empty_ai(e) for e in entries]
            contributions = [c if s else 0 for c, s in zip(counts, shown, strict=True)]
            self._raw.extend(blobs)
            self._tokens.extend(counts)
            self._keys.extend(keys)
            self._shown.extend(shown)
            self._stamps.extend(e.timestamp for e in entries)
            self._curated_tokens.extend(contributions)
            self._curated_len += sum(shown)
            self._total += sum(contributions)
            self._transcript.extend(blobs)
            self.journal.record(Change(added=tuple(zip(keys, blobs, strict=True))))

    async def apply_density_result(self, result: DensityResult) -> None:
        """REQ-HD-003: check, then replacements first, then removals highest first.

        Only the replaced entries are recounted and looked at again; the rest keep their
        counts and flags, and the totals are sums. Nothing changes when the check fails.
        """
        async with self._lock:
            check_density_result(result, len(self._raw))
            replaced = {
                i: (entry_json(e), self._count(e), not is_empty_ai(e), e.timestamp)
                for i, e in result.replacements.items()
            }
            raw, counts, keys = list(self._raw), list(self._tokens), list(self._keys)
            shown, stamps = list(self._shown), list(self._stamps)
            curated = list(self._curated_tokens)
            for index, (blob, count, visible, stamp) in replaced.items():
                raw[index], counts[index], shown[index], stamps[index] = blob, count, visible, stamp
                curated[index] = count if visible else 0
            removals = sorted(set(result.removals), reverse=True)
            for index in removals:
                for values in (raw, counts, keys, shown, stamps, curated):
                    del values[index]
            touched = sorted({*replaced, *removals})
            change = Change(
                removed=tuple((self._keys[i], self._raw[i]) for i in touched),
                added=tuple((self._keys[i], replaced[i][0]) for i in sorted(replaced)),
            )
            self._raw, self._tokens, self._keys = raw, counts, keys
            self._shown, self._stamps, self._curated_tokens = shown, stamps, curated
            self._curated_len = sum(shown)
            self._total = sum(curated)
            self.journal.record(change)

    async def replace_all(
        self, entries: Sequence[IContent], parsed: Sequence[IContent] | None = None
    ) -> None:
        """Install a compressed history.

        ``parsed`` is ``list(self.raw)`` as the compression read it: an entry of it that
        comes back as it was (the very object) keeps its stored JSON and its count.
        """
        new = list(entries)
        async with self._lock:
            known: dict[int, int] = {}
            if parsed is not None and len(parsed) == len(self._raw):
                known = {id(e): i for i, e in enumerate(parsed)}
            blobs: list[Blob] = []
            counts: list[int] = []
            for entry in new:
                i = known.get(id(entry))
                blobs.append(self._raw[i] if i is not None else entry_json(entry))
                counts.append(self._tokens[i] if i is not None else self._count(entry))
            shown = [not is_empty_ai(e) for e in new]
            self._install(blobs, counts, shown, [e.timestamp for e in new])

    async def recalculate_total_tokens(self) -> None:
        """REQ-HD-003.6: recount every entry (after a tokenizer change, or to verify the cache)."""
        async with self._lock:
            entries = list(self.raw)
            counts = [self._count(e) for e in entries]
            self._install(list(self._raw), counts, list(self._shown), list(self._stamps))

    async def clear(self) -> None:
        """Empty the working view. The transcript keeps everything: nothing is ever lost."""
        async with self._lock:
            self._install([], [], [], [])

    def restore(
        self,
        raw: Sequence[Blob],
        counts: Sequence[int],
        transcript: Sequence[Blob],
        keys: Sequence[int] | None = None,
    ) -> None:
        """Load persisted state (counts as stored, so a restart re-tokenizes nothing; keys as
        stored, so the store can go on addressing the entries it holds by them).

        Every working entry is parsed once here: that validates what was read back, and
        gives the flags and timestamps kept beside it. An entry that is not IContent raises
        pydantic's ValidationError (a ValueError), and nothing changes then.
        """
        entries = [entry_from_json(b) for b in raw]
        shown = [not is_empty_ai(e) for e in entries]
        stamps = [e.timestamp for e in entries]
        self._install(list(raw), list(counts), shown, stamps, None if keys is None else list(keys))
        self._transcript = list(transcript)

    def snapshot(self) -> HistorySnapshot:
        """What ``restore_snapshot`` puts back: copies of the lists, not of the entries."""
        return HistorySnapshot(
            tuple(self._raw),
            tuple(self._tokens),
            tuple(self._keys),
            tuple(self._shown),
            tuple(self._stamps),
            tuple(self._transcript),
        )

    def restore_snapshot(self, snap: HistorySnapshot) -> None:
        """Put the history back as it was at ``snap`` (readers of the journal start again)."""
        self._install(
            list(snap.raw), list(snap.tokens), list(snap.shown), list(snap.stamps), list(snap.keys)
        )
        self._transcript = list(snap.transcript)
