"""The keep-warm timers: a refresh at the moment named, with the last request's caller, again
at the next moment the daemon names, and none once the session is forgotten, when the
refresh no longer pays, or when the request lets the model think."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from multidict import CIMultiDict

from hdcontext.edges.proxy.keepwarm import Caller, KeepWarm, thinks


@dataclass
class _Cache:
    refresh_at: int | None


@dataclass
class _History:
    blobs: list[bytes]


@dataclass
class _Result:
    history: _History
    cache: _Cache


@dataclass
class _World:
    now: int = 1_000_000
    plan: list[tuple[bool, int | None]] = field(default_factory=list)
    """For each refresh asked: whether it pays, and the next moment named."""
    asked: list[tuple[str, int]] = field(default_factory=list)
    sent: list[tuple[str, Any]] = field(default_factory=list)

    def clock(self) -> int:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += round(seconds * 1000)
        await asyncio.sleep(0)

    async def refresh(self, session_id: str, at: int) -> Any:
        self.asked.append((session_id, at))
        pays, nxt = self.plan.pop(0) if self.plan else (False, None)
        return _Result(_History([b"{}"] if pays else []), _Cache(nxt if pays else None))

    async def send(self, session_id: str, caller: Caller, result: Any, at: int) -> None:
        self.sent.append((caller.headers["x-api-key"], result))


def _caller(key: str = "sk-ant-test", **params: Any) -> Caller:
    return Caller(
        api="anthropic",
        path="/v1/messages",
        headers=CIMultiDict({"x-api-key": key}),
        params={"model": "claude-sonnet-4-6", **params},
    )


async def _settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_a_refresh_is_made_at_the_moment_named_with_the_last_requests_key() -> None:
    world = _World(plan=[(True, None)])
    warm = KeepWarm(world.refresh, world.send, world.clock, world.sleep)
    warm.note("s1", _caller("sk-first"), world.now + 280_000)
    warm.note("s1", _caller("sk-second"), world.now + 280_000)  # a later call moves the timer
    await _settle()
    assert world.asked == [("s1", 1_280_000)]
    assert [key for key, _ in world.sent] == ["sk-second"]
    assert warm.made == 1


async def test_refreshes_follow_the_next_moment_the_daemon_names_until_none_pays() -> None:
    world = _World(plan=[(True, 1_600_000), (True, 1_900_000), (False, None)])
    warm = KeepWarm(world.refresh, world.send, world.clock, world.sleep)
    warm.note("s1", _caller(), 1_280_000)
    await _settle()
    assert [at for _, at in world.asked] == [1_280_000, 1_600_000, 1_900_000]
    assert warm.made == 2


async def test_nothing_is_sent_after_the_session_is_forgotten() -> None:
    world = _World(plan=[(True, None)])

    async def slow_sleep(seconds: float) -> None:
        await asyncio.sleep(0.05)

    warm = KeepWarm(world.refresh, world.send, world.clock, slow_sleep)
    warm.note("s1", _caller(), world.now + 280_000)
    warm.forget("s1")
    await asyncio.sleep(0.1)
    assert world.asked == [] and world.sent == []


async def test_no_timer_without_a_moment_or_for_a_request_that_thinks() -> None:
    world = _World(plan=[(True, None)])
    warm = KeepWarm(world.refresh, world.send, world.clock, world.sleep)
    warm.note("s1", _caller(), None)
    warm.note("s2", _caller(thinking={"type": "enabled", "budget_tokens": 2048}), 1_280_000)
    await _settle()
    assert world.asked == []
    assert thinks({"thinking": {"type": "adaptive"}})
    assert not thinks({"thinking": {"type": "disabled"}})
    assert not thinks({})


async def test_an_unknown_session_ends_its_timer_quietly() -> None:
    world = _World()

    async def gone(session_id: str, at: int) -> Any:
        raise KeyError(session_id)

    warm = KeepWarm(gone, world.send, world.clock, world.sleep)
    warm.note("s1", _caller(), 1_280_000)
    await _settle()
    assert world.sent == [] and warm.made == 0


async def test_the_key_is_not_kept_once_no_refresh_is_waiting() -> None:
    world = _World(plan=[(False, None)])
    warm = KeepWarm(world.refresh, world.send, world.clock, world.sleep)
    warm.note("s1", _caller("sk-secret"), 1_280_000)
    await _settle()
    assert world.asked and not world.sent
    assert warm.pending() == {}
    assert "s1" not in warm._callers  # the key held for it is gone
