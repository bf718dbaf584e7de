"""How long the daemon keeps a conversation nobody uses: ``--retention-days``.

Every session is kept on disk (so a conversation resumes after a restart, and a summary's
transcript pointer stays good), and without a limit a proxy in front of an agent would keep
every conversation it ever saw. So a session idle (no request changed it) for longer than the
retention is deleted, scrubbed from the file (``Store.delete_sessions``): at start, then once
a day. ``forever`` keeps everything; ``0`` keeps a conversation only while it is in use: it
goes once idle for an hour, the longest a provider's prompt cache lasts, after which what the
session knew of that cache is worth nothing; and the sessions a daemon served go when it stops
(a daemon killed leaves them to the next start's pruning), but in a database other processes
share, where another replica may be serving them: there they go once idle for the hour.

The default, 30 days, is what Claude Code keeps its own transcripts for.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)

DEFAULT_DAYS = 30
FOREVER = "forever"
DAY_MS = 24 * 3600 * 1000
IN_USE_MS = 3600 * 1000
"""``0``: how long a conversation counts as in use after its last request (an hour: the
longest prompt cache a provider offers)."""
DAILY_S = 24 * 3600.0
IN_USE_CHECK_S = 300.0


@dataclass(frozen=True)
class Retention:
    days: int | None = DEFAULT_DAYS
    """Days a session is kept once idle; ``None``: forever; 0: only while in use."""

    @property
    def idle_ms(self) -> int | None:
        """How long a session may stay idle before it is deleted (``None``: no limit)."""
        if self.days is None:
            return None
        return self.days * DAY_MS if self.days > 0 else IN_USE_MS

    @property
    def every_s(self) -> float:
        """How often the daemon looks for idle sessions."""
        return IN_USE_CHECK_S if self.days == 0 else DAILY_S

    def describe(self) -> str:
        """For a notice or a log line: what becomes of an idle conversation."""
        if self.days is None:
            return "kept until you delete them (retention: forever)"
        if self.days == 0:
            return "deleted once idle for an hour, and when the daemon stops (retention: 0)"
        unit = "day" if self.days == 1 else "days"
        return f"deleted once idle for {self.days} {unit}"


def parse_days(text: str) -> int | None:
    """``--retention-days``: a whole number of days (0 or more) or ``forever`` (``None``);
    ValueError with the reason otherwise."""
    if text.strip().lower() == FOREVER:
        return None
    try:
        days = int(text)
    except ValueError:
        raise ValueError(f"not a whole number of days or 'forever': {text!r}") from None
    if days < 0:
        raise ValueError(f"must be 0 or more: {days}")
    return days


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Pruner:
    """Runs ``prune(idle_before)`` at start and then every ``retention.every_s``, in the
    background: a request never waits on it (each deletion takes its session's lock, as a
    request does)."""

    def __init__(self, retention: Retention, prune: Callable[[int], Awaitable[int]]) -> None:
        self.retention = retention
        self._prune = prune
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.retention.idle_ms is not None and self._task is None:
            self._task = asyncio.ensure_future(self._run())

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        await asyncio.wait([task])  # it ends cancelled; a deletion in flight has committed

    async def once(self) -> int:
        """Delete what is idle past the retention now; how many sessions went."""
        idle = self.retention.idle_ms
        if idle is None:
            return 0
        deleted = await self._prune(now_ms() - idle)
        if deleted:
            log.info(
                "retention: %d idle session%s deleted (%s)",
                deleted,
                "" if deleted == 1 else "s",
                self.retention.describe(),
            )
        return deleted

    async def _run(self) -> None:
        while True:
            try:
                await self.once()
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failed pass is tried again at the next one
                log.warning("retention: pruning failed: %s", type(exc).__name__)
            await asyncio.sleep(self.retention.every_s)
