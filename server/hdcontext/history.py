"""One chat's history: the working view, its token counts, and the append-only transcript.

This is the seeds' HistoryService. Each entry is counted once, when it arrives or when an
edit replaces it, and the count is kept beside it (the seeds' "Option B"): a total after an
append costs the appended entries only, and compression results reuse the counts of the
entries they kept unchanged. Only the session calls the mutating methods; the async lock keeps
a recount from interleaving with an append while token counting runs off the event loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence

from .compression.types import DensityResult
from .content import IContent, is_empty_ai
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
        self._curated_tokens: list[int] = []  # 0 where the curated view leaves an entry out
        self._curated_len = 0
        self._total = 0
        self._transcript: list[IContent] = []
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
    def transcript(self) -> Sequence[IContent]:
        """Everything ever appended, in order; nothing prunes or compresses it."""
        return self._transcript

    def curated(self) -> list[IContent]:
        """What a model receives: the working view without empty AI entries."""
        return [e for e in self._raw if not is_empty_ai(e)]

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

    def _set_lists(self, entries: list[IContent], counts: list[int]) -> None:
        self._raw = entries
        self._tokens = counts
        self._curated_tokens = [
            0 if is_empty_ai(e) else c for e, c in zip(entries, counts, strict=True)
        ]
        self._curated_len = sum(1 for e in entries if not is_empty_ai(e))
        self._total = sum(self._curated_tokens)

    async def append(self, entries: Sequence[IContent]) -> None:
        counts = await self._count_all(entries)
        async with self._lock:
            for entry, count in zip(entries, counts, strict=True):
                empty = is_empty_ai(entry)
                contribution = 0 if empty else count
                self._curated_len += 0 if empty else 1
                self._raw.append(entry)
                self._tokens.append(count)
                self._curated_tokens.append(contribution)
                self._total += contribution
            self._transcript.extend(entries)

    async def apply_density_result(self, result: DensityResult) -> None:
        """REQ-HD-003: check, then replacements first, then removals highest first.

        Only the replaced entries are recounted; the total is rebuilt from the kept counts.
        Nothing changes when the check fails.
        """
        async with self._lock:
            check_density_result(result, len(self._raw))
            replaced = {i: self._count(e) for i, e in result.replacements.items()}
            raw = list(self._raw)
            counts = list(self._tokens)
            for index, entry in result.replacements.items():
                raw[index] = entry
                counts[index] = replaced[index]
            for index in sorted(set(result.removals), reverse=True):
                del raw[index]
                del counts[index]
            self._set_lists(raw, counts)

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

    def restore(self, raw: list[IContent], counts: list[int], transcript: list[IContent]) -> None:
        """Load persisted state (counts as stored, so a restart re-tokenizes nothing)."""
        self._set_lists(list(raw), list(counts))
        self._transcript = list(transcript)
