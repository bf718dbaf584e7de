"""What changed in a working history since a reader last looked.

The density index and the read log keep what they learnt about a history between turns, so
that a turn costs what it adds, not what the session holds. For that they must be told which
entries left the history and which joined it, and where each one sits. Positions are no good
for that (a removal shifts every later one), so every entry of the working view carries a
*key*: an integer given when it joins, increasing along the history, and kept by an edited
entry that takes its place. The journal records each change as the keyed entries that left
and joined; a reader remembers the revision it has seen and asks for what came after.

The journal is short on purpose: it forgets old changes (and every change on a wholesale
replacement), and a reader it cannot answer rebuilds what it knows from the history itself.
That keeps the journal from holding entries alive for a reader that never comes back: it
keeps the last change, and older ones only while they name few entries (a session loaded in
one large append is not held twice).
Pure bookkeeping: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ..content import IContent
from .stored import Blob

KeyedEntry = tuple[int, Blob]
"""An entry's key and its stored JSON (``stored.py``): a reader parses what it needs
(``stored.parse``: an entry that left the view may be packed)."""


@dataclass(frozen=True, slots=True)
class Change:
    """One edit of the working view: entries that left it, then entries that joined it.

    An entry replaced in place appears in both, under the same key.
    """

    removed: tuple[KeyedEntry, ...] = ()
    added: tuple[KeyedEntry, ...] = ()


class Journal:
    """The recent changes of one history, by revision (one revision per change)."""

    def __init__(self, max_changes: int = 64, max_entries: int = 1024) -> None:
        self._max_changes = max_changes
        self._max_entries = max_entries
        self._base = 0  # revision before the first change kept
        self._changes: list[Change] = []
        self._entries = 0  # entries the kept changes name

    @property
    def revision(self) -> int:
        return self._base + len(self._changes)

    def record(self, change: Change) -> None:
        self._changes.append(change)
        self._entries += _size(change)
        while len(self._changes) > 1 and (
            len(self._changes) > self._max_changes or self._entries > self._max_entries
        ):
            self._entries -= _size(self._changes.pop(0))
            self._base += 1

    def swap(self, blobs: Mapping[int, Blob]) -> None:
        """Hold, in place of each kept entry whose ``id`` is a key of ``blobs``, the blob it
        maps to: the same entry packed (``History.pack_left``), so that the journal does not
        keep alive, for a reader that may never come, the JSON the history let go of."""
        if not blobs:
            return

        def swapped(entries: tuple[KeyedEntry, ...]) -> tuple[KeyedEntry, ...]:
            return tuple((key, blobs.get(id(blob), blob)) for key, blob in entries)

        self._changes = [Change(swapped(c.removed), swapped(c.added)) for c in self._changes]

    def reset(self) -> None:
        """The history was replaced wholesale: no reader can catch up by changes."""
        self._base = self.revision + 1
        self._changes = []
        self._entries = 0

    def since(self, revision: int) -> Sequence[Change] | None:
        """The changes after ``revision``, or ``None`` when they are no longer known."""
        if revision < self._base or revision > self.revision:
            return None
        return self._changes[revision - self._base :]


def _size(change: Change) -> int:
    return len(change.removed) + len(change.added)


class Journaled(Protocol):
    """The revision log of a history (``Journal`` above)."""

    @property
    def revision(self) -> int: ...

    def since(self, revision: int) -> Sequence[Change] | None: ...


class KeyedHistory(Protocol):
    """What a reader of the journal reads of a history (``history.History``)."""

    @property
    def raw(self) -> Sequence[IContent]: ...

    @property
    def keys(self) -> Sequence[int]: ...

    @property
    def timestamps(self) -> Sequence[int | None]: ...

    @property
    def journal(self) -> Journaled: ...

    def position(self, key: int) -> int | None: ...
