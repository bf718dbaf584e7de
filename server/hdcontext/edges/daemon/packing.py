"""What a compaction let go of, packed once its session has been idle a moment after it.

``Session.pack_left`` packs the transcript's entries the working view no longer holds: memory,
not the answer's time (a zlib pass of some milliseconds at a large first compaction), so it
waits until the session has been idle ``PACK_AFTER_S``, and a compaction meanwhile puts it off.
"""

from __future__ import annotations

import asyncio

from . import memory
from .sessions import Registry

PACK_AFTER_S = 1.0
"""How long a session is left idle after a compaction before what it let go of is packed."""


class Packer:
    def __init__(self, registry: Registry) -> None:
        self._registry = registry
        self._packs: dict[str, asyncio.TimerHandle] = {}  # sessions with entries to pack
        self._packing: set[asyncio.Task[int]] = set()
        self._packed_bytes = 0  # saved by packing since the last trim

    def soon(self, session_id: str) -> None:
        """Pack what the compaction let go of once the session has been idle
        ``PACK_AFTER_S`` (a compaction meanwhile puts it off)."""
        handle = self._packs.pop(session_id, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        self._packs[session_id] = loop.call_later(PACK_AFTER_S, self._pack, session_id)

    def _pack(self, session_id: str) -> None:
        self._packs.pop(session_id, None)
        task = asyncio.ensure_future(self.pack_left(session_id))
        self._packing.add(task)
        task.add_done_callback(self._packing.discard)

    async def pack_left(self, session_id: str) -> int:
        """``Session.pack_left`` of a loaded session, under its lock: the bytes it saved (0
        for a session no longer loaded). Nothing is saved to disk: the store holds the JSON.
        What the packed entries took is freed after everything around it was made, so the
        heap keeps it unless trimmed: after ``memory.PACKED_RELEASE`` bytes (from one
        session or several), a trim."""
        async with self._registry.lock(session_id).here:  # nothing stored: no other process's
            session = self._registry.loaded_session(session_id)
            saved = 0 if session is None else session.pack_left()
        self._packed_bytes += saved
        if self._packed_bytes >= memory.PACKED_RELEASE:
            self._packed_bytes = 0
            memory.release()
        return saved

    async def stop(self) -> None:
        """Pack nothing more; wait for the packing under way."""
        for handle in self._packs.values():
            handle.cancel()
        self._packs.clear()
        await asyncio.gather(*self._packing, return_exceptions=True)
