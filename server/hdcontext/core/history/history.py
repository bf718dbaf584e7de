"""One chat's history: the working view, its token counts, and the append-only transcript.

This is the seeds' HistoryService. Each entry is counted once, when it arrives or when an
edit replaces it, and the count is kept beside it (the seeds' "Option B"): a total after an
append costs the appended entries only, and compression results reuse the counts of the
entries they kept unchanged. Whether the curated view shows an entry is kept beside it the
same way, so an edit looks again only at the entries it replaced, and the totals are sums
over plain lists. Counting is the only slow part of an append, so it can be done apart
(``prepare``, on a worker thread if the caller likes) from the change itself, which is quick.

Every entry of the working view has a key (``journal.py``), and every change is recorded in
the journal, so that readers that keep what they learnt about the history (the density
engine, the store) can catch up by the entries that changed. And the history remembers the
first position any change touched since ``mark_stable``, which tells how much of the view
the previous reply shares with the next one (what a provider can read from its prompt cache).

Entries are held as their wire JSON (``stored.py``): the views parse what they are asked for,
and the timestamp of each entry is kept beside it, as its count is, for the readers that
order reads against writes.

Synchronous, and changed only by its session. The lists are never changed in place except by
``append``, which extends them: every other change installs new lists. That is what makes a
snapshot (for a request that must change all or nothing) a matter of references and lengths.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress, pairwise
from typing import Protocol

from ..content import IContent, entry_from_json, entry_json, is_empty_ai
from ..tokens import count_entry
from .journal import Change, Journal
from .stored import PACK_MIN, Blob, Entries, Unpacked, pack, unpack


class Edits(Protocol):
    """What the history applies of a density result (``density.types.DensityResult``): the
    indices removed and the entries that replace others. Named here, not imported, so that
    the history stands below the density engine that reads it."""

    @property
    def removals(self) -> Sequence[int]: ...

    @property
    def replacements(self) -> Mapping[int, IContent]: ...


class DensityApplyError(ValueError):
    """A DensityResult that breaks REQ-HD-001.6 (conflict) or REQ-HD-001.7 (bounds)."""


def check_density_result(result: Edits, length: int) -> None:
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
class Prepared:
    """Entries counted and encoded, ready to append (``History.prepare``)."""

    blobs: list[Blob]
    counts: list[int]
    shown: list[bool]
    stamps: list[int | None]
    blocks: list[int]


@dataclass(frozen=True)
class _View:
    """The working view's parallel lists (replaced whole by every change but an append)."""

    raw: list[Blob]
    tokens: list[int]
    keys: list[int]  # increasing along the history (journal.py)
    shown: list[bool]  # False where the curated view leaves an entry out
    stamps: list[int | None]  # each entry's metadata.timestamp
    curated_tokens: list[int]  # 0 where the curated view leaves an entry out
    origins: list[int]  # the transcript entry each comes from; -1: made here (a summary)
    blocks: list[int]  # content blocks the curated view shows of each (0 where left out)


class _RunningSums:
    """Running sums of one of the view's lists, kept while the view is the same object: an
    append extends them, a rollback truncates them, any other change makes them start again,
    once."""

    def __init__(self) -> None:
        self._view: _View | None = None
        self._sums: list[int] = [0]

    def between(self, view: _View, values: list[int], start: int, stop: int) -> int:
        sums = self._sums
        if self._view is not view:
            sums = self._sums = [0]
            self._view = view
        n = len(values)
        if len(sums) > n + 1:
            del sums[n + 1 :]
        running = sums[-1]
        for value in values[len(sums) - 1 :]:
            running += value
            sums.append(running)
        stop = min(max(stop, 0), n)
        start = min(max(start, 0), stop)
        return sums[stop] - sums[start]


@dataclass(frozen=True)
class HistorySnapshot:
    """What ``History.restore_snapshot`` puts back: the lists by reference, with the lengths
    they had (an append after the snapshot extended them; nothing else changes them)."""

    view: _View
    length: int
    transcript: list[Blob]
    transcript_length: int
    totals: tuple[int, int, int, int | None, int]
    leaving_length: int


