"""A call's bill saved a moment after it was told, when no commit saves it first.

The proxy tells a session what each call billed at once (``Daemon.note_usage``), and the
session's next commit saves it: an agent's next request usually comes within seconds and would
wait behind a write of its own otherwise. When none comes, the bill is saved on its own
``after_s`` later, soon enough for ``hdcontext stats`` and the page.
"""

from __future__ import annotations

import asyncio
import logging

from ..daemon.daemon import Daemon

log = logging.getLogger(__name__)

AFTER_S = 1.0
"""A call's usage not saved by the conversation's next commit within this long is saved on
its own: soon enough for ``hdcontext stats`` and the page, late enough that an agent's next
request, usually sooner, does not wait behind a write of its own."""


class SaveSoon:
    def __init__(self, daemon: Daemon, after_s: float = AFTER_S) -> None:
        self.daemon = daemon
        self.after_s = after_s
        self._timers: dict[str, asyncio.TimerHandle] = {}  # usage noted, not saved yet
        self._saves: set[asyncio.Future[None]] = set()  # those saving now

    def soon(self, session_id: str) -> None:
        """Save what the daemon noted ``after_s`` from now, unless a save waits already (a
        commit meanwhile saves it sooner)."""
        if session_id not in self._timers:
            loop = asyncio.get_running_loop()
            self._timers[session_id] = loop.call_later(self.after_s, self._save, session_id)

    def _save(self, session_id: str) -> None:
        del self._timers[session_id]
        task = asyncio.ensure_future(self._save_noted(session_id))
        self._saves.add(task)
        task.add_done_callback(self._saves.discard)

    async def _save_noted(self, session_id: str) -> None:
        try:
            await self.daemon.save_noted(session_id)  # nothing to do if a commit saved it
        except Exception as exc:  # the next commit saves it
            log.warning("usage of %s not saved yet: %s", session_id, type(exc).__name__)

    async def now(self) -> None:
        """Save now the usage still waiting: before the proxy stops, and for a reader that
        must see every call's bill on disk (the page, tests)."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        await asyncio.gather(*self._saves)
        await self.daemon.save_noted()
