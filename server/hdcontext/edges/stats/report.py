"""A storage folder's calls, read beside whatever daemon holds it, into ``core.stats``' report.

The folder is read in SQLite's read-only mode without its lock (``store.ReadOnly``), so a
running daemon or proxy is neither blocked nor changed. What can be wrong is said in one line
(``StatsError``): no folder there, a database that cannot be read, an unknown session, a price
override of the wrong shape (the user's, or a session's own ``cache.prices``, which a hand edit
may have broken).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.stats import PriceOverrides, Report, build, checked_prices, page_json
from ..storage.store import ReadOnly, StoreError

PRICES_KEY = "cache.prices"


class StatsError(ValueError):
    """Why a report cannot be made, in one line."""


@dataclass(frozen=True)
class Read:
    report: Report
    session_id: str | None
    """The session asked for, by its full id."""


def read(
    folder: Path,
    *,
    prices: PriceOverrides | None = None,
    since: int | None = None,
    session: str | None = None,
) -> Read:
    """The report of ``folder``'s calls since ``since`` (ms); of one session when ``session``
    names it (its id, or the start of only one id). ``prices``: the user's, checked."""
    try:
        with ReadOnly(folder) as db:
            stored = [s.session_id for s in db.sessions()]
            found = None if session is None else _one(stored, session, folder)
            rows = db.calls(found)
            overrides = db.overrides()
    except StoreError as exc:
        raise StatsError(str(exc)) from None
    own: dict[str, PriceOverrides] = {}
    for sid, values in overrides.items():
        if found is not None and sid != found:
            continue
        value = values.get(PRICES_KEY)
        if value is not None:
            try:
                own[sid] = checked_prices(value, f"session {sid}'s setting {PRICES_KEY}")
            except ValueError as exc:
                raise StatsError(str(exc)) from None
    report = build(
        rows,
        prices=prices or {},
        session_prices=own,
        since=since,
        stored_sessions=stored if found is None else (),
    )
    return Read(report, found)


def _one(stored: list[str], asked: str, folder: Path) -> str:
    if asked in stored:
        return asked
    starting = [sid for sid in stored if sid.startswith(asked)]
    if len(starting) == 1:
        return starting[0]
    if starting:
        raise StatsError(
            f"{len(starting)} sessions in {folder} start with {asked!r}: give more of the id"
        )
    raise StatsError(f"no session {asked!r} in {folder}")


def page_figures(
    folder: Path,
    *,
    prices: PriceOverrides | None = None,
    since: int | None = None,
    since_label: str | None = None,
) -> dict[str, Any]:
    """What the page shows of ``folder`` (``core.stats.page_json``)."""
    report = read(folder, prices=prices, since=since).report
    return page_json(report, str(folder), since_label, time.time_ns() // 1_000_000)
