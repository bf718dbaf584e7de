"""``hdcontext proxy --keep-warm``: the refresh calls the daemon names, made for the agent.

A pause longer than the prompt cache's lifetime makes the next call write the whole
conversation again. When one small call before the entry dies costs less than that rewrite,
weighed by how likely the session is to come back at all, the daemon names the moment in
``cache.refreshAt`` (``core/cache/refresh.py`` decides; ``history/refresh`` gives the request).
A refresh call is one the user did not make and pays for, so it is off unless the proxy was
started with ``--keep-warm``, and then:

- it is made with the key of the session's last request, held in memory only (never written,
  never logged) and forgotten when the session is deleted, unloaded or the proxy stops;
- it sends what the provider holds, then one short user line, and asks for one output token;
- a session whose last request let the model think is not refreshed: the call would have to
  think too (changing the thinking parameters would miss the cache), and what the model
  thinks is billed as output, which could cost more than the rewrite it saves;
- the daemon decides again at the moment itself (``history/refresh`` answers with an empty
  history when the refresh no longer pays, and it bounds refreshes per pause and stops after
  the session has been idle ``cache.refreshIdleSeconds``); the usage goes to ``history/usage``
  as any call's, so the savings count what refreshing cost;
- the log says that a refresh was made, for which session, its status and usage: no content.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from multidict import CIMultiDict

from ...core.session.reply import CompactResult

log = logging.getLogger(__name__)

REFRESH_TEXT = "(hdcontext keeps the prompt cache warm: answer with one word)"
"""The user line a refresh call ends with: short, and plainly not the user's."""


@dataclass(frozen=True)
class Caller:
    """What a refresh call needs of the session's last request, kept in memory only."""

    api: str
    """``anthropic``: the one API whose refresh calls the proxy makes."""
    path: str
    headers: CIMultiDict[str]
    """The request's headers as they went upstream (the key among them)."""
    params: Mapping[str, Any]
    """The request's body less its ``messages``: model, system, tools, parameters."""


def thinks(params: Mapping[str, Any]) -> bool:
    """Whether the request lets the model think (a refresh of it would have to as well)."""
    thinking = params.get("thinking")
    return isinstance(thinking, Mapping) and thinking.get("type") not in (None, "disabled")


Send = Callable[[str, Caller, CompactResult, int], Awaitable[None]]
"""Makes the refresh call of a session (``Caller``, with ``history/refresh``'s result, at a
moment in ms), and reports its usage to the daemon."""
Refresh = Callable[[str, int], Awaitable[CompactResult]]
"""``history/refresh`` for a session at a moment (ms)."""


class KeepWarm:
    """One timer a session, set from each compaction's ``refreshAt``, moved by each call."""

    def __init__(
        self,
        refresh: Refresh,
        send: Send,
        clock: Callable[[], int],
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self._refresh = refresh
        self._send = send
        self._clock = clock
        self._sleep = sleep
        self._timers: dict[str, asyncio.Task[None]] = {}
        self._callers: dict[str, Caller] = {}
        self.made = 0
        """Refresh calls made (for the log and the tests)."""

    def note(self, session_id: str, caller: Caller, refresh_at: int | None) -> None:
        """A call of the session went out: its timer starts again from ``refresh_at``."""
        self._cancel(session_id)
        if refresh_at is None or caller.api != "anthropic" or thinks(caller.params):
            self._callers.pop(session_id, None)
            return
        self._callers[session_id] = caller
        self._timers[session_id] = asyncio.ensure_future(self._run(session_id, refresh_at))

    def forget(self, session_id: str) -> None:
        """The session is gone (deleted, unloaded): its key and its timer with it."""
        self._cancel(session_id)
        self._callers.pop(session_id, None)

    async def close(self) -> None:
        for session_id in list(self._timers):
            self.forget(session_id)
        await asyncio.sleep(0)

    def pending(self) -> dict[str, bool]:
        """Sessions with a refresh waiting (for the tests): whether its timer runs."""
        return {s: not t.done() for s, t in self._timers.items()}

    def _cancel(self, session_id: str) -> None:
        timer = self._timers.pop(session_id, None)
        if timer is not None and not timer.done() and timer is not asyncio.current_task():
            timer.cancel()

    async def _run(self, session_id: str, refresh_at: int) -> None:
        try:
            await self._refreshes(session_id, refresh_at)
        finally:
            # Done (nothing pays, the session is gone, a call failed): the key is not kept
            # longer than a refresh may need it. A timer replaced by a newer call's leaves
            # the newer one's caller alone.
            if self._timers.get(session_id) is asyncio.current_task():
                del self._timers[session_id]
                self._callers.pop(session_id, None)

    async def _refreshes(self, session_id: str, refresh_at: int) -> None:
        at: int | None = refresh_at
        while at is not None:
            wait_s = max(0.0, (at - self._clock()) / 1000)
            await self._sleep(wait_s)
            caller = self._callers.get(session_id)
            if caller is None:
                return
            now = self._clock()
            try:
                result = await self._refresh(session_id, now)
            except Exception as exc:  # an unknown session (deleted), a clock gone back
                log.info("keep-warm %s: no refresh (%s)", session_id, type(exc).__name__)
                return
            if not result.history.blobs:
                log.debug("keep-warm %s: a refresh does not pay now", session_id)
                return
            try:
                await self._send(session_id, caller, result, now)
            except Exception as exc:  # the agent's own next call is unaffected
                log.warning("keep-warm %s: the refresh call failed: %s", session_id, exc)
                return
            self.made += 1
            at = result.cache.refresh_at
