"""A storage folder with known calls, written as the store writes them (its schema, its
``calls`` rows), so that every figure of ``hdcontext stats`` can be worked out by hand."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from hdcontext.core.session.state import SessionState
from hdcontext.edges.storage.folder import DB_NAME, prepare_folder
from hdcontext.edges.storage.sqlite_store import SqliteStore


def noon(day: int, minute: int = 0) -> int:
    """Local noon of a day of November 2026 (ms): far from any day boundary in any zone
    the machine may be in."""
    return int(datetime(2026, 11, day, 12, minute).timestamp() * 1000)


@dataclass(frozen=True)
class Call:
    at: int
    kind: str = "model"
    model: str | None = None
    masked: int | None = 0
    charge: tuple[int, int, int, int] | None = None
    """read, write (5m), write (1h), plain: the daemon's estimate with hdcontext."""
    off: tuple[int, int, int, int] | None = None
    billed: tuple[int, int, int, int | None, int] | None = None
    """input (all of it), cache read, cache write, of which 1h (None: not said), output."""


@dataclass
class Seeded:
    session_id: str
    model: str | None
    calls: list[Call] = field(default_factory=list)
    overrides: dict[str, object] = field(default_factory=dict)


def seed(folder: Path, sessions: list[Seeded]) -> None:
    prepare_folder(folder)

    async def create() -> None:
        store = SqliteStore(folder)
        await store.open()
        try:
            for s in sessions:
                state = SessionState(
                    overrides=dict(s.overrides),
                    version=1,
                    saved_tokens=0,
                    dirty=False,
                    todos=(),
                    todos_since=0,
                    writes={},
                    model=s.model,
                )
                await store.create(s.session_id, state, s.model)
        finally:
            await store.close()

    asyncio.run(create())
    with sqlite3.connect(folder / DB_NAME, isolation_level=None) as db:
        for s in sessions:
            for seq, c in enumerate(s.calls):
                charge = c.charge or (None,) * 4
                off = c.off or (None,) * 4
                billed = c.billed or (None,) * 5
                sent = None if c.off is None else sum(c.off)
                upstream = None if c.charge is None else sum(c.charge)
                db.execute(
                    "INSERT INTO calls VALUES (" + ", ".join("?" * 21) + ")",
                    (
                        s.session_id,
                        seq,
                        c.at,
                        c.kind,
                        c.model or s.model,
                        c.masked,
                        sent,
                        upstream,
                        *charge,
                        *off,
                        *billed,
                    ),
                )
    db.close()
