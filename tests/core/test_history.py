"""History (REQ-HD-003): views, token cache, apply_density_result and its invariants."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from hdcontext.core.content import IContent, parse_entries
from hdcontext.core.density.types import DensityResult
from hdcontext.core.history.history import DensityApplyError, History
from hdcontext.core.tokens import count_entry


def entries(*texts: str, speaker: str = "human") -> list[IContent]:
    return parse_entries(
        [{"speaker": speaker, "blocks": [{"type": "text", "text": t}]} for t in texts]
    )


class CountingCounter:
    """The real counter, plus a record of what it was asked to count."""

    def __init__(self) -> None:
        self.seen: list[IContent] = []

    def __call__(self, entry: IContent) -> int:
        self.seen.append(entry)
        return count_entry(entry)


def texts(history: Sequence[IContent]) -> list[Any]:
    return [e.blocks[0].text if e.blocks else None for e in history]  # type: ignore[union-attr]


async def test_appended_entries_are_counted_once_and_totals_are_sums() -> None:
    counter = CountingCounter()
    h = History(counter)
    first = entries("a " * 50, "b " * 10)
    h.append(first)
    second = entries("c " * 20)
    h.append(second)
    assert counter.seen == [*first, *second]
    assert list(h.tokens) == [count_entry(e) for e in [*first, *second]]
    assert h.total_tokens == sum(h.tokens)


async def test_curated_view_leaves_out_empty_ai_entries_and_their_tokens() -> None:
    h = History()
    items = [*entries("q"), *entries("  ", speaker="ai"), *entries("answer", speaker="ai")]
    h.append(items)
    assert h.curated() == [items[0], items[2]]
    assert h.curated_count == 2
    assert h.total_tokens == count_entry(items[0]) + count_entry(items[2])
    assert len(h.raw) == 3


async def test_req_hd_003_2_and_003_3_replacements_then_removals_highest_first() -> None:
    h = History()
    h.append(entries("e0", "e1", "e2", "e3", "e4"))
    (new1,) = entries("new1")
    (new3,) = entries("new3")
    # Had removals gone first, index 3 would point at e4 by the time it was replaced.
    h.apply_density_result(DensityResult(removals=(0, 2), replacements={1: new1, 3: new3}))
    assert texts(h.raw) == ["new1", "new3", "e4"]
    assert list(h.tokens) == [count_entry(e) for e in h.raw]
    assert h.total_tokens == sum(h.tokens)


async def test_only_replaced_entries_are_recounted() -> None:
    counter = CountingCounter()
    h = History(counter)
    h.append(entries("e0", "e1", "e2"))
    counter.seen.clear()
    (new,) = entries("new")
    h.apply_density_result(DensityResult(removals=(0,), replacements={2: new}))
    assert counter.seen == [new]


@pytest.mark.parametrize(
    ("result", "message"),
    [
        (DensityResult(removals=(1,), replacements={1: entries("x")[0]}), "REQ-HD-001.6"),
        (DensityResult(removals=(3,)), "REQ-HD-001.7"),
        (DensityResult(removals=(-1,)), "REQ-HD-001.7"),
        (DensityResult(replacements={7: entries("x")[0]}), "REQ-HD-001.7"),
    ],
)
async def test_req_hd_001_6_and_001_7_invalid_results_throw_and_change_nothing(
    result: DensityResult, message: str
) -> None:
    h = History()
    h.append(entries("e0", "e1", "e2"))
    before = (list(h.raw), list(h.tokens), h.total_tokens)
    with pytest.raises(DensityApplyError, match=message):
        h.apply_density_result(result)
    assert (list(h.raw), list(h.tokens), h.total_tokens) == before


async def test_transcript_is_never_pruned_or_cleared() -> None:
    h = History()
    items = entries("e0", "e1", "e2")
    h.append(items)
    h.apply_density_result(DensityResult(removals=(0, 1)))
    h.replace_all(entries("summary"))
    h.clear()
    assert list(h.transcript) == items
    assert list(h.raw) == [] and h.total_tokens == 0


async def test_replace_all_reuses_counts_of_kept_entries() -> None:
    counter = CountingCounter()
    h = History(counter)
    items = entries("e0", "e1", "e2")
    h.append(items)
    counter.seen.clear()
    (summary,) = entries("summary")
    parsed = list(h.raw)  # as a compression strategy reads the history
    kept_json = h.raw_json[2]
    h.replace_all([summary, parsed[2]], parsed=parsed)
    assert counter.seen == [summary]
    assert h.total_tokens == count_entry(summary) + count_entry(items[2])
    assert h.raw_json[1] is kept_json  # the kept entry is not written again either
    assert list(h.raw) == [summary, items[2]]


async def test_req_hd_003_6_recalculate_recounts_every_entry() -> None:
    counter = CountingCounter()
    h = History(counter)
    items = entries("e0", "e1")
    h.append(items)
    counter.seen.clear()
    h.recalculate_total_tokens()
    assert counter.seen == items


async def test_concurrent_appends_and_edits_keep_counts_consistent() -> None:
    h = History()
    h.append(entries(*(f"seed {i}" for i in range(10))))

    async def add(i: int) -> None:
        h.append(entries(f"more {i} " * 30))

    async def prune() -> None:
        h.apply_density_result(DensityResult(removals=(0,)))

    await asyncio.gather(*(add(i) for i in range(10)), prune(), prune())
    assert len(h.raw) == 18
    assert list(h.tokens) == [count_entry(e) for e in h.raw]
    assert h.total_tokens == sum(h.tokens)
    assert len(h.transcript) == 20
