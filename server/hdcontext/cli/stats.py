"""``hdcontext stats``: what the calls kept in a storage cost, with hdcontext and without.

By day (the default), by session (``--sessions``), by user or team of a LiteLLM gateway
(``--by user|team``: who each session's owner is, as LiteLLM authenticated them, is kept beside
the store, ``edges/stats/owners.py``) or call by call (``--session ID``), since a
day or for a while (``--since``), as a table (``rich``: aligned, readable at 80 columns; wider
terminals get more columns) or as JSON (``--json``), or as a page on loopback (``--serve``).
Like ccusage, but for any agent hdcontext serves, and with what only hdcontext can tell: what
the same calls would have cost without it (``core/stats/costs.py`` says how that is reckoned).

The storage is read without its lock (SQLite's read-only mode; a read-only connection to a
database), beside a running daemon or proxy. Bad input (no folder there, an unknown session, a
price override of the wrong shape, a ``--since`` that is no date) is one line on stderr, exit
2, and nothing changed.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.prices import PRICES_CHECKED
from ..core.stats.costs import (
    CallFigures,
    Figures,
    GroupFigures,
    PriceOverrides,
    Report,
    SessionFigures,
    checked_prices,
    grouped,
    header,
    local_time,
    session_json,
    sessions_by_last,
)
from ..edges.stats.owners import By, group_of, read_owners
from ..edges.stats.report import StatsError, read, uncarried
from ..edges.storage.folder import PRIVATE_UMASK
from ..edges.storage.location import Location
from .sessions import parse_duration
from .storage_option import add_storage_option, storage_of

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

# rich (the tables) and aiohttp (the page) are imported where they are used: every command
# builds this parser, ``hdcontext serve`` included, and the daemon an editor or a test starts
# would otherwise load both for nothing (0.3 s of its 2.3 s of CPU to start).
DEFAULT_PORT = 8788
"""The page's port (``edges/proxy/dashboard.py`` has the same; a test keeps them equal)."""

OK = 0
BAD_INPUT = 2
WIDE = 110
"""From this many columns on, the tables show the refresh calls, the masked outputs and the
saving's share in columns of their own (below it, in the lines under the table)."""
SESSION_COLUMNS = 24
"""What the session's id and its last use take more, in ``--sessions``' table."""

DESCRIPTION = (
    "What the model calls of a storage folder cost: as the provider billed them, and what "
    "the same calls would have cost without hdcontext (each call with what hdcontext took "
    "out put back, at the same model's prices). By day, by session or call by call; input "
    "tokens the agent sent and what went to the model, cache reads and writes, refresh "
    "calls, masked tool outputs and how many the model fetched back. Prices: the dated table "
    f"shipped with hdcontext (checked {PRICES_CHECKED}), under your own (--prices, or a "
    "session's cache.prices setting); a model the table does not know, or a session for "
    "which no usage was reported, is shown in tokens only."
)
EPILOG = f"""\
examples:
  hdcontext stats                       cost per day
  hdcontext stats --sessions --since 7d per session, the last 7 days
  hdcontext stats --session proxy-anth  one session call by call (an id, or its start)
  hdcontext stats --by team --storage-dir ~/.local/share/hdcontext/litellm
                                        a LiteLLM gateway's savings per team (or --by user)
  hdcontext stats --json                the same figures as JSON
  hdcontext stats --serve               the page with charts, on http://127.0.0.1:{DEFAULT_PORT}/

--prices FILE: a JSON object of model ids, each with any of input, output, cacheRead,
cacheWrite5m, cacheWrite1h (dollars per million tokens), as the cache.prices setting;
for a model the table lacks, give at least input, output, cacheRead and cacheWrite5m.

storage: --storage FOLDER|URL (or $HDCONTEXT_DATABASE_URL), default the daemon's and the
proxy's folder:
  {{default}}
read without its lock (SQLite read-only, or a read-only connection to the database), so it
works while a daemon or proxy runs.

exit status:
  {OK}  done
  {BAD_INPUT}  bad usage, no storage folder there, an unknown session, a price override
     of the wrong shape, a --since that is not a date or a duration"""


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    default: Path,
    formatter: type[argparse.HelpFormatter],
) -> None:
    """``hdcontext stats`` on the command line's subparsers; ``default`` is the storage
    folder when none is named."""
    stats = sub.add_parser(
        "stats",
        help="what the calls cost, as billed, and what they would have cost without hdcontext",
        description=DESCRIPTION,
        epilog=EPILOG.format(default=default),
        formatter_class=formatter,
    )
    add_storage_option(stats, f"the daemon's and the proxy's folder is {default}")
    view = stats.add_mutually_exclusive_group()
    view.add_argument("--sessions", action="store_true", help="one row per session")
    view.add_argument(
        "--session", metavar="ID", help="one session, call by call (its id, or the start of one)"
    )
    view.add_argument(
        "--by",
        choices=("user", "team"),
        help="one row per user or per team of a LiteLLM gateway (hdcontext.litellm): who "
        "owns each session, as LiteLLM authenticated them",
    )
    stats.add_argument(
        "--since",
        metavar="WHEN",
        help="only calls from then on: a day (2026-11-01 or 20261101, local time) or a "
        "duration back from now (7d, 12h, 2w)",
    )
    stats.add_argument("--json", action="store_true", help="print the figures as JSON")
    stats.add_argument(
        "--prices", type=Path, metavar="FILE", help="your prices, over the table's (see below)"
    )
    stats.add_argument(
        "--serve",
        action="store_true",
        help="serve the page (totals, cost per day, sessions, each call's input) on loopback "
        "until interrupted",
    )
    stats.add_argument(
        "--port",
        type=int,
        default=DEFAULT_PORT,
        help=f"the page's port with --serve (default: {DEFAULT_PORT}; 0 picks a free one)",
    )


