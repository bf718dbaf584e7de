"""What each density edit would take out of the history, in tokens, counted once per edit.

The schedule weighs what an edit saves against what it costs, and an edit may wait for many
turns: counting its entries again at every compact would make a long wait a long cost. The
count of an edit is kept while the same edit is proposed, and forgotten when it is not. While
the history has only grown since (``History.layout``), a waiting edit's candidate is the very
one of the last compaction: its entries kept their indices and counts, so nothing of it is
looked up again, and a compaction's work follows what is new: those are found in a few C
loops over the list, and only the others are looked at one by one.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import cast

from ..content import IContent, is_empty_ai
from ..density.edits import Edit, edited_entries
from ..history.history import History
from .schedule import Candidate


class Savings:
    def __init__(self) -> None:
        self._made: list[_Shape] = []
        """The last call's shapes, in its order: what ``_known`` is made of, when a call
        first needs it (one whose edits are all the last call's does not)."""
        self._known: dict[object, tuple[Edit, int]] | None = {}
        """Each of the last call's edits by its key (rule and blocks) -> the edit and what it
        saves: an edit made again as a new object, equal to one of them, saves the same."""
        self._history: History | None = None
        self._layout = -1  # the history's layout when the candidates in _shapes were made
        self._shapes: dict[int, _Shape] = {}
        """``id(edit)`` -> the edit, its key in ``_known`` and its last candidate: a pass
        hands the same edit object again while it waits (``edits.Replacements``), and its
        key and candidate are then not made again. The edit is held, so its id names no
        other object meanwhile."""

    def forget(self) -> None:
        self._made = []
        self._known = {}
        self._shapes = {}
        self._history = None

    def candidates(
        self, edits: Sequence[Edit], history: History, entry_of: Callable[[int], IContent]
    ) -> list[Candidate]:
        """Each edit with the first working-view index it touches and what it saves."""
        shapes = self._shapes
        grown = self._history is history and self._layout == history.layout
        self._history, self._layout = history, history.layout
        ids = list(map(id, edits))
        if len(set(ids)) == len(ids):
            got: list[_Shape | None] = list(map(shapes.get, ids))
            for i, shape in enumerate(got):
                edit = edits[i]
                if shape is None or shape[0] is not edit or not grown:
                    got[i] = self._shape(edit, shape, history, entry_of)
            made = cast(list[_Shape], got)
            self._shapes = dict(zip(ids, made, strict=True))
        else:  # an edit listed twice gets a candidate of its own each time
            made = []
            self._shapes = {}
            for edit in edits:
                shape = shapes.get(id(edit))
                again = id(edit) in self._shapes
                if shape is None or shape[0] is not edit or again or not grown:
                    shape = self._shape(edit, shape, history, entry_of, again)
                self._shapes[id(edit)] = shape
                made.append(shape)
        self._made = made
        self._known = None
        return list(map(_CANDIDATE, made))

    def _shape(
        self,
        edit: Edit,
        shape: _Shape | None,
        history: History,
        entry_of: Callable[[int], IContent],
        again: bool = False,
    ) -> _Shape:
        """The edit's key, saving and candidate, worked out; ``shape``: its last one, if it
        was proposed as this object last time (its key, and its candidate when it starts
        and saves the same, are kept). ``again``: a second listing of ``shape``'s edit,
        which gets a candidate of its own."""
        if shape is None or shape[0] is not edit or again:
            shape = None
            key: object = (edit.rule, tuple((b.key, b.block, b.new is None) for b in edit.blocks))
        else:
            key = shape[1]
        known = self._known
        if known is None:  # the last call's, made once a call asks
            known = self._known = {k: (e, c.saving) for e, k, c in self._made}
        position = history.position
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
        # The view's keys increase with its indices: the smallest key's index, when the
        # view holds it, is the smallest index.
        start = position(edit.first_key)
        if start is None:
            start = min(p for k in edit.keys if (p := position(k)) is not None)
        if shape is not None and shape[2].start == start and shape[2].saving == saving:
            return shape
        return (edit, key, Candidate(edit, start, saving))


_Shape = tuple[Edit, object, Candidate]
"""An edit, its key in ``Savings._known`` and its last candidate."""
_CANDIDATE = itemgetter(2)
