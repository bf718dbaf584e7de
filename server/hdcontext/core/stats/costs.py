"""What the calls kept in a storage folder cost, with hdcontext and without it (``hdcontext
stats``, its page, the editor's savings view): pure sums over ``calls.CallRow``.

**Money only where the price is known.** A call is priced by the row of the price table
(``core/prices.py``) its model finds by exact id or by family, or by the user's own prices
(``cache.prices``: ``--prices FILE`` over the session's setting, a row each); a model the table
does not know (whose provider's fallback row the daemon plans with) is shown in tokens, with the
reason, unless the user's prices name it with every price a call needs. A session for which no
client ever reported usage is shown in tokens too: the daemon's count covers the messages only
(not the system prompt, the tools or the output, in its own tokenizer), so it is no bill.

**With hdcontext**: what the provider billed (``history/usage``), priced by kind: plain input,
cache reads, cache writes of five minutes and of an hour (as the proxy read them; where the
client did not say, in the proportion the daemon expected for that call), output. A call of a
billed session whose usage never came is priced from the daemon's own count of it, input only,
and marked ``estimated``.

**Without hdcontext** (the counterfactual): the same call with what hdcontext took out put
back, by kind, as the daemon's ledger reckons it: the billed tokens of each kind plus the
difference between the ledger's charge without hdcontext (``off``: the unedited history, the
agent's own cache lifetime) and with it (``charge``). Why the difference and not the ledger's
``off`` priced alone: what the daemon does not count (system prompt, tools, output, the
provider's tokenizer) is the same with or without hdcontext, so it belongs in both figures, as
billed; scaling ``off`` by the call's billed/estimated ratio would scale the system prompt and
the tools too, and would show a saving on a call hdcontext left alone. This way a call
hdcontext did not change costs the same in both columns, and the saving of a call is the
ledger's saving, priced at the call's row. A refresh call costs nothing without hdcontext
(there is none); a usage the daemon saw no call for costs the same in both.

Tokens: "by the agent" is what the agent sent (the billed input plus what hdcontext took
out); "to the model" is the billed input (the daemon's count where no usage came).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, TypeAlias

from ..cache.ledger import Charge
from ..prices import (
    PRICES,
    PRICES_CHECKED,
    ModelPrice,
    PriceOverrideError,
    at_prompt,
    lookup,
    normalize,
    override,
)
from .calls import BilledUsage, CallRow

Basis: TypeAlias = Literal["billed", "estimated", "tokens"]
PriceOverrides: TypeAlias = Mapping[str, Mapping[str, Any]]
"""``cache.prices``: a normalized model id -> the fields of its row the user sets."""

MONEY_MATCHES = ("exact", "family", "override")
"""How a row must have been found for its prices to be shown as money."""
NEEDED_FOR_A_NEW_MODEL = ("input", "output", "cacheRead", "cacheWrite5m")
"""What the user's prices must name for a model the table does not know."""
CURRENCY = "USD"
PER = 1_000_000
DIGITS = 6
"""Dollars are given to a millionth in JSON (a call can cost less than a cent)."""
CALLS_KEPT = 2000
"""The newest calls of a session the page's chart gets (older ones only count in the sums)."""


@dataclass(frozen=True)
class Price:
    """A model's row for money, or why there is none."""

    row: ModelPrice | None
    match: str
    """``exact``, ``family``, ``override``; ``fallback``, ``unpriced`` or ``none`` (no model)."""
    why: str | None = None


def price_for(model: str | None, own: PriceOverrides) -> Price:
    """The row that prices ``model`` in money: the table's by exact id or family (under the
    user's prices for it, if any), or the user's own for a model the table does not know;
    else why not."""
    name = normalize(model)
    if not name:
        return Price(None, "none", "the session named no model")
    found = lookup(model)
    if found.row is not None and found.how in ("exact", "family"):
        mine = own.get(name) or own.get(normalize(found.row.model))
        if mine:
            return Price(override(found.row, mine), "override")
        return Price(found.row, found.how)
    mine = own.get(name)
    if mine:
        missing = [key for key in NEEDED_FOR_A_NEW_MODEL if key not in mine]
        if not missing:
            base = replace(found.row or PRICES[0], model=name, long=None, cache_write_1h=None)
            return Price(override(base, mine), "override")
        return Price(
            None,
            found.how,
            f"{model} is not in the price table and cache.prices gives it no " + ", ".join(missing),
        )
    return Price(None, found.how, f"{model} is not in the price table (checked {PRICES_CHECKED})")


