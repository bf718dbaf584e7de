"""One daemon per storage folder: an exclusive lock on a file in it, held while in use.

Two daemons on one folder each keep their own picture of a session in memory and write it
back: the second failed later with a SQLite IntegrityError, and an acknowledged entry could
vanish from the working view when the older picture was saved over the newer. So the first
daemon to use a folder takes ``hdcontext.lock`` (``flock``, exclusive, never waited for) and
writes its pid into it; any other process that tries is told which pid holds it. The kernel
drops the lock when the holder dies, even by SIGKILL, so a crash never leaves it stuck.

Within one process every connection that names the folder shares the lock (TCP connections
of one daemon share its store): the lock is counted, taken on the first ``acquire`` and given
back on the last ``release``. ``flock`` belongs to an open file, not to the process, so a
second open of the file here would refuse this very process; the count avoids that.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import threading
from dataclasses import dataclass
from pathlib import Path

LOCK_NAME = "hdcontext.lock"


class StorageLocked(RuntimeError):
    """Another process holds the folder."""

    def __init__(self, folder: Path, pid: int | None) -> None:
        self.folder = folder
        self.pid = pid
        holder = f"pid {pid}" if pid is not None else "a pid it did not record"
        super().__init__(
            f"the storage folder {folder} is in use by another hdcontext daemon ({holder}); "
            "one daemon per storage folder"
        )


@dataclass
class _Held:
    fd: int
    count: int


_held: dict[str, _Held] = {}
_guard = threading.Lock()


def acquire(folder: Path) -> None:
    """Take (or count once more) the lock of an existing folder; StorageLocked if another
    process has it, OSError if the lock file cannot be made (a symlink is refused)."""
    key = str(folder)
    with _guard:
        held = _held.get(key)
        if held is not None:
            held.count += 1
            return
        fd = os.open(
            folder / LOCK_NAME,
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _recorded_pid(fd)
            os.close(fd)
            raise StorageLocked(folder, pid) from None
        except BaseException:
            os.close(fd)
            raise
        with contextlib.suppress(OSError):
            os.fchmod(fd, 0o600)
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        _held[key] = _Held(fd, 1)


def release(folder: Path) -> None:
    """Give back one ``acquire``; the lock goes with the last."""
    key = str(folder)
    with _guard:
        held = _held.get(key)
        if held is None:
            return
        held.count -= 1
        if held.count > 0:
            return
        del _held[key]
        os.close(held.fd)  # closing the only open file of the lock releases it


def held_here(folder: Path) -> bool:
    with _guard:
        return str(folder) in _held


def _recorded_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