class History:
    def __init__(self, counter: Callable[[IContent], int] = count_entry) -> None:
        self._count = counter
        self._view = _View([], [], [], [], [], [], [], [])
        self._layout = 0  # counts every change but an append (``layout``)
        self._compressed_upto = 0  # transcript entries a compression summarized, at most
        self._curated_len = 0
        self._total = 0
        self._next_key = 0
        self._changed_from: int | None = None  # first raw index changed since mark_stable
        self._token_sums = _RunningSums()  # of curated tokens (tokens_between)
        self._block_sums = _RunningSums()  # of curated blocks (blocks_between)
        self._transcript: list[Blob] = []
        self._leaving: list[int] = []
        """Transcript entries that left the working view, to pack (``pack_left``)."""
        self.journal = Journal()

    # -- views ---------------------------------------------------------------------------

    @property
    def raw(self) -> Entries:
        """The working history with density edits applied (REQ-HD-003.5), parsed as read."""
        return Entries(self._view.raw)

    @property
    def raw_json(self) -> Sequence[Blob]:
        """``raw`` as stored: each entry's JSON. Do not mutate."""
        return self._view.raw

    @property
    def tokens(self) -> Sequence[int]:
        """``tokens[i]`` is the count of ``raw[i]``."""
        return self._view.tokens

    @property
    def keys(self) -> Sequence[int]:
        """``keys[i]`` is the key of ``raw[i]`` (journal.py); increasing. Do not mutate."""
        return self._view.keys

    @property
    def timestamps(self) -> Sequence[int | None]:
        """``timestamps[i]`` is ``raw[i].timestamp``, without parsing the entry."""
        return self._view.stamps

    @property
    def layout(self) -> int:
        """Changes with every change but an append. While it stays the same, the entries the
        view held keep their indices, counts and flags: what was learnt of them still holds
        (``cache/savings.py`` leans on it). Whatever installs the view's lists or cuts them
        bumps it: ``_install``, an applied edit, ``truncate``, ``restore_snapshot``."""
        return self._layout

    def position(self, key: int) -> int | None:
        """The index of the entry with ``key`` in the working view, if it is there."""
        keys = self._view.keys
        i = bisect_left(keys, key)
        return i if i < len(keys) and keys[i] == key else None

    @property
    def transcript(self) -> Entries:
        """Everything ever appended, in order; nothing prunes or compresses it."""
        return Entries(Unpacked(self._transcript))

    @property
    def transcript_json(self) -> Sequence[Blob]:
        """``transcript`` as each entry's JSON. An entry still in the working view as it was
        appended is the very same object in both; one that left it is kept packed
        (``stored.pack``) and unpacked as it is read."""
        return Unpacked(self._transcript)

    def curated(self) -> Entries:
        """What a model receives: the working view without empty AI entries (a copy of the
        list: later appends must not show through a reply already made)."""
        view = self._view
        if self._curated_len == len(view.raw):
            return Entries(view.raw[:])
        return Entries(list(compress(view.raw, view.shown)))

    @property
    def total_tokens(self) -> int:
        """Tokens of the curated view."""
        return self._total

    @property
    def curated_count(self) -> int:
        return self._curated_len

    def tokens_between(self, start: int, stop: int) -> int:
        """Curated tokens of the working view's entries ``start`` to ``stop - 1``."""
        return self._token_sums.between(self._view, self._view.curated_tokens, start, stop)

    def blocks_between(self, start: int, stop: int) -> int:
        """Content blocks the curated view shows of entries ``start`` to ``stop - 1``: how a
        provider that finds cache entries a number of blocks back (Anthropic) measures the
        distance between two places in a request."""
        return self._block_sums.between(self._view, self._view.blocks, start, stop)

    def curated_tokens_at(self, index: int) -> int:
        """What the entry at ``index`` adds to the curated view (0 for a hidden one)."""
        return self._view.curated_tokens[index]

    def count(self, entry: IContent) -> int:
        """The tokens ``entry`` would count for, by this history's counter."""
        return self._count(entry)

    def curated_index(self, raw_index: int) -> int:
        """How many curated entries come before ``raw_index`` of the working view."""
        view = self._view
        if self._curated_len == len(view.raw):
            return raw_index
        return sum(view.shown[:raw_index])

    def shown_before(self, stop: int) -> int | None:
        """The working-view index of the last entry before ``stop`` that the curated view
        shows (the one a breakpoint at ``stop`` sits on), or ``None``."""
        shown = self._view.shown
        for index in range(min(stop, len(shown)) - 1, -1, -1):
            if shown[index]:
                return index
        return None

    # -- what changed since the last reply -------------------------------------------------

    def mark_stable(self, changed_from: int | None = None) -> None:
        """The working view as it is now was handed out: count changes from here (or, when
        restoring a saved session, from ``changed_from``)."""
        self._changed_from = changed_from

    @property
    def changed_from(self) -> int | None:
        """The first raw index an edit, removal or replacement touched since
        ``mark_stable`` (appends touch nothing before them), or ``None``."""
        return self._changed_from

    def mark_changed(self, index: int) -> None:
        """Count the view as changed from ``index`` since it was last handed out, though no
        entry there changed: a call that never reached the provider (``Session.call_refused``)
        leaves what the provider saw last where it was."""
        self._touched(index)

    def _touched(self, index: int) -> None:
        if self._changed_from is None or index < self._changed_from:
            self._changed_from = index

    # -- changes -------------------------------------------------------------------------

    def prepare(self, entries: Sequence[IContent]) -> Prepared:
        """Count and encode entries for ``append``; changes nothing (safe off the loop)."""
        return Prepared(
            blobs=[entry_json(e) for e in entries],
            counts=[self._count(e) for e in entries],
            shown=[not is_empty_ai(e) for e in entries],
            stamps=[e.timestamp for e in entries],
            blocks=[_shown_blocks(e) for e in entries],
        )

    def append(self, entries: Sequence[IContent] | Prepared) -> None:
        ready = entries if isinstance(entries, Prepared) else self.prepare(entries)
        n = len(ready.blobs)
        if not n:
            return
        view = self._view
        keys = range(self._next_key, self._next_key + n)
        self._next_key += n
        contributions = [c if s else 0 for c, s in zip(ready.counts, ready.shown, strict=True)]
        view.raw.extend(ready.blobs)
        view.tokens.extend(ready.counts)
        view.keys.extend(keys)
        view.shown.extend(ready.shown)
        view.stamps.extend(ready.stamps)
        view.curated_tokens.extend(contributions)
        view.blocks.extend(ready.blocks)
        view.origins.extend(range(len(self._transcript), len(self._transcript) + n))
        self._curated_len += sum(ready.shown)
        self._total += sum(contributions)
        self._transcript.extend(ready.blobs)
        self.journal.record(Change(added=tuple(zip(keys, ready.blobs, strict=True))))

    def apply_density_result(self, result: Edits) -> None:
        """REQ-HD-003: check, then replacements first, then removals highest first.

        Only the replaced entries are recounted and looked at again; the rest keep their
        counts and flags, and the totals are sums. Nothing changes when the check fails.
        """
        old = self._view
        check_density_result(result, len(old.raw))
        replaced = {
            i: (entry_json(e), self._count(e), not is_empty_ai(e), e.timestamp, _shown_blocks(e))
            for i, e in result.replacements.items()
        }
        raw, counts, keys = list(old.raw), list(old.tokens), list(old.keys)
        shown, stamps, curated = list(old.shown), list(old.stamps), list(old.curated_tokens)
        origins, blocks = list(old.origins), list(old.blocks)
        for index, (blob, count, visible, stamp, shown_blocks) in replaced.items():
            raw[index], counts[index], shown[index], stamps[index] = blob, count, visible, stamp
            curated[index] = count if visible else 0
            blocks[index] = shown_blocks
        removals = sorted(set(result.removals), reverse=True)
        for index in removals:
            for values in (raw, counts, keys, shown, stamps, curated, origins, blocks):
                del values[index]
        touched = sorted({*replaced, *removals})
        if not touched:
            return
        self._leave(old, touched)
        change = Change(
            removed=tuple((old.keys[i], old.raw[i]) for i in touched),
            added=tuple((old.keys[i], replaced[i][0]) for i in sorted(replaced)),
        )
        self._view = _View(raw, counts, keys, shown, stamps, curated, origins, blocks)
        self._layout += 1
        self._curated_len = sum(shown)
        self._total = sum(curated)
        self._touched(touched[0])
        self.journal.record(change)

    def _leave(self, view: _View, indices: Sequence[int]) -> None:
        """Note the transcript's entries that ``view`` held as they were appended at
        ``indices`` and that leave it now, for ``pack_left``."""
        transcript, origins, raw, leaving = self._transcript, view.origins, view.raw, self._leaving
        for i in indices:
            seq = origins[i]
            if seq >= 0 and transcript[seq] is raw[i] and len(raw[i]) >= PACK_MIN:
                leaving.append(seq)

    def pack_left(self) -> int:
        """Pack the transcript's entries that left the working view since the last time
        (``stored.pack``), in the transcript and in the journal: the bytes it saved. Apart
        from the change that let them go, so that the caller can do it after answering (a
        zlib pass, some milliseconds for a large first compaction); nothing any reader sees
        changes."""
        transcript, swapped, saved = self._transcript, {}, 0
        for seq in self._leaving:
            blob = transcript[seq]
            packed = pack(blob)
            if packed is not blob:
                swapped[id(blob)] = transcript[seq] = packed
                saved += len(blob) - len(packed)
        self._leaving = []
        self.journal.swap(swapped)
        return saved

    def replace_all(
        self, entries: Sequence[IContent], parsed: Sequence[IContent] | None = None
    ) -> None:
        """Install a compressed history.

        ``parsed`` is ``list(self.raw)`` as the compression read it: an entry of it that
        comes back as it was (the very object) keeps its stored JSON and its count.
        """
        new = list(entries)
        old = self._view
        known: dict[int, int] = {}
        if parsed is not None and len(parsed) == len(old.raw):
            known = {id(e): i for i, e in enumerate(parsed)}
        blobs: list[Blob] = []
        counts: list[int] = []
        origins: list[int] = []
        same = 0  # entries at the head that are the very entries they were
        kept: set[int] = set()
        for j, entry in enumerate(new):
            i = known.get(id(entry))
            if i is not None:
                kept.add(i)
            blobs.append(old.raw[i] if i is not None else entry_json(entry))
            counts.append(old.tokens[i] if i is not None else self._count(entry))
            if i is not None:
                origins.append(old.origins[i])
            elif len(new) == len(old.raw):
                origins.append(old.origins[j])  # rewritten in place (tool output cut short)
            else:
                origins.append(-1)  # a summary of several entries
            if i == j == same:
                same += 1
        shown = [not is_empty_ai(e) for e in new]
        stamps = [e.timestamp for e in new]
        self._install(blobs, counts, shown, stamps, origins=origins, entries=new)
        self._leave(old, [i for i in range(len(old.raw)) if i not in kept])
        if -1 in origins:
            self._compressed_upto = len(self._transcript)
        self._touched(same)

    def cut_point(self, seq: int) -> int | None:
        """Where the working view stops deriving from transcript entries before ``seq``: the
        first entry that comes from ``seq`` or later. ``None`` when the view cannot be cut
        there (a summary may hold what came from ``seq`` on)."""
        if self._compressed_upto > seq:
            return None
        for index, origin in enumerate(self._view.origins):
            if origin >= seq:
                return index
        return len(self._view.origins)

    def truncate(self, index: int) -> None:
        """Drop the working view from ``index`` on (a fork); the transcript keeps them."""
        old = self._view
        if index >= len(old.raw):
            return
        change = Change(removed=tuple(zip(old.keys[index:], old.raw[index:], strict=True)))
        self._view = _View(
            old.raw[:index],
            old.tokens[:index],
            old.keys[:index],
            old.shown[:index],
            old.stamps[:index],
            old.curated_tokens[:index],
            old.origins[:index],
            old.blocks[:index],
        )
        self._layout += 1
        self._curated_len = sum(self._view.shown)
        self._total = sum(self._view.curated_tokens)
        self._touched(index)
        self.journal.record(change)

    def reinstate(self, seqs: Sequence[int]) -> None:
        """Make the working view the transcript's entries ``seqs``, as they were appended
        (a fork into history that a compression summarized: start again from the source)."""
        back = set(seqs)
        self._leaving = [s for s in self._leaving if s not in back]
        blobs = [unpack(self._transcript[s]) for s in seqs]
        entries = [entry_from_json(b) for b in blobs]
        self._install(
            blobs,
            [self._count(e) for e in entries],
            [not is_empty_ai(e) for e in entries],
            [e.timestamp for e in entries],
            origins=list(seqs),
            entries=entries,
        )
        self._compressed_upto = 0
        self._touched(0)

    def recalculate_total_tokens(self) -> None:
        """REQ-HD-003.6: recount every entry (after a tokenizer change, or to verify the cache)."""
        view = self._view
        entries = list(self.raw)
        self._install(
            list(view.raw),
            [self._count(e) for e in entries],
            list(view.shown),
            list(view.stamps),
            list(view.keys),
            list(view.origins),
            entries=entries,
        )

    def clear(self) -> None:
        """Empty the working view. The transcript keeps everything: nothing is ever lost."""
        old = self._view
        self._leave(old, range(len(old.raw)))
        self._install([], [], [], [], origins=[], entries=[])
        self._compressed_upto = 0
        self._touched(0)

    def _install(
        self,
        blobs: list[Blob],
        counts: list[int],
        shown: list[bool],
        stamps: list[int | None],
        keys: list[int] | None = None,
        origins: list[int] | None = None,
        *,
        entries: Sequence[IContent],
    ) -> None:
        """Install a whole new working view (with new keys, unless it brings its own);
        ``entries`` are the blobs parsed, for what is kept beside each."""
        if keys is None:
            keys = list(range(self._next_key, self._next_key + len(blobs)))
            self._next_key += len(blobs)
        elif len(keys) != len(blobs) or any(a >= b for a, b in pairwise(keys)):
            raise ValueError("keys must increase along the history, one per entry")
        else:
            self._next_key = max(self._next_key, keys[-1] + 1 if keys else 0)
        if not len(blobs) == len(counts) == len(shown) == len(stamps):
            raise ValueError("one count, flag and timestamp per entry")
        curated = [c if s else 0 for c, s in zip(counts, shown, strict=True)]
        if origins is None or len(origins) != len(blobs):
            raise ValueError("one origin per entry")
        if len(entries) != len(blobs):
            raise ValueError("one parsed entry per entry")
        blocks = [_shown_blocks(e) for e in entries]
        self._view = _View(blobs, counts, keys, shown, stamps, curated, origins, blocks)
        self._layout += 1
        self._curated_len = sum(shown)
        self._total = sum(curated)
        self.journal.reset()

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
        # An entry stored as a reference to the transcript is the very transcript object; an
        # edited or made one is not, and where it came from was not kept.
        seq_of = {id(b): seq for seq, b in enumerate(transcript)}
        origins = [seq_of.get(id(b), -1) for b in raw]
        self._install(
            list(raw),
            list(counts),
            shown,
            stamps,
            None if keys is None else list(keys),
            origins,
            entries=entries,
        )
        self._transcript = list(transcript)
        held = set(origins)
        self._leaving = [
            seq for seq, b in enumerate(self._transcript) if seq not in held and len(b) >= PACK_MIN
        ]
        self._compressed_upto = len(self._transcript) if -1 in origins else 0
        self._changed_from = None

    def snapshot(self) -> HistorySnapshot:
        """The history as it is, for ``restore_snapshot``: references and lengths, O(1)."""
        return HistorySnapshot(
            self._view,
            len(self._view.raw),
            self._transcript,
            len(self._transcript),
            (
                self._curated_len,
                self._total,
                self._next_key,
                self._changed_from,
                self._compressed_upto,
            ),
            len(self._leaving),
        )

    def restore_snapshot(self, snap: HistorySnapshot) -> None:
        """Put the history back as it was at ``snap`` (readers of the journal start again)."""
        view = snap.view
        for values in (
            view.raw,
            view.tokens,
            view.keys,
            view.shown,
            view.stamps,
            view.curated_tokens,
            view.origins,
            view.blocks,
        ):
            del values[snap.length :]
        del snap.transcript[snap.transcript_length :]
        del self._leaving[snap.leaving_length :]  # (nothing is packed while a change runs)
        self._view = view
        self._layout += 1
        self._transcript = snap.transcript
        (
            self._curated_len,
            self._total,
            self._next_key,
            self._changed_from,
            self._compressed_upto,
        ) = snap.totals
        self.journal.reset()


def _shown_blocks(entry: IContent) -> int:
    """The content blocks a provider counts of ``entry`` in the curated view (each text, tool
    call, tool result, thinking, media and code block; none for an entry left out)."""
    return 0 if is_empty_ai(entry) else len(entry.blocks)
