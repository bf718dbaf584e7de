"""What the compactor keeps in memory between requests (``edges/proxy/kept.py``): the memos of
the conversations used last, by count and by bytes, and the sessions the daemon keeps loaded,
the least recently used unloaded past the capacity (still in the storage), none while a request
of it runs; the collection after an unload at most as often as the capacity says."""

from __future__ import annotations

import gc
from dataclasses import dataclass
from pathlib import Path

import pytest

from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.retention import Retention
from hdcontext.edges.proxy.kept import GATEWAY, PROXY, Capacity, Kept
from hdcontext.edges.proxy.run import proxy_daemon, proxy_settings


@dataclass(frozen=True)
class _Memo:
    size: int


def test_memos_are_kept_by_count_and_by_bytes_the_oldest_going_first(tmp_path: Path) -> None:
    kept: Kept[_Memo] = Kept(proxy_daemon(tmp_path, proxy_settings(), Retention()))
    kept.keep("s0", _Memo(10))
    kept.keep("old", _Memo(10), oldest=True)  # a conversation of the last run
    assert list(kept.memos) == ["old", "s0"]
    for n in range(1, PROXY.memos + 1):
        kept.keep(f"s{n}", _Memo(10))
    assert list(kept.memos) == [f"s{n}" for n in range(1, PROXY.memos + 1)]
    kept.keep("old", _Memo(10), oldest=True)  # when full, the least recent goes: it
    assert "old" not in kept.memos
    kept.keep("big", _Memo(PROXY.memo_bytes))  # alone past the bytes: only it stays
    assert list(kept.memos) == ["big"]
    assert GATEWAY.memos > 8 * PROXY.memos and GATEWAY.sessions > 8 * PROXY.sessions


@pytest.fixture
async def daemon(tmp_path: Path) -> Daemon:
    started = proxy_daemon(tmp_path, proxy_settings(), Retention())
    await started.start()
    return started


async def test_sessions_past_the_capacity_are_unloaded_the_least_recent_first(
    daemon: Daemon, monkeypatch: pytest.MonkeyPatch
) -> None:
    collections: list[int] = []
    monkeypatch.setattr(gc, "collect", lambda *a: collections.append(1) or 0)
    kept: Kept[_Memo] = Kept(daemon, Capacity(sessions=2, collect_every_s=3600.0))
    try:
        for sid in ("a", "b", "c"):
            await daemon.open({"sessionId": sid})
        async with daemon.registry.lock("a"):  # a request of "a" is running
            for sid in ("a", "b", "c"):
                await kept.hold(sid)
        assert daemon.registry.loaded_session("a") is not None  # its request ran
        assert list(kept.sessions) == ["b", "c"]
        await kept.hold("a")
        assert daemon.registry.loaded_session("b") is None  # unloaded, least recent
        assert await daemon.store.exists("b")  # still in the storage
        assert daemon.registry.loaded_session("c") is not None
        assert collections == [1]
        await kept.hold("b")  # "c" goes: no second collection within the hour
        assert daemon.registry.loaded_session("c") is None and collections == [1]
    finally:
        await daemon.shutdown()
        await daemon.store.close()
