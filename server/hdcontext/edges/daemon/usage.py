"""What the provider billed for a call, told to its session, and a call that never reached it.

A client on the wire reports a call's usage (``history/usage``): it is saved before the
answer. The proxy reads it as the provider's answer ends and only notes it: the figures count
at once (the status, the next compaction's schedule) and are saved with the session's next
commit (its ``calls`` row too, updated before that commit's own call is added), or by
``save_noted``, because a commit of its own would hold up the conversation's next request
(and every other session's, behind it on the store's one thread). A crash loses the last
call's figures at most, never an entry. A call the upstream refused is noted the same way.

With a store other processes share (a gateway's replicas on one database), nothing is only
noted: the conversation's next request may be served by another process, which must read the
call's bill, and what the answer left the session waiting on, in the database, so a noted
report is saved at once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from ...core.cache.billed import UsageCheck
from ...core.cache.rhythm import Waiting, waiting_after
from ...core.session.session import Session
from .sessions import Registry
from .wire import UsageParams, parse_usage

log = logging.getLogger(__name__)


class UsageReports:
    def __init__(self, registry: Registry, notify: Callable[[Session], None]) -> None:
        self._registry = registry
        self._notify = notify
        self._noted: set[str] = set()  # sessions whose usage no commit has saved yet

    async def told(
        self, raw: object, write_1h_tokens: int | None, waiting: Waiting, *, save: bool
    ) -> dict[str, Any]:
        """``history/usage``, saved now (``save``) or noted; the session's status."""
        p = parse_usage(raw)
        waiting = _waiting(p, waiting)
        save = save or self._registry.shared
        async with self._registry.lock(p.session_id):
            session = await self._registry.get(p.session_id)
            if waiting != "unknown":
                session.note_waiting(waiting)
            if save:
                check = await self._registry.commit(
                    session, lambda: _record_usage(session, p, write_1h_tokens)
                )
            else:
                check = _record_usage(session, p, write_1h_tokens)
                self._noted.add(p.session_id)
            _log_check(p.session_id, check)
            self._notify(session)
            return session.status().to_wire()

    async def refused(self, session_id: str) -> bool:
        """The session's last call never reached the model (``Session.call_refused``), noted
        as usage is. False when there was nothing to take back."""
        async with self._registry.lock(session_id):
            session = await self._registry.find(session_id)
            if session is None:
                return False
            if self._registry.shared:  # saved at once, as a usage is (see above)
                if not await self._registry.commit(session, session.call_refused):
                    return False
            elif not session.call_refused():
                return False
            else:
                self._noted.add(session_id)
            self._notify(session)
            return True

    def saved(self, session_id: str) -> None:
        """A commit of the session saved what was noted of it."""
        self._noted.discard(session_id)

    async def save_noted(self, session_id: str | None = None) -> None:
        """Save what was noted and no commit has saved yet (of one session, or of all)."""
        for sid in [session_id] if session_id is not None else sorted(self._noted):
            if sid not in self._noted:
                continue
            async with self._registry.lock(sid):
                self._noted.discard(sid)
                session = await self._registry.find(sid)
                if session is not None:
                    await self._registry.commit(session, lambda: None)


def _record_usage(
    session: Session, p: UsageParams, write_1h_tokens: int | None
) -> UsageCheck | None:
    return session.record_usage(
        p.input_tokens,
        p.cache_read_tokens,
        p.cache_write_tokens,
        p.output_tokens,
        at=p.at,
        write_1h_tokens=write_1h_tokens if write_1h_tokens is not None else p.cache_write_1h_tokens,
    )


def _waiting(p: UsageParams, waiting: Waiting) -> Waiting:
    """What the session waits on: as the edge in this process read it, else as the client's
    ``stopReason`` says."""
    return waiting if waiting != "unknown" else waiting_after(p.stop_reason)


def _log_check(session_id: str, check: UsageCheck | None) -> None:
    if check is not None and check.off:
        # Counts only: a price model that does not fit the provider should show.
        log.info(
            "session %s: the provider read %d of %d input tokens from its cache, "
            "where %d of %d were expected",
            session_id,
            check.billed_read,
            check.billed_tokens,
            check.expected_read,
            check.expected_tokens,
        )
