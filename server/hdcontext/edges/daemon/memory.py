"""Giving memory back to the system after a large request (glibc only; elsewhere a no-op).

A daemon that has taken a session of megabytes in one request keeps far more resident than
the session needs: glibc raises its mmap threshold after the first large buffer is freed, so
later large buffers (a request body, a reply) come from the heap and stay there when freed,
and the temporary objects of parsing leave free pages between the ones that live on. Two
calls fix that: a fixed mmap threshold (large buffers are mapped, and unmapped when freed),
and ``malloc_trim`` after a large request (free pages in the heap go back to the system).
The trim walks the heap (about a millisecond for a large session), so it is done only after
requests that brought a lot in, never on every turn.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import sys

log = logging.getLogger(__name__)

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 128 * 1024
"""glibc's own starting value; fixing it stops glibc from raising it after a large free."""

LARGE_APPEND = 256
"""An append of at least this many entries is followed by a trim."""


def _glibc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.malloc_trim  # noqa: B018 - musl and others have no malloc_trim
        libc.mallopt  # noqa: B018
    except (OSError, AttributeError):
        return None
    return libc


_LIBC = _glibc()


def configure() -> None:
    """Fix the thresholds, once, at the start of the daemon."""
    if _LIBC is None:
        return
    ok = _LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) and _LIBC.mallopt(
        M_TRIM_THRESHOLD, 2 * MMAP_THRESHOLD
    )
    if not ok:
        log.info("mallopt refused the thresholds; memory is returned lazily")


def release() -> None:
    """Return the free pages of the heap to the system (after a large request)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
