"""The store's own tests run against both stores: a storage folder (SQLite) and a PostgreSQL
database (a throwaway cluster, ``tests/postgres_cluster.py``; skipped with the reason where
none can be started). ``where`` is the location of a new, empty storage of the kind asked."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.proxy.run import _NoEditor
from hdcontext.edges.storage.folder import DB_NAME
from hdcontext.edges.storage.location import Location
from hdcontext.edges.storage.postgres_schema import SCHEMA

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def where(request: pytest.FixtureRequest, tmp_path: Path) -> Location:
    if request.param == "sqlite":
        return Location(folder=tmp_path / "storage")
    url: str = request.getfixturevalue("pg_url")
    return Location(url=url)


def sql(where: Location, statement: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """One statement on the storage's tables, beside the store (``?`` parameters)."""
    if where.folder is not None:
        with sqlite3.connect(where.folder / DB_NAME, isolation_level=None) as db:
            rows = list(db.execute(statement, params))
        db.close()
        return rows
    import psycopg

    assert where.url is not None
    with psycopg.connect(where.url, autocommit=True) as conn:
        conn.execute(f'SET search_path TO "{SCHEMA}"')
        cur = conn.execute(statement.replace("?", "%s"), params)
        return list(cur.fetchall()) if cur.description is not None else []


@pytest.fixture
async def daemon_at(where: Location) -> AsyncIterator[Callable[[], Any]]:
    """Daemons over ``where`` (each started; all stopped at the end)."""
    started: list[Daemon] = []

    async def make() -> Daemon:
        daemon = Daemon(_NoEditor(), where, IdeSettings())
        await daemon.start()
        started.append(daemon)
        return daemon

    yield make
    for daemon in started:
        await daemon.shutdown()
        await daemon.store.close()
