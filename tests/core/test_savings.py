"""What each waiting edit saves (``cache/savings.py``), and the history's ``layout`` it leans on.

An edit may wait for many turns; while the history only grows, its candidate (where it starts,
what it saves) is the one of the last compaction, looked up nowhere again: a compaction's work
follows what is new. Any other change of the history (an applied edit, a truncation, a
rollback) makes every candidate be made again, at the indices the entries have now.
"""

from __future__ import annotations

from collections.abc import Callable

from hdcontext.core.cache.savings import Savings
from hdcontext.core.content import IContent
from hdcontext.core.density.edits import Edit, drop, result_of
from hdcontext.core.history.history import History

from .builders import ai_text, human


def _history(n: int) -> History:
    history = History()
    history.append(
        [
            human(f"question {i} " * 30) if i % 2 == 0 else ai_text(f"answer {i} " * 30)
            for i in range(n)
        ]
    )
    return history


def _entry_of(history: History) -> Callable[[int], IContent]:
    def entry(key: int) -> IContent:
        index = history.position(key)
        assert index is not None
        return history.raw[index]

    return entry


def _counting_positions(history: History) -> list[int]:
    """Counts the history's ``position`` look-ups from now on."""
    asked: list[int] = []
    look_up = history.position

    def position(key: int) -> int | None:
        asked.append(key)
        return look_up(key)

    history.position = position  # type: ignore[method-assign]
    return asked


def test_layout_stays_through_appends_and_changes_with_anything_else() -> None:
    history = _history(6)
    before = history.layout
    history.append([human("more")])
    assert history.layout == before, "an append keeps every entry where it was"
    snap = history.snapshot()
    history.append([human("and more")])
    history.restore_snapshot(snap)
    assert history.layout != before, "a rollback"
    rolled = history.layout
    history.truncate(5)
    assert history.layout != rolled, "a truncation"
    truncated = history.layout
    history.apply_density_result(
        result_of([drop("recency", [(history.keys[1], 0)])], history.position, _entry_of(history))
    )
    assert history.layout != truncated, "an applied edit"
    applied = history.layout
    history.recalculate_total_tokens()
    assert history.layout != applied, (
        "a whole view installed again (a recount, a reload, compression)"
    )


def test_a_waiting_edit_keeps_its_candidate_while_the_history_only_grows() -> None:
    history = _history(8)
    savings = Savings()
    edits: list[Edit] = [drop("recency", [(history.keys[i], 0)]) for i in (1, 3, 5)]
    first = savings.candidates(edits, history, _entry_of(history))
    history.append([human("a new question"), ai_text("a new answer")])
    asked = _counting_positions(history)
    again = savings.candidates(edits, history, _entry_of(history))
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert asked == [], "nothing of a waiting edit is looked up again"
    assert [c.start for c in again] == [1, 3, 5]


def test_after_any_other_change_the_candidates_are_made_at_the_new_indices() -> None:
    history = _history(8)
    savings = Savings()
    waiting: list[Edit] = [drop("recency", [(history.keys[i], 0)]) for i in (3, 5)]
    first = savings.candidates(waiting, history, _entry_of(history))
    assert [c.start for c in first] == [3, 5]
    # Another edit applies: the entry at index 1 goes, and every later entry moves up one.
    history.apply_density_result(
        result_of([drop("recency", [(history.keys[1], 0)])], history.position, _entry_of(history))
    )
    again = savings.candidates(waiting, history, _entry_of(history))
    assert [c.start for c in again] == [2, 4]
    assert [c.saving for c in again] == [c.saving for c in first]


def test_another_history_is_never_taken_for_the_one_it_learnt() -> None:
    one, other = _history(8), _history(8)
    assert one.layout == other.layout
    savings = Savings()
    edit = drop("recency", [(one.keys[3], 0)])
    savings.candidates([edit], one, _entry_of(one))
    asked = _counting_positions(other)
    savings.candidates([edit], other, _entry_of(other))
    assert asked, "a history it has not seen is looked at"


def _counting_entries(history: History) -> tuple[Callable[[int], IContent], list[int]]:
    asked: list[int] = []
    entry = _entry_of(history)

    def counted(key: int) -> IContent:
        asked.append(key)
        return entry(key)

    return counted, asked


def test_an_edit_made_again_as_an_equal_object_saves_what_it_saved() -> None:
    """Its saving is the last call's (what an equal edit saves is looked up, not counted),
    though a call whose edits were all the last one's did not need that look-up."""
    history = _history(8)
    savings = Savings()
    keys = history.keys
    savings.candidates([drop("recency", [(keys[3], 0)])], history, _entry_of(history))
    savings.candidates([drop("recency", [(keys[3], 0)])], history, _entry_of(history))
    made_again = drop("recency", [(keys[3], 0)])
    entry_of, asked = _counting_entries(history)
    (candidate,) = savings.candidates([made_again], history, entry_of)
    assert asked == [], "its saving is not counted again"
    fresh = Savings().candidates([made_again], history, _entry_of(history))
    assert (candidate.start, candidate.saving) == (fresh[0].start, fresh[0].saving)


def test_an_edit_listed_twice_gets_a_candidate_of_its_own_each_time() -> None:
    history = _history(8)
    savings = Savings()
    edit = drop("recency", [(history.keys[3], 0)])
    for _ in range(2):
        one, two = savings.candidates([edit, edit], history, _entry_of(history))
        assert one is not two and one == two
