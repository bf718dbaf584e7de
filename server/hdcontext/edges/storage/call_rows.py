"""The ``calls`` table's rows: what a session's call events write, and what a row reads as.

One logic for both stores, so that ``hdcontext stats`` counts the same calls from either: the
SQL here is the subset SQLite and PostgreSQL share, with ``?`` for its parameters (the
PostgreSQL store's cursor turns them into its own).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from ...core.cache.ledger import Charge
from ...core.stats.calls import (
    BilledUsage,
    CallEvent,
    CallMade,
    CallRefused,
    CallRow,
    Kind,
    UsageReported,
)


class Result(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...


class Executes(Protocol):
    """A connection in a transaction: SQLite's, or the PostgreSQL store's cursor."""

    def execute(self, sql: str, params: Sequence[object] = ..., /) -> Result: ...


CALL_COLUMNS = (
    "session_id, seq, at, kind, model, masked, sent, upstream, est_read, est_write, "
    "est_write_1h, est_plain, off_read, off_write, off_write_1h, off_plain, billed_input, "
    "billed_read, billed_write, billed_write_1h, billed_output"
)
KINDS: tuple[Kind, ...] = ("model", "refresh", "retrieve")


def charge_columns(charge: Charge | None) -> tuple[int | None, ...]:
    if charge is None:
        return (None, None, None, None)
    return (charge.read, charge.write, charge.write_long, charge.plain)


def billed_columns(billed: BilledUsage | None) -> tuple[int | None, ...]:
    if billed is None:
        return (None, None, None, None, None)
    return (billed.input, billed.read, billed.write, billed.write_1h, billed.output)


def write_calls(db: Executes, session_id: str, events: Sequence[CallEvent]) -> None:
    """A session's call events as rows of ``calls`` (inside the save's transaction): a call
    is a new row, a retrieve too; a usage fills in the latest call's billed figures when it
    belongs to it and that row has none yet, else is a row of its own (a call the daemon did
    not see, whose estimate is unknown); a refused call takes the latest call's row away when
    no usage filled it in."""
    (last,) = db.execute(
        "SELECT COALESCE(MAX(seq), -1) FROM calls WHERE session_id=?", (session_id,)
    ).fetchone()
    seq = int(last)
    insert = f"INSERT INTO calls ({CALL_COLUMNS}) VALUES ({', '.join('?' * 21)})"
    for event in events:
        if isinstance(event, CallRefused):
            db.execute(
                "DELETE FROM calls WHERE session_id=? AND seq=("
                "SELECT MAX(seq) FROM calls WHERE session_id=? AND kind!='retrieve')"
                " AND billed_input IS NULL AND est_read IS NOT NULL",
                (session_id, session_id),
            )
            continue
        if isinstance(event, UsageReported):
            if event.attached:
                done = db.execute(
                    "UPDATE calls SET billed_input=?, billed_read=?, billed_write=?,"
                    " billed_write_1h=?, billed_output=? WHERE session_id=? AND seq=("
                    "SELECT MAX(seq) FROM calls WHERE session_id=? AND kind!='retrieve')"
                    " AND billed_input IS NULL AND est_read IS NOT NULL",
                    (*billed_columns(event.billed), session_id, session_id),
                ).rowcount
                if done:
                    continue
            seq += 1
            unseen = (session_id, seq, event.at, "model", event.model, *(None,) * 11)
            db.execute(insert, unseen + billed_columns(event.billed))
            continue
        seq += 1
        if isinstance(event, CallMade):
            bill = event.bill
            row = (
                session_id,
                seq,
                event.at,
                "refresh" if event.refresh else "model",
                event.model,
                event.masked,
                bill.off.total,
                bill.charge.total,
                *charge_columns(bill.charge),
                *charge_columns(bill.off),
                *billed_columns(None),
            )
        else:
            row = (session_id, seq, event.at, "retrieve", *(None,) * 17)
        db.execute(insert, row)


def count(value: object) -> int | None:
    """A count column: an integer, or ``None`` (NULL, or anything a hand edit left there)."""
    return value if isinstance(value, int) else None


def charge_of(values: Sequence[object]) -> Charge | None:
    read, write, write_long, plain = (count(v) for v in values)
    if read is None or write is None or write_long is None or plain is None:
        return None
    return Charge(read=read, write=write, write_long=write_long, plain=plain)


def call_row(row: Sequence[object]) -> CallRow:
    """One row of ``calls`` (in ``CALL_COLUMNS``' order) as the core reads it."""
    kind: Kind = next((k for k in KINDS if k == row[3]), "model")
    billed_input = count(row[16])
    billed = None
    if billed_input is not None:
        billed = BilledUsage(
            input=billed_input,
            read=count(row[17]) or 0,
            write=count(row[18]) or 0,
            write_1h=count(row[19]),
            output=count(row[20]) or 0,
        )
    return CallRow(
        session_id=str(row[0]),
        seq=count(row[1]) or 0,
        at=count(row[2]) or 0,
        kind=kind,
        model=None if row[4] is None else str(row[4]),
        masked=count(row[5]),
        charge=charge_of(row[8:12]),
        off=charge_of(row[12:16]),
        billed=billed,
    )