def checked_prices(value: object, where: str) -> dict[str, dict[str, Any]]:
    """A price override (``cache.prices``' shape: model id -> fields of its row) checked
    as the table applies it, keys normalized; ``ValueError`` naming ``where``, the model and
    the field, for any wrong shape."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected an object of model ids, got {type(value).__name__}")
    out: dict[str, dict[str, Any]] = {}
    for model, fields in value.items():
        if not isinstance(model, str) or not model:
            raise ValueError(f"{where}: a model id must be a non-empty string, got {model!r}")
        try:
            override(lookup(model).row or PRICES[0], fields)
        except PriceOverrideError as err:
            raise ValueError(f"{where}: {model}: {err}") from None
        assert isinstance(fields, Mapping)
        out[normalize(model)] = dict(fields)
    return out


@dataclass(frozen=True)
class Kinds:
    """A call's input tokens by how they are billed, and its output."""

    plain: int = 0
    read: int = 0
    write_5m: int = 0
    write_1h: int = 0
    output: int = 0

    @property
    def prompt(self) -> int:
        return self.plain + self.read + self.write_5m + self.write_1h

    def plus(self, more: Charge, less: Charge) -> Kinds:
        """These, with ``more`` put in and ``less`` taken out, kind by kind."""
        return Kinds(
            plain=self.plain + more.plain - less.plain,
            read=self.read + more.read - less.read,
            write_5m=self.write_5m + more.write - less.write,
            write_1h=self.write_1h + more.write_long - less.write_long,
            output=self.output,
        )

    def cost(self, row: ModelPrice) -> float | None:
        """In dollars, at the row's prices for a prompt this long; ``None`` when the row has
        no price for a kind the call has (an hour's write)."""
        tier = at_prompt(row, self.prompt)
        if self.write_1h and tier.cache_write_1h is None:
            return None
        return (
            self.plain * tier.input
            + self.read * tier.cache_read
            + self.write_5m * tier.cache_write_5m
            + self.write_1h * (tier.cache_write_1h or 0.0)
            + self.output * tier.output
        ) / PER


def of_charge(charge: Charge) -> Kinds:
    return Kinds(charge.plain, charge.read, charge.write, charge.write_long, 0)


def of_billed(billed: BilledUsage, charge: Charge | None) -> Kinds:
    """The billed figures by kind. Writes of an hour: as the client said; else in the
    proportion the daemon expected for the call (none, unless it asked for an hour)."""
    write = billed.write
    if billed.write_1h is not None:
        long = min(billed.write_1h, write)
    elif charge is not None and charge.write_long:
        long = round(write * charge.write_long / (charge.write + charge.write_long))
    else:
        long = 0
    return Kinds(
        plain=max(0, billed.input - billed.read - write),
        read=billed.read,
        write_5m=write - long,
        write_1h=long,
        output=billed.output,
    )


@dataclass(frozen=True)
class CallFigures:
    """One model or refresh call, counted and priced."""

    row: CallRow
    basis: Basis
    agent: int
    """Input tokens the agent sent (0 for a refresh call: the agent sent none)."""
    upstream: int
    """Input tokens that went to the model."""
    cache_read: int
    cache_write: int
    output: int
    cost: float | None
    without: float | None
    why: str | None = None
    """Why the call is in tokens only."""

    def to_json(self, day_of: Callable[[int], str], when: Callable[[int], str]) -> dict[str, Any]:
        r = self.row
        return {
            "seq": r.seq,
            "at": r.at,
            "time": when(r.at),
            "day": day_of(r.at),
            "kind": r.kind,
            "model": r.model,
            "basis": self.basis,
            "tokens": {
                "agent": self.agent,
                "model": self.upstream,
                "cacheRead": self.cache_read,
                "cacheWrite": self.cache_write,
                "output": self.output,
            },
            "cost": _money(self.cost),
            "without": _money(self.without),
            "billed": None if r.billed is None else _billed_json(r.billed),
            "estimate": None if r.charge is None else _charge_json(r.charge),
            "off": None if r.off is None else _charge_json(r.off),
            "why": self.why,
        }


