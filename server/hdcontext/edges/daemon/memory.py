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
PACKED_RELEASE = 512 * 1024
"""So is packing, once it has saved this much since the last trim (a trim gives back what
the proxy keeps for its next request too: not after every turn's few kilobytes)."""


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


def configure(mmap_threshold: int = MMAP_THRESHOLD, trim_threshold: int | None = None) -> None:
    """Fix the thresholds, once, at the start of the daemon (the trim threshold: twice the
    mmap one unless said)."""
    if _LIBC is None:
        return
    trim = 2 * mmap_threshold if trim_threshold is None else trim_threshold
    ok = _LIBC.mallopt(M_MMAP_THRESHOLD, mmap_threshold) and _LIBC.mallopt(M_TRIM_THRESHOLD, trim)
    if not ok:
        log.info("mallopt refused the thresholds; memory is returned lazily")


PROXY_MMAP_THRESHOLD = 32 * 1024 * 1024
"""The proxy's: every request is a body of megabytes read, rewritten and sent on, back to
back. A buffer mapped afresh for each (as ``MMAP_THRESHOLD`` has it) is a page fault per 4
KiB and the kernel clearing every page: a 3 MB body copied once took 4.4 ms that way against
0.5 ms in memory the heap had already (its socket reads, of 256 KiB, were mapped afresh
too). Buffers up to this size come from the heap and are used again; glibc's own ceiling
for a threshold it raises by itself."""
PROXY_TRIM_THRESHOLD = 64 * 1024 * 1024
"""Free memory at the heap's top is kept up to this much (a few requests' buffers), so the
next request does not fault it back in; ``release`` after a conversation taken in whole
gives what is free back all the same."""


def release() -> None:
    """Return the free pages of the heap to the system (after a large request)."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
