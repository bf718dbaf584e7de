"""The owners this process has served, kept in the storage folder for ``hdcontext stats``.

One record per owner (``identity.Owner.to_json``: ids, aliases, the key's hash shortened),
written to the folder's ``owners.json`` (``edges/stats/owners.py``) when an owner first comes or
its record changes (a key renamed, a user moved to another team): rarely, so each write is the
whole file, off the event loop, one at a time, the latest records winning. At start the file
is read and cut to the owners that still have a session in the store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..edges.stats.owners import kept_for, read_owners, write_owners
from .identity import Owner

log = logging.getLogger(__name__)


class OwnerBook:
    def __init__(self, folder: Path, records: dict[str, dict[str, Any]]) -> None:
        self.folder = folder
        self._records = records
        self._writing: asyncio.Task[None] | None = None
        self._again = False
        """A record changed while the file was being written: it is written once more."""

    @classmethod
    async def open(cls, folder: Path, sessions: Sequence[str]) -> OwnerBook:
        """The book of ``folder``, its owners cut to those with one of ``sessions``."""
        found = await asyncio.to_thread(read_owners, folder)
        book = cls(folder, kept_for(found, sessions))
        if book._records != found:
            book._write()
        return book

    @property
    def records(self) -> dict[str, dict[str, Any]]:
        return dict(self._records)

    def note(self, owner: Owner) -> None:
        """``owner`` served a request: recorded, and written if it is new or changed."""
        tag, record = owner.tag, owner.to_json()
        if self._records.get(tag) == record:
            return
        self._records[tag] = record
        self._write()

    def _write(self) -> None:
        if self._writing is not None and not self._writing.done():
            self._again = True
            return
        self._again = False
        self._writing = asyncio.ensure_future(self._written(dict(self._records)))

    async def _written(self, records: dict[str, dict[str, Any]]) -> None:
        try:
            await asyncio.to_thread(write_owners, self.folder, records)
        except OSError as exc:  # the sessions still say their owner's tag
            log.warning("hdcontext: the owners were not written: %s", type(exc).__name__)
        if self._again:
            self._again = False
            self._writing = asyncio.ensure_future(self._written(dict(self._records)))

    async def flush(self) -> None:
        """Wait for the writes under way (the last one included)."""
        while self._writing is not None and not self._writing.done():
            await asyncio.wait({self._writing})