def figure_call(row: CallRow, price: Price, session_billed: bool) -> CallFigures:
    """One call (not a retrieve) counted and priced, as the module's docstring says."""
    charge, off, billed = row.charge, row.off, row.billed
    refresh = row.kind == "refresh"
    if billed is not None:
        with_ = of_billed(billed, charge)
        upstream, read, write = billed.input, billed.read, billed.write
    elif charge is not None:
        with_ = of_charge(charge)
        upstream, read, write = charge.total, charge.read, charge.write + charge.write_long
    else:  # pragma: no cover - a row is a call or a usage
        with_, upstream, read, write = Kinds(), 0, 0, 0
    if refresh:
        without_kinds: Kinds | None = None
        agent = 0
    elif charge is not None and off is not None:
        without_kinds = with_.plus(off, charge)
        agent = upstream + off.total - charge.total
    else:
        without_kinds = with_
        agent = upstream
    basis: Basis = "billed" if billed is not None else "estimated"
    why = price.why
    cost = without = None
    if price.row is not None and not session_billed:
        why = "no usage reported for this session (what the provider billed is not known)"
    elif price.row is not None:
        cost = with_.cost(price.row)
        without = 0.0 if without_kinds is None else without_kinds.cost(price.row)
        if cost is None or without is None:
            cost = without = None
            why = f"{price.row.model} has no price for a one-hour cache write"
    if cost is None:
        basis = "tokens"
    return CallFigures(
        row=row,
        basis=basis,
        agent=agent,
        upstream=upstream,
        cache_read=read,
        cache_write=write,
        output=with_.output,
        cost=cost,
        without=without,
        why=why if cost is None else None,
    )


@dataclass
class Figures:
    """Sums over calls: what every row of a report shows."""

    calls: int = 0
    """Model calls."""
    refresh_calls: int = 0
    agent: int = 0
    upstream: int = 0
    cache_read: int = 0
    cache_write: int = 0
    output: int = 0
    cost: float = 0.0
    """Of the priced calls (refresh calls included)."""
    estimated_cost: float = 0.0
    """Of ``cost``, the estimated calls'."""
    without: float = 0.0
    refresh_cost: float = 0.0
    priced_calls: int = 0
    estimated_calls: int = 0
    unpriced_calls: int = 0
    masked: int = 0
    fetched: int = 0
    first: int | None = None
    last: int | None = None
    unpriced: dict[tuple[str, str], int] = field(default_factory=dict)
    """(model or "", why its calls are in tokens only) -> how many calls."""

    def add(self, call: CallFigures) -> None:
        refresh = call.row.kind == "refresh"
        self.refresh_calls += refresh
        self.calls += not refresh
        self.agent += call.agent
        self.upstream += call.upstream
        self.cache_read += call.cache_read
        self.cache_write += call.cache_write
        self.output += call.output
        self._seen(call.row.at)
        if call.cost is None or call.without is None:
            self.unpriced_calls += 1
            key = (call.row.model or "", call.why or "")
            self.unpriced[key] = self.unpriced.get(key, 0) + 1
            return
        self.priced_calls += 1
        self.cost += call.cost
        self.without += call.without
        if refresh:
            self.refresh_cost += call.cost
        if call.basis == "estimated":
            self.estimated_calls += 1
            self.estimated_cost += call.cost

    def add_masked(self, at: int, count: int) -> None:
        self.masked += count
        self._seen(at)

    def add_fetched(self, at: int) -> None:
        self.fetched += 1
        self._seen(at)

    def _seen(self, at: int) -> None:
        self.first = at if self.first is None else min(self.first, at)
        self.last = at if self.last is None else max(self.last, at)

    def absorb(self, other: Figures) -> None:
        """Add ``other``'s sums to these (a group's rows made of its sessions')."""
        for name in _SUMMED:
            setattr(self, name, getattr(self, name) + getattr(other, name))
        for at in (other.first, other.last):
            if at is not None:
                self._seen(at)
        for key, n in other.unpriced.items():
            self.unpriced[key] = self.unpriced.get(key, 0) + n

    @property
    def priced(self) -> bool:
        return self.priced_calls > 0

    @property
    def saved(self) -> float | None:
        return self.without - self.cost if self.priced else None

    @property
    def ratio(self) -> float | None:
        """What the calls cost with hdcontext, as a share of what they would have cost."""
        if not self.priced or self.without <= 0:
            return None
        return self.cost / self.without

    def to_json(self) -> dict[str, Any]:
        priced = self.priced
        ratio = self.ratio
        return {
            "calls": self.calls,
            "refreshCalls": self.refresh_calls,
            "tokens": {
                "agent": self.agent,
                "model": self.upstream,
                "cacheRead": self.cache_read,
                "cacheWrite": self.cache_write,
                "output": self.output,
            },
            "cost": _money(self.cost) if priced else None,
            "estimatedCost": _money(self.estimated_cost) if priced else None,
            "without": _money(self.without) if priced else None,
            "saved": _money(self.saved),
            "ratio": None if ratio is None else round(ratio, 4),
            "refreshCost": _money(self.refresh_cost) if priced else None,
            "pricedCalls": self.priced_calls,
            "estimatedCalls": self.estimated_calls,
            "unpricedCalls": self.unpriced_calls,
            "maskedOutputs": self.masked,
            "fetchedBack": self.fetched,
            "unpriced": [
                {"model": model or None, "why": why, "calls": n}
                for (model, why), n in sorted(self.unpriced.items())
            ],
        }


