"""What each density edit would take out of the history, in tokens, counted once per edit.

The schedule weighs what an edit saves against what it costs, and an edit may wait for many
turns: counting its entries again at every compact would make a long wait a long cost. The
count of an edit is kept while the same edit is proposed, and forgotten when it is not.
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

    def forget(self) -> None:
        self._known = {}

    def candidates(
        self, edits: Sequence[Edit], history: History, entry_of: Callable[[int], IContent]
    ) -> list[Candidate]:
        """Each edit with the first working-view index it touches and what it saves."""
        known = self._known
        self._known = {}
        out: list[Candidate] = []
        for edit in edits:
            key = (edit.rule, tuple((b.key, b.block, b.new is None) for b in edit.blocks))
            cached = known.get(key)
            if cached is not None and cached[0] == edit:
                saving = cached[1]
            else:
                saving = 0
                for k, (_, new) in edited_entries([edit], entry_of).items():
                    index = history.position(k)
                    assert index is not None
                    kept = 0 if new is None or is_empty_ai(new) else history.count(new)
                    saving += history.curated_tokens_at(index) - kept
            self._known[key] = (edit, saving)
            start = min(p for k in edit.keys if (p := history.position(k)) is not None)
            out.append(Candidate(edit, start, saving))
        return out
