"""The density edits a compaction applies, as one result for the history to take in.

What they change is read off the history as it stands (``edits.result_of``), with two things
that go with it: what the masking edits among them take out, counted before they apply (the
session's running figures), and, for a model whose thinking is bound to what came before it,
the thinking after the first edited entry, taken out of the entries that stay
(``history/thinking.py``, rule 2).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..content import IContent
from ..history.history import History
from ..history.thinking import unbound
from .edits import Edit, result_of
from .masking import masked_weight
from .types import DensityResult


def entry_at(view: History, key: int) -> IContent:
    """The entry of the working view with this key (an edit names entries by key)."""
    index = view.position(key)
    if index is None:
        raise RuntimeError("a density edit names an entry the history does not hold")
    return view.raw[index]


def applied_result(
    edits: Sequence[Edit], view: History, bound: bool
) -> tuple[DensityResult, int, int]:
    """``edits`` as one result for ``view``, the model's thinking ``bound`` or not; and the
    tool outputs masking among them makes pointers, with the tokens that takes out."""

    def entry(key: int) -> IContent:
        return entry_at(view, key)

    masked, masked_tokens = masked_weight(edits, entry, view.count)
    result = result_of(edits, view.position, entry)
    if not result.is_empty and bound:
        # The thinking after the first edited entry is bound to what the edits change.
        e = min((*result.removals, *result.replacements))
        stripped = unbound(view.raw_json, e, set(result.removals), result.replacements)
        result = DensityResult(result.removals, stripped, result.metadata)
    return result, masked, masked_tokens