_SUMMED = (
    "calls",
    "refresh_calls",
    "agent",
    "upstream",
    "cache_read",
    "cache_write",
    "output",
    "cost",
    "estimated_cost",
    "without",
    "refresh_cost",
    "priced_calls",
    "estimated_calls",
    "unpriced_calls",
    "masked",
    "fetched",
)
"""``Figures``' fields that are sums (a test holds this to every field but the first and last
times and the unpriced counts)."""


@dataclass
class SessionFigures:
    session_id: str
    figures: Figures = field(default_factory=Figures)
    calls: list[CallFigures] = field(default_factory=list)
    model: str | None = None
    """The model of its latest call."""
    price: Price | None = None


@dataclass
class Report:
    """Every figure of a storage folder's calls (since a time), by day and by session."""

    totals: Figures
    days: dict[str, Figures]
    sessions: dict[str, SessionFigures]
    without_records: int = 0
    """Stored sessions with no call kept (served before the daemon kept calls)."""


def local_day(at: int) -> str:
    """The local date of a time in ms (``YYYY-MM-DD``), as ccusage groups by day."""
    return datetime.fromtimestamp(at / 1000).strftime("%Y-%m-%d")


def local_time(at: int) -> str:
    return datetime.fromtimestamp(at / 1000).strftime("%Y-%m-%d %H:%M:%S")


def build(
    rows: Iterable[CallRow],
    *,
    prices: PriceOverrides | None = None,
    session_prices: Mapping[str, PriceOverrides] | None = None,
    since: int | None = None,
    day_of: Callable[[int], str] = local_day,
    stored_sessions: Sequence[str] = (),
) -> Report:
    """The report of ``rows`` (every row of the sessions to show, in session and ``seq``
    order: a session's earlier rows say whether it was ever billed and how many outputs were
    masked before ``since``). ``prices``: the user's, over each session's ``session_prices``."""
    prices = prices or {}
    session_prices = session_prices or {}
    by_session: dict[str, list[CallRow]] = {}
    for row in rows:
        by_session.setdefault(row.session_id, []).append(row)
    totals = Figures()
    days: dict[str, Figures] = {}
    sessions: dict[str, SessionFigures] = {}
    for session_id, calls in by_session.items():
        own = {**session_prices.get(session_id, {}), **prices}
        billed = any(c.billed is not None for c in calls)
        shown = SessionFigures(session_id)
        masked_before = 0
        cache: dict[str | None, Price] = {}
        for row in calls:
            inside = since is None or row.at >= since
            day = days.setdefault(day_of(row.at), Figures()) if inside else None
            targets = (totals, day, shown.figures) if day is not None else ()
            if row.kind == "retrieve":
                for target in targets:
                    target.add_fetched(row.at)
                continue
            if row.masked is not None:
                grown = max(0, row.masked - masked_before)
                masked_before = max(masked_before, row.masked)
                if grown:
                    for target in targets:
                        target.add_masked(row.at, grown)
            if not inside:
                continue
            price = cache.get(row.model)
            if price is None:
                price = cache[row.model] = price_for(row.model, own)
            figured = figure_call(row, price, billed)
            for target in targets:
                target.add(figured)
            shown.calls.append(figured)
            if row.charge is not None:
                shown.model, shown.price = row.model, price
        if shown.figures.first is not None:
            sessions[session_id] = shown
    without = sum(1 for s in stored_sessions if s not in by_session)
    return Report(totals, dict(sorted(days.items())), sessions, without)


