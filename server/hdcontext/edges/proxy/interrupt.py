"""Serving until the user stops it: ``hdcontext proxy`` and ``hdcontext stats --serve``."""

from __future__ import annotations

import asyncio
import contextlib
import signal


async def until_interrupted() -> None:
    """Return on Ctrl-C or SIGTERM, so that the caller's ``finally`` closes what it opened
    (where the loop cannot take signal handlers, KeyboardInterrupt still ends the run)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)
    await stop.wait()
