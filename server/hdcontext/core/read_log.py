"""The earliest read of each file in a history, kept across turns.

Before each compaction the daemon settles the files the history read (``tools.read_times``):
any of them modified after its earliest read was written since. Walking the whole history for
that after every turn costs the session; this log keeps, per file, the timestamps of the reads
of it, and catches up through the history's journal (``journal.py``) by the entries that
changed. Its answer is ``tools.read_times`` of the same history (the tests hold them equal).
"""

from __future__ import annotations

from collections import Counter

from .content import IContent, entry_from_json
from .journal import KeyedHistory
from .tools import entry_reads


class ReadLog:
    def __init__(self) -> None:
        self._params: tuple[frozenset[str], str] | None = None
        self._journal: object = None  # of the history it follows
        self._revision = -1
        self._reads: dict[int, tuple[int, tuple[str, ...]]] = {}  # entry key -> stamp, files
        self._stamps: dict[str, Counter[int]] = {}
        self._earliest: dict[str, int] = {}

    def read_times(
        self, history: KeyedHistory, read_tools: frozenset[str], workspace_root: str
    ) -> dict[str, int]:
        """Each file the history read (resolved), with the earliest timestamp of a read of it."""
        params = (read_tools, workspace_root)
        journal = history.journal
        same = params == self._params and journal is self._journal
        changes = journal.since(self._revision) if same else None
        if changes is None:
            self._params = params
            self._reads, self._stamps, self._earliest = {}, {}, {}
            for key, entry in zip(history.keys, history.raw, strict=True):
                self._add(key, entry)
        else:
            for change in changes:
                for key, _ in change.removed:
                    self._remove(key)
                for key, blob in change.added:
                    self._add(key, entry_from_json(blob))
        self._journal = journal
        self._revision = journal.revision
        return dict(self._earliest)

    def _add(self, key: int, entry: IContent) -> None:
        stamp = entry.timestamp
        if stamp is None or self._params is None:
            return
        files = tuple(entry_reads(entry, *self._params))
        if not files:
            return
        self._reads[key] = (stamp, files)
        for path in files:
            self._stamps.setdefault(path, Counter())[stamp] += 1
            if stamp < self._earliest.get(path, stamp + 1):
                self._earliest[path] = stamp

    def _remove(self, key: int) -> None:
        found = self._reads.pop(key, None)
        if found is None:
            return
        stamp, files = found
        for path in files:
            stamps = self._stamps[path]
            stamps[stamp] -= 1
            if stamps[stamp] == 0:
                del stamps[stamp]
            if not stamps:
                del self._stamps[path]
                del self._earliest[path]
            elif stamp == self._earliest[path] and stamp not in stamps:
                self._earliest[path] = min(stamps)
