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
"""

from __future__ import annotations

import asyncio
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, pairwise

from .compression.types import DensityResult
from .content import IContent, is_empty_ai
from .journal import Change, Journal
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


class History:
    def __init__(self, counter: Callable[[IContent], int] = count_entry) -> None:
        self._count = counter
        self._raw: list[IContent] = []
        self._tokens: list[int] = []
        self._keys: list[int] = []  # increasing along the history (journal.py)
        self._shown: list[bool] = []  # False where the curated view leaves an entry out
        self._curated_tokens: list[int] = []  # 0 where the curated view leaves an entry out
        self._curated_len = 0
        self._total = 0
        self._next_key = 0
        self._transcript: list[IContent] = []
        self.journal = Journal()
        self._lock = asyncio.Lock()

    # -- views ---------------------------------------------------------------------------

    @property
    def raw(self) -> Sequence[IContent]:
        """The working history with density edits applied (REQ-HD-003.5). Do not mutate."""
        return self._raw

    @property
    def tokens(self) -> Sequence[int]:
        """``tokens[i]`` is the count of ``raw[i]``."""
        return self._tokens

    @property
    def keys(self) -> Sequence[int]:
        """``keys[i]`` is the key of ``raw[i]`` (journal.py); increasing. Do not mutate."""
        return self._keys

    def position(self, key: int) -> int | None:
        """The index of the entry with ``key`` in the working view, if it is there."""
        i = bisect_left(self._keys, key)
        return i if i < len(self._keys) and self._keys[i] == key else None

    @property
    def transcript(self) -> Sequence[IContent]:
        """Everything ever appended, in order; nothing prunes or compresses it."""
        return self._transcript

    def curated(self) -> list[IContent]:
        """What a model receives: the working view without empty AI entries."""
        return list(compress(self._raw, self._shown))

    @property
    def total_tokens(self) -> int:
        """Tokens of the curated view."""
        return self._total

    @property
    def curated_count(self) -> int:
        return self._curated_len

    # -- changes -------------------------------------------------------------------------

    async def _count_all(self, entries: Sequence[IContent]) -> list[int]:
        # tiktoken releases the GIL while encoding: a large append does not stall the loop
        # (other sessions' requests go on), and the hop costs tens of microseconds.
        return await asyncio.to_thread(lambda: [self._count(e) for e in entries])

    def _new_keys(self, n: int) -> range:
        keys = range(self._next_key, self._next_key + n)
        self._next_key += n
        return keys

    def _set_lists(
        self, entries: list[IContent], counts: list[int], keys: list[int] | None = None
    ) -> None:
        """Install a whole new working view (with new keys, unless it brings its own)."""
        if keys is None:
            keys = list(self._new_keys(len(entries)))
        elif len(keys) != len(entries) or any(a >= b for a, b in pairwise(keys)):
            raise ValueError("keys must increase along the history, one per entry")
        else:
            self._next_key = max(self._next_key, keys[-1] + 1 if keys else 0)
        self._raw = entries
        self._tokens = counts
        self._keys = keys
        self._shown = [not is_empty_ai(e) for e in entries]
        self._curated_tokens = [c if s else 0 for c, s in zip(counts, self._shown, strict=True)]
        self._curated_len = sum(self._shown)
        self._total = sum(self._curated_tokens)
        self.journal.reset()

    async def append(self, entries: Sequence[IContent]) -> None:
        counts = await self._count_all(entries)
        async with self._lock:
            keys = self._new_keys(len(entries))
            shown = [not is_empty_ai(e) for e in entries]
            contributions = [c if s else 0 for c, s in zip(counts, shown, strict=True)]
            self._raw.extend(entries)
            self._tokens.extend(counts)
            self._keys.extend(keys)
            self._shown.extend(shown)
            self._curated_tokens.extend(contributions)
            self._curated_len += sum(shown)
            self._total += sum(contributions)
            self._transcript.extend(entries)
            self.journal.record(Change(added=tuple(zip(keys, entries, strict=True))))

    async def apply_density_result(self, result: DensityResult) -> None:
        """REQ-HD-003: check, then replacements first, then removals highest first.

        Only the replaced entries are recounted and looked at again; the rest keep their
        counts and flags, and the totals are sums. Nothing changes when the check fails.
        """
        async with self._lock:
            check_density_result(result, len(self._raw))
            replaced = {i: self._count(e) for i, e in result.replacements.items()}
            raw, counts, keys = list(self._raw), list(self._tokens), list(self._keys)
            shown, curated = list(self._shown), list(self._curated_tokens)
            for index, entry in result.replacements.items():
                raw[index] = entry
                counts[index] = replaced[index]
                shown[index] = not is_empty_ai(entry)
                curated[index] = replaced[index] if shown[index] else 0
            removals = sorted(set(result.removals), reverse=True)
            for index in removals:
                for values in (raw, counts, keys, shown, curated):
                    del values[index]
            touched = sorted({*result.replacements, *removals})
            change = Change(
                removed=tuple((self._keys[i], self._raw[i]) for i in touched),
                added=tuple((self._keys[i], result.replacements[i]) for i in sorted(replaced)),
            )
            self._raw, self._tokens, self._keys = raw, counts, keys
            self._shown, self._curated_tokens = shown, curated
            self._curated_len = sum(shown)
            self._total = sum(curated)
            self.journal.record(change)

    async def replace_all(self, entries: Iterable[IContent]) -> None:
        """Install a compressed history, reusing the counts of entries kept as they were."""
        new = list(entries)
        async with self._lock:
            known = {id(e): c for e, c in zip(self._raw, self._tokens, strict=True)}
            counts = [known[id(e)] if id(e) in known else self._count(e) for e in new]
            self._set_lists(new, counts)

    async def recalculate_total_tokens(self) -> None:
        """REQ-HD-003.6: recount every entry (after a tokenizer change, or to verify the cache)."""
        async with self._lock:
            self._set_lists(self._raw, [self._count(e) for e in self._raw])

    async def clear(self) -> None:
        """Empty the working view. The transcript keeps everything: nothing is ever lost."""
        async with self._lock:
            self._set_lists([], [])

    def restore(
        self,
        raw: list[IContent],
        counts: list[int],
        transcript: list[IContent],
        keys: list[int] | None = None,
    ) -> None:
        """Load persisted state (counts as stored, so a restart re-tokenizes nothing; keys as
        stored, so the store can go on addressing the entries it holds by them)."""
        self._set_lists(list(raw), list(counts), None if keys is None else list(keys))
        self._transcript = list(transcript)
