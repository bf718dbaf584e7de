"""What each density edit would take out of the history, in tokens, counted once per edit.

The schedule weighs what an edit saves against what it costs, and an edit may wait for many
turns: counting its entries again at every compact would make a long wait a long cost. The
count of an edit is kept while the same edit is proposed, and forgotten when it is not. While
the history has only grown since (``History.layout``), a waiting edit's candidate is the very
one of the last compaction: its entries kept their indices and counts, so nothing of it is
looked up again, and a compaction's work follows what is new.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..content import IContent, is_empty_ai
from ..density.edits import Edit, edited_entries
from ..history import History
from .schedule import Candidate


class Savings:
    def __init__(self) -> None:
        self._known: dict[object, tuple[Edit, int]] = {}
        self._history: History | None = None
        self._layout = -1  # the history's layout when the candidates in _shapes were made
        self._shapes: dict[int, tuple[Edit, object, Candidate]] = {}
        """``id(edit)`` -> the edit, its key in ``_known`` and its last candidate: a pass
        hands the same edit object again while it waits (``edits.Replacements``), and its
        key and candidate are then not made again. The edit is held, so its id names no
        other object meanwhile."""

    def forget(self) -> None:
        self._known = {}
        self._shapes = {}
        self._history = None

    def candidates(
        self, edits: Sequence[Edit], history: History, entry_of: Callable[[int], IContent]
    ) -> list[Candidate]:
        """Each edit with the first working-view index it touches and what it saves."""
        known = self._known
        shapes = self._shapes
        grown = self._history is history and self._layout == history.layout
        self._history, self._layout = history, history.layout
        self._known = {}
        self._shapes = {}
        position = history.position
        out: list[Candidate] = []
        for edit in edits:
            shape = shapes.get(id(edit))
            if shape is None or shape[0] is not edit or id(edit) in self._shapes:
                shape = None  # an edit listed twice gets a candidate of its own each time
                key: object = (
                    edit.rule,
                    tuple((b.key, b.block, b.new is None) for b in edit.blocks),
                )
            elif grown:  # the same edit, its entries where they were: the same candidate
                self._known[shape[1]] = (edit, shape[2].saving)
                self._shapes[id(edit)] = shape
                out.append(shape[2])
                continue
            else:
                key = shape[1]
            cached = known.get(key)
            if cached is not None and (cached[0] is edit or cached[0] == edit):
                saving = cached[1]
            else:
                saving = 0
                for k, (_, new) in edited_entries([edit], entry_of).items():
                    index = position(k)
                    assert index is not None
                    kept = 0 if new is None or is_empty_ai(new) else history.count(new)
                    saving += history.curated_tokens_at(index) - kept
            self._known[key] = (edit, saving)
            # The view's keys increase with its indices: the smallest key's index, when the
            # view holds it, is the smallest index.
            start = position(edit.first_key)
            if start is None:
                start = min(p for k in edit.keys if (p := position(k)) is not None)
            if shape is not None and shape[2].start == start and shape[2].saving == saving:
                candidate = shape[2]
            else:
                candidate = Candidate(edit, start, saving)
            self._shapes[id(edit)] = (edit, key, candidate)
            out.append(candidate)
        return out
