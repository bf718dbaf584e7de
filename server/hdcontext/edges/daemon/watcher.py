"""File writes seen on disk, which make earlier reads of those files stale (READ→WRITE pruning).

Two sources report writes: watchfiles over every workspace folder (while ``watch.enabled``),
the one source of writes seen on disk, and the editor's ``textDocument/didSave``. And because
a watcher reports a change only after its debounce, ``history/compact`` also settles the files
its history read: a file whose modification time is later than its read was written after it,
whether or not the event has arrived yet (or arrived while the daemon was not running).

A write's time is the file's modification time when it still exists, else the time it was seen:
the time the event was delivered can be well after the write, and an agent that wrote a file
and read it back within that delay must not see its fresh read treated as stale.

Directories that are not the user's sources (``.git``, ``node_modules``, virtual environments,
caches) are skipped: their churn says nothing about files an agent read. Only this module
touches the disk for events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from functools import lru_cache

from watchfiles import Change, watch

from ...core.tools.files import resolve_path

log = logging.getLogger(__name__)

IGNORED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".jj",
        "node_modules",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        "site-packages",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
        ".direnv",
        ".eggs",
        ".idea",
        ".gradle",
    }
)
"""Directory names whose contents never count (VCS data, dependencies, environments, caches)."""

_IGNORED_NAME = re.compile(r"(\.sw[a-p]|\.swx|~|\.tmp|\.pyc)$|^\.#|^4913$")
"""Editors' swap, backup and probe files, and bytecode: never what an agent read."""

DEBOUNCE_MS = 200
STOP_WAIT_S = 5.0


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def write_time(path: str, seen: int | None = None) -> int:
    """When ``path`` was written: its mtime, or ``seen`` (default now) if it is gone."""
    try:
        return os.stat(path).st_mtime_ns // 1_000_000
    except OSError:
        return now_ms() if seen is None else seen


@lru_cache(maxsize=4096)
def _is_venv(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "pyvenv.cfg"))


def ignored(path: str, roots: Sequence[str]) -> bool:
    """Whether a changed path lies in a skipped directory or is an editor's scratch file.

    Only the part below the workspace folder is judged: a workspace that itself lives under
    a directory called ``venv`` still has its files watched.
    """
    base = next((r for r in roots if path == r or path.startswith(r.rstrip("/") + "/")), "")
    rel = path[len(base) :].strip("/") if base else path.strip("/")
    parts = rel.split("/") if rel else []
    if any(p in IGNORED_DIRS or p.endswith(".egg-info") for p in parts[:-1]):
        return True
    if parts and _IGNORED_NAME.search(parts[-1]):
        return True
    directory = base or "/"
    for part in parts[:-1]:
        directory = os.path.join(directory, part)
        if _is_venv(directory):
            return True
    return False


# -- settling at compact time -------------------------------------------------------------------

PSEUDO_FILESYSTEMS = ("/proc", "/sys", "/dev")
"""Where the kernel makes files up as they are looked at: a file's modification time there is
when the kernel made the entry (for procfs, about the first look since boot), not a write, so
it says nothing about whether what an agent read (``cat /proc/version``) is still so."""


def says_nothing_about_writes(path: str) -> bool:
    return any(path == top or path.startswith(top + "/") for top in PSEUDO_FILESYSTEMS)


def _modified_after(reads: dict[str, int]) -> list[tuple[str, int]]:
    out: list[tuple[str, int]] = []
    for path, read_at in reads.items():
        if not os.path.isabs(path):
            continue  # no workspace folder to resolve it against: not a file we can find
        if says_nothing_about_writes(path):
            continue
        try:
            mtime = os.stat(path).st_mtime_ns // 1_000_000
        except OSError:
            continue  # never existed, or gone: only an event can say when it went
        if mtime > read_at:
            out.append((path, mtime))
    return out


INLINE_STATS = 64
"""Up to this many files are looked at on the event loop: a few ``stat`` calls cost less
than handing them to a thread (which, on a busy machine, costs milliseconds)."""


async def writes_after_reads(reads: dict[str, int]) -> list[tuple[str, int]]:
    """The read files modified after their earliest read, with their modification times."""
    if not reads:
        return []
    if len(reads) <= INLINE_STATS:
        return _modified_after(reads)
    return await asyncio.to_thread(_modified_after, reads)


# -- watchfiles ---------------------------------------------------------------------------------


class DiskWatcher:
    """watchfiles over the workspace folders; reports ``on_write(path, time_ms)``.

    Started after ``initialized``, restarted when the folders or ``watch.enabled`` change,
    stopped on ``shutdown``. It runs on a thread of its own: setting up the OS watches of a
    large tree takes a while, and the event loop must keep answering meanwhile. A watcher
    that cannot start or dies (a folder gone, the OS out of inotify watches) is reported
    through ``on_error`` and the daemon goes on without it: compaction still settles the
    files it read, and the editor's events still arrive.
    """

    def __init__(
        self,
        on_write: Callable[[str, int], None],
        on_error: Callable[[str], None] = lambda message: None,
        debounce_ms: int = DEBOUNCE_MS,
    ) -> None:
        self._on_write = on_write
        self._on_error = on_error
        self._debounce = debounce_ms
        self._thread: threading.Thread | None = None
        self._stop: threading.Event | None = None
        self._watching: tuple[str, ...] = ()

    @property
    def watching(self) -> tuple[str, ...]:
        return self._watching if self._thread is not None else ()

    async def update(self, roots: Iterable[str], enabled: bool) -> None:
        wanted = tuple(r for r in dict.fromkeys(roots) if os.path.isdir(r)) if enabled else ()
        if wanted == self.watching:
            return
        await self.stop()
        if wanted:
            self._start(wanted, asyncio.get_running_loop())

    def _start(self, roots: tuple[str, ...], loop: asyncio.AbstractEventLoop) -> None:
        self._stop = threading.Event()
        self._watching = roots
        self._thread = threading.Thread(
            target=self._run,
            args=(roots, self._stop, loop),
            name="hdcontext-watcher",
            daemon=True,
        )
        self._thread.start()

    async def stop(self) -> None:
        thread, stop = self._thread, self._stop
        self._thread, self._stop, self._watching = None, None, ()
        if thread is None or stop is None:
            return
        stop.set()  # watchfiles checks it every step (50 ms)
        await asyncio.to_thread(thread.join, STOP_WAIT_S)

    def _run(
        self, roots: tuple[str, ...], stop: threading.Event, loop: asyncio.AbstractEventLoop
    ) -> None:
        def keep(change: Change, path: str) -> bool:
            return not ignored(path, roots)

        try:
            for changes in watch(
                *roots,
                watch_filter=keep,
                debounce=self._debounce,
                step=50,
                stop_event=stop,
                raise_interrupt=False,
                ignore_permission_denied=True,
            ):
                loop.call_soon_threadsafe(self._deliver, changes)
        except Exception as exc:  # the daemon goes on without the watcher
            if not stop.is_set():
                log.warning("file watcher stopped: %s", type(exc).__name__)
                message = f"hdcontext: watching {', '.join(roots)} failed: {exc}"
                with contextlib.suppress(RuntimeError):  # the loop may be closing
                    loop.call_soon_threadsafe(self._on_error, message)

    def _deliver(self, changes: set[tuple[Change, str]]) -> None:
        seen = now_ms()
        for change, path in changes:
            when = seen if change == Change.deleted else write_time(path, seen)
            self._on_write(resolve_path(path, ""), when)