def _say(message: str) -> None:
    print(f"hdcontext: {message}", file=sys.stderr)


_DAY = re.compile(r"(\d{4})-?(\d{2})-?(\d{2})")


def parse_since(text: str, now_ms: int) -> int | None:
    """``--since`` as ms since the epoch: the start of a local day, or a duration back from
    now; ``None`` if it is neither."""
    found = _DAY.fullmatch(text.strip())
    if found is not None:
        try:
            day = datetime(int(found.group(1)), int(found.group(2)), int(found.group(3)))
        except ValueError:
            return None
        return int(day.timestamp() * 1000)
    seconds = parse_duration(text)
    return None if seconds is None else now_ms - seconds * 1000


def _prices(path: Path | None) -> PriceOverrides:
    if path is None:
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise StatsError(f"--prices: cannot read {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise StatsError(f"--prices: {path} is not JSON: {exc}") from None
    try:
        return checked_prices(value, f"--prices {path}")
    except ValueError as exc:
        raise StatsError(str(exc)) from None


def main(args: argparse.Namespace, default_storage: Path) -> int:
    # A read-only reader may still make the database's -wal and -shm files: the user's alone.
    os.umask(PRIVATE_UMASK)
    where = storage_of(args.storage, default_storage)
    if isinstance(where, str):
        _say(where)
        return BAD_INPUT
    since = None
    if args.since is not None:
        since = parse_since(args.since, time.time_ns() // 1_000_000)
        if since is None:
            _say(
                f"--since: not a day or a duration: {args.since!r} (2026-11-01, 20261101, "
                "or 7d, 12h, 2w)"
            )
            return BAD_INPUT
    try:
        prices = _prices(args.prices)
        found = read(where, prices=prices, since=since, session=args.session)
        passed = uncarried(where, since) if args.session is None else None
    except StatsError as exc:
        _say(str(exc))
        return BAD_INPUT
    if args.serve:
        if args.json or args.sessions or args.session or args.by:
            _say(
                "--serve shows every session on its page: without --json, --sessions, "
                "--session, --by"
            )
            return BAD_INPUT
        from ..edges.proxy.dashboard import Dashboard, serve_page

        dashboard = Dashboard(where, lambda: prices, since, args.since)
        return serve_page(dashboard, args.port)
    report = found.report
    groups = _groups(report, where, args.by) if args.by else None
    if args.json:
        out = _as_json(report, where, args, found.session_id, groups)
        if passed is not None:
            out["notCarried"] = passed
        print(json.dumps(out, ensure_ascii=False))
        return OK
    from rich.console import Console

    console = Console(highlight=False, soft_wrap=False)
    if found.session_id is not None:
        _show_session(console, report, found.session_id, where)
    elif args.sessions:
        _show_sessions(console, report, where, args.since)
    elif groups is not None:
        _show_groups(console, report, groups, args.by, where, args.since)
    else:
        _show_days(console, report, where, args.since)
    for line in _uncarried_lines(passed or {}):
        console.print(line, style="dim")
    return OK


def _uncarried_lines(passed: dict[str, Any]) -> list[str]:
    """What the proxy did not carry (``report.uncarried``), a line an outcome, most first."""

    def reasons(key: str) -> str:
        listed = passed.get(key) or []
        shown = [f"{r['why']} ({r['requests']:,})" for r in listed[:8]]
        more = len(listed) - len(shown)
        return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")

    lines = []
    if passed.get("asSent"):
        lines.append(
            f"{_n(passed['asSent'], 'request')} went to the model as the agent sent them, "
            f"nothing taken out: {reasons('reasons')}."
        )
    if passed.get("notForwarded"):
        lines.append(
            f"{_n(passed['notForwarded'], 'request')} answered by the proxy and forwarded "
            f"nowhere: {reasons('notForwardedReasons')}."
        )
    if passed.get("passedThrough"):
        lines.append(
            f"{_n(passed['passedThrough'], 'request')} of no model call passed to the "
            f"provider as they came: {reasons('passedThroughReasons')}."
        )
    return lines


def _groups(report: Report, where: Location, by: By) -> list[GroupFigures]:
    """The report by user or team, each session's owner read from the folder's owners."""
    owners = read_owners(where.folder) if where.folder is not None else {}
    return grouped(report, lambda session_id: group_of(session_id, owners, by))


def _as_json(
    report: Report,
    where: Location,
    args: argparse.Namespace,
    session_id: str | None,
    groups: list[GroupFigures] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {**header(where.shown, args.since)}
    out["totals"] = report.totals.to_json()
    if session_id is not None:
        shown = report.sessions.get(session_id) or SessionFigures(session_id)
        out["session"] = session_json(shown, calls="objects")
    elif args.sessions:
        out["sessions"] = [session_json(s) for s in sessions_by_last(report)]
    elif groups is not None:
        out["by"] = args.by
        out["groups"] = [
            {args.by: g.name, "sessions": g.sessions, **g.figures.to_json()} for g in groups
        ]
    else:
        out["days"] = [{"day": day, **f.to_json()} for day, f in report.days.items()]
    out["sessionsWithoutRecords"] = report.without_records
    return out


# -- the tables ---------------------------------------------------------------------------------


def tokens(n: int) -> str:
    """A token count in a few characters: 812, 12.3k, 4.5M."""
    size = abs(n)
    if size >= 1e9:
        return f"{n / 1e9:.1f}B"
    if size >= 1e6:
        return f"{n / 1e6:.1f}M"
    if size >= 1e4:
        return f"{n / 1e3:.0f}k"
    if size >= 1e3:
        return f"{n / 1e3:.1f}k"
    return str(n)


def money(value: float | None) -> str:
    if value is None:
        return "–"
    if 0 < abs(value) < 0.005:
        return "<$0.01" if value > 0 else "-<$0.01"
    sign = "-" if value < 0 else ""
    return f"{sign}${abs(value):,.2f}"


def _share(f: Figures) -> str:
    ratio = f.ratio
    return "" if ratio is None else f"{(1 - ratio) * 100:.0f}%"


def _cost_cell(f: Figures) -> str:
    if not f.priced:
        return "–"
    return money(f.cost) + ("*" if f.estimated_calls else "")


def _table(first: str) -> Table:
    from rich import box
    from rich.table import Table

    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        pad_edge=False,
        padding=(0, 1),
        collapse_padding=True,
        header_style="bold",
        show_footer=True,
        footer_style="bold",
    )
    table.add_column(first, no_wrap=True, footer="Total")
    return table


def _figure_columns(table: Table, wide: bool, cache: bool = True) -> None:
    for name in ("Calls", "Agent", "Model", "Cache rd", "Cache wr", "Cost", "Without", "Saved"):
        if cache or not name.startswith("Cache"):
            table.add_column(name, justify="right", no_wrap=True)
    if wide:
        for name in ("%", "Refresh", "Masked", "Fetched"):
            table.add_column(name, justify="right", no_wrap=True)


def _figure_cells(f: Figures, wide: bool, cache: bool = True) -> list[str]:
    cells = [
        f"{f.calls:,}",
        tokens(f.agent),
        tokens(f.upstream),
        *((tokens(f.cache_read), tokens(f.cache_write)) if cache else ()),
        _cost_cell(f),
        money(f.without) if f.priced else "–",
        money(f.saved),
    ]
    if wide:
        refresh = f"{f.refresh_calls}" + (f" {money(f.refresh_cost)}" if f.refresh_calls else "")
        cells += [_share(f), refresh, f"{f.masked:,}", f"{f.fetched:,}"]
    return cells


def _footer(table: Table, totals: Figures, wide: bool, cache: bool = True) -> None:
    """The totals under the figure columns (the last ones of ``table``)."""
    cells = _figure_cells(totals, wide, cache)
    for column, cell in zip(table.columns[-len(cells) :], cells, strict=True):
        column.footer = cell


def _notes(console: Console, report: Report, wide: bool) -> None:
    """What the table's columns mean, and what it could not price."""
    t = report.totals
    lines = [
        "Agent: input tokens the agent sent; Model: what went to the model; Cache rd/wr: "
        "read from and written to the prompt cache, as billed. Cost: as billed, at the "
        "model's prices; Without: the same calls without hdcontext.",
    ]
    if t.priced:
        saved = t.saved or 0.0
        lines.append(
            f"Saved {money(saved)}: {_share(t)} of what the calls would have cost "
            f"({money(t.cost)} instead of {money(t.without)})."
            if saved >= 0
            else f"hdcontext cost {money(-saved)} more than sending everything would have."
        )
    if not wide:
        refresh = (
            f"{_n(t.refresh_calls, 'refresh call')} ({money(t.refresh_cost)}); "
            if t.refresh_calls
            else ""
        )
        lines.append(
            f"{refresh}{_n(t.masked, 'tool output')} masked, {t.fetched:,} fetched back by the "
            "model."
        )
    if t.estimated_calls:
        lines.append(
            f"* {_n(t.estimated_calls, 'call')} without reported usage: estimated from "
            f"hdcontext's own count (input only), {money(t.estimated_cost)}."
        )
    if t.unpriced_calls:
        reasons = "; ".join(sorted({why for _, why in t.unpriced}))
        lines.append(f"{_n(t.unpriced_calls, 'call')} in tokens only: {reasons}.")
    if report.without_records:
        lines.append(
            f"{_n(report.without_records, 'stored session')} without calls kept (served "
            "before hdcontext kept them)."
        )
    for line in lines:
        console.print(line, style="dim")


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}{'' if count == 1 else 's'}"


def _title(console: Console, what: str, where: Location, since: str | None) -> None:
    after = f" since {since}" if since else ""
    console.print(f"[bold]hdcontext stats[/bold]: {what}{after} · {where}")


def _show_days(console: Console, report: Report, where: Location, since: str | None) -> None:
    _title(console, "cost per day", where, since)
    if not report.days:
        console.print("no calls kept" + (f" since {since}" if since else ""))
        _notes(console, report, True)
        return
    wide = console.width >= WIDE
    table = _table("Date")
    _figure_columns(table, wide)
    for day, f in report.days.items():
        table.add_row(day, *_figure_cells(f, wide))
    _footer(table, report.totals, wide)
    console.print(table)
    _notes(console, report, wide)


def _short(at: int | None) -> str:
    return "" if at is None else datetime.fromtimestamp(at / 1000).strftime("%m-%d %H:%M")


def _show_sessions(console: Console, report: Report, where: Location, since: str | None) -> None:
    _title(console, "cost per session", where, since)
    shown = sessions_by_last(report)
    if not shown:
        console.print("no calls kept" + (f" since {since}" if since else ""))
        _notes(console, report, True)
        return
    wide = console.width >= WIDE + SESSION_COLUMNS
    cache = console.width >= WIDE  # below: the cache's columns are in --session's table
    table = _table("Session")
    table.columns[0].no_wrap = False
    table.columns[0].overflow = "fold"
    table.columns[0].min_width = 12
    table.add_column("Last used", no_wrap=True)
    _figure_columns(table, wide, cache)
    for s in shown:
        cells = _figure_cells(s.figures, wide, cache)
        table.add_row(s.session_id, _short(s.figures.last), *cells)
    _footer(table, report.totals, wide, cache)
    console.print(table)
    _notes(console, report, wide)


def _show_groups(
    console: Console,
    report: Report,
    groups: list[GroupFigures],
    by: By,
    where: Location,
    since: str | None,
) -> None:
    _title(console, f"cost per {by}", where, since)
    if not groups:
        console.print("no calls kept" + (f" since {since}" if since else ""))
        _notes(console, report, True)
        return
    wide = console.width >= WIDE + SESSION_COLUMNS
    cache = console.width >= WIDE
    table = _table(by.capitalize())
    table.columns[0].no_wrap = False
    table.columns[0].overflow = "fold"
    table.columns[0].min_width = 12
    table.add_column("Sessions", justify="right", no_wrap=True)
    _figure_columns(table, wide, cache)
    for g in groups:
        table.add_row(g.name, f"{g.sessions:,}", *_figure_cells(g.figures, wide, cache))
    _footer(table, report.totals, wide, cache)
    table.columns[1].footer = f"{sum(g.sessions for g in groups):,}"
    console.print(table)
    _notes(console, report, wide)


def _call_cells(n: int, c: CallFigures, wide: bool) -> list[str]:
    cost = "–" if c.cost is None else money(c.cost) + ("*" if c.basis == "estimated" else "")
    cells = [
        str(n),
        _short(c.row.at),
        "refresh" if c.row.kind == "refresh" else "",
        tokens(c.agent),
        tokens(c.upstream),
        tokens(c.cache_read),
        tokens(c.cache_write),
        tokens(c.output),
        cost,
        money(c.without),
    ]
    return cells if wide else [cell for i, cell in enumerate(cells) if i != 2]


def _show_session(console: Console, report: Report, session_id: str, where: Location) -> None:
    shown = report.sessions.get(session_id) or SessionFigures(session_id)
    f = shown.figures
    console.print(f"[bold]hdcontext stats[/bold]: session {session_id} · {where}")
    price = shown.price
    priced_as = "–"
    if price is not None:
        priced_as = (
            f"{price.row.model} ({price.match})" if price.row is not None else price.why or ""
        )
    console.print(
        f"model {shown.model or '–'} · priced as {priced_as} · "
        f"{local_time(f.first) if f.first else '–'} → {local_time(f.last) if f.last else '–'}"
    )
    if not shown.calls:
        console.print("no calls kept")
        return
    wide = console.width >= WIDE
    table = _table("#")
    columns: Sequence[str] = (
        "When",
        "Kind",
        "Agent",
        "Model",
        "Cache rd",
        "Cache wr",
        "Out",
        "Cost",
        "Without",
    )
    if not wide:
        columns = [c for c in columns if c != "Kind"]
    for name in columns:
        table.add_column(
            name, justify="left" if name in ("When", "Kind") else "right", no_wrap=True
        )
    for n, call in enumerate(shown.calls, 1):
        table.add_row(*_call_cells(n, call, wide))
    totals = {
        "Agent": tokens(f.agent),
        "Model": tokens(f.upstream),
        "Cache rd": tokens(f.cache_read),
        "Cache wr": tokens(f.cache_write),
        "Out": tokens(f.output),
        "Cost": _cost_cell(f),
        "Without": money(f.without) if f.priced else "–",
    }
    for column in table.columns[1:]:
        column.footer = totals.get(str(column.header), "")
    console.print(table)
    _notes(console, Report(f, {}, {session_id: shown}), wide)
