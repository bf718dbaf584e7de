"""What the compactor keeps in memory from one request to the next, and how much of it.

Two things, each the ones used last: the memos (a conversation's previous request, so that the
next one costs what it adds) and the sessions the daemon keeps loaded (the others stay in the
storage and are loaded again when their agent comes back). How many is a ``Capacity``: one
person's proxy serves a handful of conversations at once, and its defaults keep memory small; a
team's gateway serves many at once, and a conversation that falls out between two of its
requests is read whole and its session loaded again, which costs far more than the memory.

Unloading a session lets the garbage collector see what it held (the proxy freezes what it
keeps, ``memory.py``): a full collection, then the freed memory handed back. In the proxy's
small heap that is a few milliseconds; in a LiteLLM worker's heap, hundreds of thousands of
LiteLLM's objects, it is tens, so there it is done at most every ``collect_every_s``.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ..daemon import memory
from ..daemon.daemon import Daemon


class _Sized(Protocol):
    @property
    def size(self) -> int: ...


M = TypeVar("M", bound=_Sized)


@dataclass(frozen=True)
class Capacity:
    memos: int = 8
    """Conversations whose previous request is kept."""
    memo_bytes: int = 48 * 1024 * 1024
    """All memos together, about (their bodies and the messages sent): the oldest go first."""
    sessions: int = 8
    """Sessions kept loaded in the daemon."""
    collect_every_s: float = 0.0
    """The least time between two collections after an unload (0: after each)."""


PROXY = Capacity()
"""``hdcontext proxy``: one person's agents."""
GATEWAY = Capacity(memos=128, memo_bytes=256 * 1024 * 1024, sessions=128, collect_every_s=30.0)
"""A team's gateway (``hdcontext.litellm``): many conversations at once, in LiteLLM's heap."""


class Kept(Generic[M]):
    def __init__(self, daemon: Daemon, capacity: Capacity = PROXY) -> None:
        self.daemon = daemon
        self.capacity = capacity
        self.memos: OrderedDict[str, M] = OrderedDict()
        self.sessions: OrderedDict[str, None] = OrderedDict()
        self._collected = 0.0

    def keep(self, session: str, memo: M, oldest: bool = False) -> None:
        """Keep ``memo`` as the latest used (``oldest``: as the least recently used, for a
        conversation of the last run, taken in after the more recent ones)."""
        self.memos[session] = memo
        self.memos.move_to_end(session, last=not oldest)
        total = sum(m.size for m in self.memos.values())
        most, most_bytes = self.capacity.memos, self.capacity.memo_bytes
        while len(self.memos) > 1 and (len(self.memos) > most or total > most_bytes):
            _, dropped = self.memos.popitem(last=False)
            total -= dropped.size

    async def hold(self, session: str, oldest: bool = False) -> None:
        """Mark ``session`` used (``oldest``: as the least recently used); unload the least
        recently used sessions past the capacity (they stay in the daemon's storage)."""
        self.sessions[session] = None
        self.sessions.move_to_end(session, last=not oldest)
        unloaded = False
        while len(self.sessions) > self.capacity.sessions:
            idle, _ = self.sessions.popitem(last=False)
            if self.daemon.registry.lock(idle).locked():
                continue  # a request for it is running: it stays loaded for now
            with contextlib.suppress(Exception):  # unloading is a saving, not a duty
                await self.daemon.save_noted(idle)
                await self.daemon.close({"sessionId": idle})
                unloaded = True
        if unloaded:
            self._collect()

    def _collect(self) -> None:
        """What the unloaded sessions held may be frozen: let the collector see it, once,
        then what is left stays out of its walks again, and what it freed goes back to the
        system."""
        now = time.monotonic()
        if self._collected and now - self._collected < self.capacity.collect_every_s:
            return
        self._collected = now
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        memory.release()