# -- JSON ------------------------------------------------------------------------------------


def _money(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


def _billed_json(billed: BilledUsage) -> dict[str, Any]:
    return {
        "input": billed.input,
        "cacheRead": billed.read,
        "cacheWrite": billed.write,
        "cacheWrite1h": billed.write_1h,
        "output": billed.output,
    }


def _charge_json(charge: Charge) -> dict[str, int]:
    return {
        "cacheRead": charge.read,
        "cacheWrite": charge.write,
        "cacheWrite1h": charge.write_long,
        "plain": charge.plain,
    }


def session_json(
    shown: SessionFigures,
    when: Callable[[int], str] = local_time,
    *,
    calls: Literal["none", "objects", "series"] = "none",
    day_of: Callable[[int], str] = local_day,
) -> dict[str, Any]:
    """A session's row; with its calls as objects (``callDetails``, for ``--session``) or as
    the page's compact ``series`` (``[seq, at, kind, agent, model, cacheRead, cost, without,
    basis]`` each, the newest ``CALLS_KEPT``)."""
    f = shown.figures
    price = shown.price
    out: dict[str, Any] = {
        "sessionId": shown.session_id,
        "model": shown.model,
        "pricedAs": None
        if price is None
        else {"row": None if price.row is None else price.row.model, "match": price.match},
        "first": None if f.first is None else when(f.first),
        "last": None if f.last is None else when(f.last),
        "lastAt": f.last,
        **f.to_json(),
    }
    if calls == "objects":
        out["callDetails"] = [c.to_json(day_of, when) for c in shown.calls]
    elif calls == "series":
        out["series"] = [
            [
                c.row.seq,
                c.row.at,
                c.row.kind,
                c.agent,
                c.upstream,
                c.cache_read,
                _money(c.cost),
                _money(c.without),
                c.basis,
            ]
            for c in shown.calls[-CALLS_KEPT:]
        ]
    return out


def header(storage_dir: str, since: str | None) -> dict[str, Any]:
    """What every report in JSON starts with."""
    return {
        "storageDir": storage_dir,
        "currency": CURRENCY,
        "pricesChecked": PRICES_CHECKED,
        "since": since,
    }


@dataclass
class GroupFigures:
    """A row of ``hdcontext stats --by user`` (or ``team``): its sessions' figures summed."""

    name: str
    figures: Figures = field(default_factory=Figures)
    sessions: int = 0


def grouped(report: Report, group_of: Callable[[str], str]) -> list[GroupFigures]:
    """The report's sessions summed by ``group_of(session_id)``, the dearest first (then
    the ones that used the most tokens, then by name)."""
    groups: dict[str, GroupFigures] = {}
    for session in report.sessions.values():
        name = group_of(session.session_id)
        group = groups.setdefault(name, GroupFigures(name))
        group.figures.absorb(session.figures)
        group.sessions += 1
    return sorted(groups.values(), key=lambda g: (-g.figures.cost, -g.figures.upstream, g.name))


def sessions_by_last(report: Report) -> list[SessionFigures]:
    """The report's sessions, most recently used first."""
    return sorted(
        report.sessions.values(),
        key=lambda s: (-(s.figures.last or 0), s.session_id),
    )


def page_json(
    report: Report, storage_dir: str, since: str | None, generated_at: int
) -> dict[str, Any]:
    """Everything the page shows (and the editor's view): totals, days, and every session
    with its calls as series."""
    return {
        **header(storage_dir, since),
        "generatedAt": generated_at,
        "totals": report.totals.to_json(),
        "days": [{"day": day, **f.to_json()} for day, f in report.days.items()],
        "sessions": [session_json(s, calls="series") for s in sessions_by_last(report)],
        "sessionsWithoutRecords": report.without_records,
    }
