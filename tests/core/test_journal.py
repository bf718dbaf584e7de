"""The history's keys and journal: what readers that keep state between turns rely on."""

from __future__ import annotations

from hdcontext.core.content import IContent, entry_json, text_entry
from hdcontext.core.density.types import DensityResult
from hdcontext.core.history.history import History
from hdcontext.core.history.journal import Change, Journal


def texts(*words: str) -> list[IContent]:
    return [text_entry("human", w) for w in words]


async def test_keys_increase_and_edits_keep_them() -> None:
    h = History(lambda e: 1)
    a, b, c, d = texts("a", "b", "c", "d")
    h.append([a, b, c])
    start = h.journal.revision
    h.append([d])
    assert list(h.keys) == sorted(h.keys) and len(set(h.keys)) == 4
    key_b, key_c, key_d = h.keys[1], h.keys[2], h.keys[3]
    new_c = text_entry("human", "C")
    h.apply_density_result(DensityResult(removals=(1,), replacements={2: new_c}))
    assert list(h.keys) == [h.keys[0], key_c, key_d]
    assert h.position(key_b) is None and h.position(key_c) == 1
    changes = h.journal.since(start)
    assert changes is not None
    b_, c_, d_, new_c_ = (entry_json(e) for e in (b, c, d, new_c))
    assert changes[0] == Change(added=((key_d, d_),))
    assert changes[1] == Change(removed=((key_b, b_), (key_c, c_)), added=((key_c, new_c_),))


async def test_wholesale_changes_leave_readers_to_rebuild() -> None:
    h = History(lambda e: 1)
    h.append(texts("a", "b"))
    seen = h.journal.revision
    h.replace_all(list(h.raw))
    assert h.journal.since(seen) is None
    assert h.journal.since(h.journal.revision) == []
    keys = list(h.keys)
    h.restore(list(h.raw_json), list(h.tokens), [], keys=keys)
    assert list(h.keys) == keys
    h.append(texts("c"))
    assert h.keys[-1] > keys[-1]


def test_the_journal_forgets_old_and_large_changes() -> None:
    journal = Journal(max_changes=3, max_entries=4)
    big = Change(added=tuple((k, entry_json(text_entry("ai", "x"))) for k in range(10)))
    journal.record(big)
    assert journal.since(0) == [big]  # the last change is always kept
    small = Change(added=((10, entry_json(text_entry("ai", "y"))),))
    journal.record(small)
    assert journal.since(0) is None and journal.since(1) == [small]
    for _ in range(3):
        journal.record(small)
    assert journal.since(1) is None and journal.since(2) == [small] * 3
