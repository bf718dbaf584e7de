"""The density edits that wait for the model's turn to end, whatever the schedule says.

``history/thinking.py``'s rule 1: while the model's latest message goes on calling tools, an
edit that touches it waits, and for a model whose thinking is bound to what comes before it,
so does an edit that starts before it. The schedule picks among the other candidates; the held
ones wait with those it leaves.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..history.history import History
from ..history.thinking import latest_turn
from .schedule import Candidate, Plan


def held(candidates: Sequence[Candidate], view: History, bound: bool) -> set[int]:
    """The candidates (by ``id``) that wait while the model's latest message goes on
    calling tools: those that touch it, and, when its thinking is ``bound`` to what comes
    before it, those that start before it (``history/thinking.py``)."""
    turn = latest_turn(view.raw_json)
    if turn is None or not turn.calls:
        return set()
    # ``thinking.waits`` read through the view's keys, which increase with its indices: an edit
    # touches the turn when it holds a key from the turn's first to its last, and starts
    # before it when it holds a key below the first. Only such keys are looked up.
    keys = view.keys
    first, last = keys[turn.start], keys[turn.stop - 1]
    before = bound and turn.thinks
    position = view.position
    found: set[int] = set()
    if not before:  # only an edit with a key at or past the turn's first may touch it
        candidates = [c for c in candidates if c.edit.last_key >= first]
    for c in candidates:
        for k in c.edit.keys:
            if (first <= k <= last or (before and k < first)) and position(k) is not None:
                found.add(id(c))
                break
    return found


def holding(
    candidates: Sequence[Candidate],
    view: History,
    bound: bool,
    choose: Callable[[Sequence[Candidate]], Plan],
) -> Plan:
    """The plan ``choose`` makes of the candidates not ``held``, the held ones waiting too."""
    waits = held(candidates, view, bound)
    ready = [c for c in candidates if id(c) not in waits] if waits else candidates
    chosen = choose(ready)
    if not waits:
        return chosen
    return Plan(chosen.apply, chosen.wait + tuple(c for c in candidates if id(c) in waits))
