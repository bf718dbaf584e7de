"""What only a shared database asks of the store: processes that change the same sessions.

Each session's lock is the database's (an advisory lock: held by one store at a time, waited
for by another, given back by the server when its holder's connection dies, and never left
behind by a request that gave up while taking it); a save is refused when another process
saved the session since this one loaded it, and the registry then loads it again; a deleted
session's rows are gone from the tables' pages once vacuumed, as far as PostgreSQL allows; an
unreachable database is one line at start naming it without its password, and mid-run each
call fails at once, said in the log once, until it answers again."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from hdcontext.core.session.session import Session
from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.proxy.run import _NoEditor
from hdcontext.edges.storage.location import Location
from hdcontext.edges.storage.postgres_locks import lock_key
from hdcontext.edges.storage.postgres_schema import SCHEMA, SCHEMA_VERSION
from hdcontext.edges.storage.records import (
    SaveOp,
    SessionChanged,
    StoreError,
    StoreUnavailable,
)
from hdcontext.edges.storage.store import Store, open_store
from tests.daemon.harness import text
from tests.postgres_cluster import Cluster

from .conftest import sql
from .test_store import SECRET, converse


def _state() -> Any:
    return Session("x").export_state()


async def test_a_save_is_refused_when_another_process_saved_the_session_since(
    pg_url: str,
) -> None:
    one, two = await open_store(pg_url), await open_store(pg_url)
    try:
        await one.create("s", _state(), None)
        loaded = await two.load("s")
        assert loaded is not None and loaded.version == 0
        assert await one.save(SaveOp("s", _state(), 0, 0, version=0)) == 1
        with pytest.raises(SessionChanged):
            await two.save(SaveOp("s", _state(), 5, 5, version=0))
        assert await two.version("s") == 1
        assert await two.save(SaveOp("s", _state(), 5, 5, version=1)) == 2
        (summary,) = await one.summaries()
        assert summary.entry_count == 5
    finally:
        await one.close()
        await two.close()


async def _daemon(url: str) -> Daemon:
    daemon = Daemon(_NoEditor(), Location(url=url), IdeSettings())
    await daemon.start()
    return daemon


async def test_a_process_loads_again_a_session_another_changed(pg_url: str) -> None:
    """Two daemons on one database serve one session in turn: each sees the other's entries
    (its own copy is let go once it holds the lock and finds another version stored)."""
    one, two = await _daemon(pg_url), await _daemon(pg_url)
    try:
        await one.open({"sessionId": "s"})
        for k in range(6):
            daemon = one if k % 2 == 0 else two
            await daemon.append({"sessionId": "s", "entries": [text("human", f"turn {k}")]})
            got = await daemon.get({"sessionId": "s", "view": "raw"})
            assert [e["blocks"][0]["text"] for e in _entries(got)] == [
                f"turn {i}" for i in range(k + 1)
            ]
        assert await one.store.version("s") == 6
    finally:
        for daemon in (one, two):
            await daemon.shutdown()
            await daemon.store.close()


def _entries(got: dict[str, Any]) -> list[dict[str, Any]]:
    import json

    return list(json.loads(b"".join(got["entries"].data)))


async def test_a_sessions_lock_is_one_stores_at_a_time_and_dies_with_its_connection(
    pg_url: str,
) -> None:
    one, two = await open_store(pg_url), await open_store(pg_url)
    try:
        await one.lock("s")
        waiting = asyncio.ensure_future(two.lock("s"))
        await asyncio.sleep(0.2)
        assert not waiting.done()
        await one.lock("other")  # other sessions are not held up
        await one.unlock("s")
        await asyncio.wait_for(waiting, 5)
        third = asyncio.ensure_future(one.lock("s"))
        await asyncio.sleep(0.1)
        assert not third.done()
        await two.close()  # its connection gone: the server gave the lock back
        await asyncio.wait_for(third, 5)
    finally:
        await one.close()
        await two.close()


async def test_a_request_that_gives_up_while_taking_a_lock_leaves_none(pg_url: str) -> None:
    one, two = await open_store(pg_url), await open_store(pg_url)
    try:
        await one.lock("s")
        waiting = asyncio.ensure_future(two.lock("s"))
        await asyncio.sleep(0.05)
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        await one.unlock("s")
        for _ in range(20):  # cancelled between a try and the next: nothing held
            attempt = asyncio.ensure_future(two.lock("s"))
            await asyncio.sleep(0)
            attempt.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await attempt
        await asyncio.sleep(0.1)
        await asyncio.wait_for(one.lock("s"), 5)
    finally:
        await one.close()
        await two.close()


def test_lock_keys_are_64_bits_and_differ() -> None:
    keys = {lock_key(f"proxy-anthropic-{n}") for n in range(1000)}
    assert len(keys) == 1000
    assert all(-(2**63) <= k < 2**63 for k in keys)


async def test_a_deleted_sessions_rows_are_gone_from_the_tables_pages(
    pg_url: str, postgres_cluster: Cluster
) -> None:
    """After the deletion and its VACUUM, no tuple in the pages of the tables (their heap and
    TOAST pages, read with pageinspect, as a superuser could) holds the deleted content: not
    even a dead version of a row. (The bytes themselves may stay in a page's free space until
    it is reused, and in the WAL and backups: what VACUUM does not wipe, docs/team.md says.)"""
    daemon = await _daemon(pg_url)
    try:
        await converse(daemon, "gone", SECRET, turns=3)
        await converse(daemon, "kept", "kept-words", turns=1)
        assert _in_pages(postgres_cluster, pg_url, SECRET)
        await daemon.delete({"sessionId": "gone"})
        assert not _in_pages(postgres_cluster, pg_url, SECRET)
        assert _in_pages(postgres_cluster, pg_url, "kept-words")  # the search finds what is there
    finally:
        await daemon.shutdown()
        await daemon.store.close()


def _in_pages(cluster: Cluster, url: str, needle: str) -> bool:
    """Whether any tuple (live or dead) in the heap pages of hdcontext's tables holds
    ``needle``, TOASTed values included (their chunks are tuples of the TOAST tables)."""
    cluster.sql(url, "CREATE EXTENSION IF NOT EXISTS pageinspect")
    relations = cluster.sql(
        url,
        "SELECT c.oid::regclass::text FROM pg_class c "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s AND c.relkind = 'r' "
        "UNION SELECT t.oid::regclass::text FROM pg_class c "
        "JOIN pg_class t ON t.oid = c.reltoastrelid "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = %s",
        (SCHEMA, SCHEMA),
    )
    marker = needle.encode()
    for (relation,) in relations:
        (pages,) = cluster.sql(url, "SELECT pg_relation_size(%s::regclass) / 8192", (relation,))[0]
        for page in range(int(pages)):
            (raw,) = cluster.sql(url, "SELECT get_raw_page(%s, %s)", (relation, page))[0]
            items = cluster.sql(
                url,
                "SELECT t_data FROM heap_page_items(%s::bytea) WHERE t_data IS NOT NULL",
                (raw,),
            )
            if any(marker in bytes(data) for (data,) in items):  # type: ignore[arg-type]
                return True
    return False


async def test_an_unreachable_database_is_one_line_without_its_password() -> None:
    url = "postgresql://hdc:s3cret-pw@127.0.0.1:1/sessions?connect_timeout=2"
    with pytest.raises(StoreError) as refused:
        await open_store(url)
    message = str(refused.value)
    assert message.startswith("cannot use the database postgresql://hdc@127.0.0.1:1/sessions")
    assert "s3cret" not in message and "\n" not in message
    with pytest.raises(StoreError) as bad:
        await open_store("postgresql://hdc:s3cret-pw@/x?port=notanumber")
    assert "s3cret" not in str(bad.value)


async def test_replicas_starting_together_make_the_tables_once(pg_url: str) -> None:
    stores = await asyncio.gather(*(open_store(pg_url) for _ in range(4)))
    for store in stores:
        await store.close()
    assert sql(Location(url=pg_url), "SELECT key, value FROM meta") == [
        ("schema", str(SCHEMA_VERSION))
    ]


@contextlib.asynccontextmanager
async def _forwarder(cluster: Cluster) -> AsyncIterator[tuple[int, Any]]:
    """A TCP port that leads to the cluster's socket, and a way to cut it (every connection
    through it broken, new ones refused) and open it again: a database lost and back."""
    socket_path = str(Path(cluster.sockets) / f".s.PGSQL.{cluster.port}")
    links: set[asyncio.StreamWriter] = set()

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(Exception):
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        writer.close()

    async def link(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_unix_connection(socket_path)
        links.update({writer, up_writer})
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    server = await asyncio.start_server(link, "127.0.0.1", 0)
    port = int(server.sockets[0].getsockname()[1])
    state = {"server": server}

    async def cut() -> None:
        state["server"].close()
        for writer in list(links):
            writer.transport.abort()
        links.clear()

    async def restore() -> None:
        state["server"] = await asyncio.start_server(link, "127.0.0.1", port)

    try:
        yield port, (cut, restore)
    finally:
        await cut()


async def test_a_database_lost_mid_run_fails_each_call_at_once_and_is_said_once(
    pg_url: str, postgres_cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    database = pg_url.split("?")[0].rsplit("/", 1)[1]
    async with _forwarder(postgres_cluster) as (port, (cut, restore)):
        url = f"postgresql://hdc:pw@127.0.0.1:{port}/{database}"
        store: Store = await open_store(url)
        try:
            await store.create("s", _state(), None)
            caplog.set_level(logging.WARNING, logger="hdcontext")
            await cut()
            for _ in range(5):
                with pytest.raises(StoreUnavailable):
                    await store.load("s")
                with pytest.raises(StoreUnavailable):
                    await store.lock("s")
            said = [r.getMessage() for r in caplog.records if "cannot be reached" in r.getMessage()]
            assert len(said) == 1, said
            assert f"postgresql://hdc@127.0.0.1:{port}/{database}" in said[0]
            assert "pw" not in said[0].replace(database, "")
            await restore()
            await asyncio.sleep(1.1)  # past the wait between tries
            assert await store.load("s") is not None
            await store.lock("s")
            await store.unlock("s")
            assert any("answers again" in r.getMessage() for r in caplog.records)
        finally:
            await store.close()


def test_psycopg_is_the_one_imported_for_a_database() -> None:
    assert psycopg.__version__ >= "3.2"


async def test_a_call_told_to_one_process_is_read_by_the_next(pg_url: str) -> None:
    """The proxy only notes a call's bill (saved with the next commit) when it has its
    sessions alone; sharing them, it saves it at once, as a refused call: the next request
    may be another process's, which must price it."""
    one, two = await _daemon(pg_url), await _daemon(pg_url)
    try:
        await one.open({"sessionId": "s"})
        await one.append({"sessionId": "s", "entries": [text("human", "hello")]})
        await one.compact({"sessionId": "s", "reply": "none"})
        usage = {"sessionId": "s", "inputTokens": 10, "cacheReadTokens": 0, "outputTokens": 3}
        await one.note_usage(usage)
        got = await two.get({"sessionId": "s", "view": "raw"})
        assert got["status"]["usage"]["calls"] == 1
        assert got["status"]["usage"]["outputTokens"] == 3
        await two.compact({"sessionId": "s", "reply": "none"})
        assert await two.note_refused("s")
        got = await one.get({"sessionId": "s", "view": "raw"})
        read = await one.store.calls_for_stats(["s"])
        assert [c.billed is not None for c in read.calls] == [True]  # the refused one went
    finally:
        for daemon in (one, two):
            await daemon.shutdown()
            await daemon.store.close()
