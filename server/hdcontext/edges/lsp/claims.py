"""Which connection has which session: one connection's chats are not another's.

A TCP daemon serves several connections, each with its own client state (PROTOCOL.md "TCP")
but one store per storage folder. A session is held by the connection whose request first
named it, until that connection closes it (``history/close``, ``history/delete``) or goes
away; every change a connection makes is committed before it is answered, so the next holder
loads exactly what the last one left. For any other connection a held session does not exist:
its requests get -32001, and ``history/list`` leaves it out. Stored sessions nobody holds are
anyone's, which is how a client that reconnects (or a restarted daemon) finds its chats again,
and why a stdio daemon, with its one connection, serves every session in storage as before.

All connections of a process share one ``Claims`` (``CLAIMS``), keyed by storage (a folder or a
database).
"""

from __future__ import annotations

import itertools

from ..storage.location import Location


class Claims:
    def __init__(self) -> None:
        self._holders: dict[tuple[str, str], int] = {}
        self._ids = itertools.count(1)

    def new_holder(self) -> int:
        """An id for a new connection."""
        return next(self._ids)

    def holds(self, where: Location, session_id: str, holder: int) -> bool:
        return self._holders.get((str(where), session_id)) == holder

    def take(self, where: Location, session_id: str, holder: int) -> bool:
        """Hold the session for ``holder``; False if another connection holds it."""
        key = (str(where), session_id)
        current = self._holders.setdefault(key, holder)
        return current == holder

    def visible(self, where: Location, session_id: str, holder: int) -> bool:
        """Whether ``holder`` may see the session (it holds it, or nobody does)."""
        return self._holders.get((str(where), session_id), holder) == holder

    def release(self, where: Location, session_id: str, holder: int) -> None:
        key = (str(where), session_id)
        if self._holders.get(key) == holder:
            del self._holders[key]

    def release_all(self, holder: int) -> None:
        for key in [k for k, h in self._holders.items() if h == holder]:
            del self._holders[key]


CLAIMS = Claims()
