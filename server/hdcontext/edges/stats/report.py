"""A storage's calls, read beside whatever daemon holds it, into ``core.stats``' report.

A storage folder is read in SQLite's read-only mode without its lock, a database on a read-only
connection (``store.open_reader``), so a running daemon or proxy is neither blocked nor
changed. What can be wrong is said in one line
(``StatsError``): no folder there, a database that cannot be read, an unknown session, a price
override of the wrong shape (the user's, or a session's own ``cache.prices``, which a hand edit
may have broken).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...core.stats.calls import CallRow
from ...core.stats.costs import PriceOverrides, Report, build, checked_prices, page_json
from ..storage.location import Location
from ..storage.records import StoreError
from ..storage.store import open_reader

PRICES_KEY = "cache.prices"


class StatsError(ValueError):
    """Why a report cannot be made, in one line."""


@dataclass(frozen=True)
class Read:
    report: Report
    session_id: str | None
    """The session asked for, by its full id."""


def read(
    where: Location,
    *,
    prices: PriceOverrides | None = None,
    since: int | None = None,
    session: str | None = None,
) -> Read:
    """The report of ``where``'s calls since ``since`` (ms); of one session when ``session``
    names it (its id, or the start of only one id). ``prices``: the user's, checked."""
    try:
        with open_reader(where) as db:
            stored = [s.session_id for s in db.sessions()]
            found = None if session is None else _one(stored, session, where)
            rows = db.calls(found)
            overrides = db.overrides()
    except StoreError as exc:
        raise StatsError(str(exc)) from None
    only = None if found is None else [found]
    return Read(of_rows(rows, overrides, stored, prices=prices, since=since, only=only), found)


def of_rows(
    rows: Sequence[CallRow],
    overrides: Mapping[str, Mapping[str, object]],
    stored: Sequence[str],
    *,
    prices: PriceOverrides | None = None,
    since: int | None = None,
    only: Sequence[str] | None = None,
) -> Report:
    """The report of rows already read (``rows``: of the sessions ``only`` names, or of all),
    each session priced by the user's ``prices`` over its own ``cache.prices`` (``overrides``).
    ``stored``: every stored session's id, to count those with no call kept."""
    own: dict[str, PriceOverrides] = {}
    for sid, values in overrides.items():
        if only is not None and sid not in only:
            continue
        value = values.get(PRICES_KEY)
        if value is not None:
            try:
                own[sid] = checked_prices(value, f"session {sid}'s setting {PRICES_KEY}")
            except ValueError as exc:
                raise StatsError(str(exc)) from None
    return build(
        rows,
        prices=prices or {},
        session_prices=own,
        since=since,
        stored_sessions=stored if only is None else (),
    )


def _one(stored: list[str], asked: str, where: Location) -> str:
    if asked in stored:
        return asked
    starting = [sid for sid in stored if sid.startswith(asked)]
    if len(starting) == 1:
        return starting[0]
    if starting:
        raise StatsError(
            f"{len(starting)} sessions in {where} start with {asked!r}: give more of the id"
        )
    raise StatsError(f"no session {asked!r} in {where}")


def page_figures(
    where: Location,
    *,
    prices: PriceOverrides | None = None,
    since: int | None = None,
    since_label: str | None = None,
) -> dict[str, Any]:
    """What the page shows of ``where`` (``core.stats.page_json``), and the requests the
    proxy did not carry (``uncarried``)."""
    report = read(where, prices=prices, since=since).report
    figures = page_json(report, where.shown, since_label, time.time_ns() // 1_000_000)
    figures["passed"] = uncarried(where, since)
    return figures


_OUTCOMES = (
    ("as sent", "asSent", "reasons"),
    ("not forwarded", "notForwarded", "notForwardedReasons"),
    ("passed through", "passedThrough", "passedThroughReasons"),
)


def uncarried(where: Location, since: int | None = None) -> dict[str, Any]:
    """The requests the proxy did not carry since ``since`` (ms; its ``passed`` table), by
    outcome and reason, most first, in the shape of the running proxy's own figures
    (``ProxyState.forwarded_as_sent``)."""
    try:
        with open_reader(where) as db:
            rows = db.passed(since)
    except StoreError as exc:
        raise StatsError(str(exc)) from None
    figures: dict[str, Any] = {}
    for outcome, total, reasons in _OUTCOMES:
        counted: dict[str, int] = {}
        for row in rows:
            if row.outcome == outcome:
                why = f"{row.api} {row.reason}" if outcome == "as sent" else row.reason
                counted[why] = counted.get(why, 0) + row.requests
        figures[total] = sum(counted.values())
        figures[reasons] = [
            {"why": why, "requests": n}
            for why, n in sorted(counted.items(), key=lambda item: (-item[1], item[0]))
        ]
    return figures
