"""The owners this process has served, written to the store for ``hdcontext stats``.

One row per owner (``identity.Owner.to_json``: ids, aliases, the key's hash shortened) in the
store's ``owners`` table (``edges/stats/owners.py``), which every replica on a database shares.
A row is written when this process first serves the owner, when the owner's record changes (a
key renamed, a user moved to another team), and again once ``SEEN_EVERY_MS`` has passed since
this process last wrote it, so that the retention, which keeps an owner while it has a session
or was seen since, sees the owner as alive. So writes are rare: each is off the request's way,
one batch at a time, the latest records winning. The rows go with the retention's pruning
(``Store.forget_owners``), not here.
"""

from __future__ import annotations

import asyncio
import logging

from ..edges.stats.owners import owner_row
from ..edges.storage.records import OwnerRow, now_ms
from ..edges.storage.store import Store
from .identity import Owner

log = logging.getLogger(__name__)

SEEN_EVERY_MS = 12 * 3600 * 1000
"""How often an owner already written is written again (its ``seen``), while it is served."""


class OwnerBook:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._written: dict[str, tuple[dict[str, str], int]] = {}
        """By tag: the record this process last wrote, and when."""
        self._waiting: dict[str, OwnerRow] = {}
        self._writing: asyncio.Task[None] | None = None

    def note(self, owner: Owner) -> None:
        """``owner`` served a request: written if it is new here, changed, or last written
        more than ``SEEN_EVERY_MS`` ago."""
        tag, record, now = owner.tag, owner.to_json(), now_ms()
        written = self._written.get(tag)
        if written is not None and written[0] == record and now - written[1] < SEEN_EVERY_MS:
            return
        self._written[tag] = (record, now)
        self._waiting[tag] = owner_row(tag, record, now)
        if self._writing is None or self._writing.done():
            self._writing = asyncio.ensure_future(self._write())

    async def _write(self) -> None:
        while self._waiting:
            rows, self._waiting = list(self._waiting.values()), {}
            try:
                await self.store.put_owners(rows)
            except Exception as exc:  # the sessions still say their owner's tag
                for row in rows:  # written again when the owner next comes
                    self._written.pop(row.tag, None)
                log.warning("hdcontext: the owners were not written: %s", type(exc).__name__)

    async def flush(self) -> None:
        """Wait for the writes under way (the last one included)."""
        while self._writing is not None and not self._writing.done():
            await asyncio.wait({self._writing})
