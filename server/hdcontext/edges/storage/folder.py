"""The storage folder: where the SQLite store keeps the sessions, private to the user.

Created 0700, its files 0600 (an older, wider folder is narrowed when opened); nothing in it is
followed as a symlink: a link where the database, its journals, the lock or the transcripts
belong is refused, so that nobody with a way to plant one can make the daemon write elsewhere.
The transcripts an LLM summary points to are exported here too, one JSONL file a session.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path

from ...core.history.stored import Blob
from . import storage_lock
from .records import StoreError

DB_NAME = "hdcontext.sqlite3"
TRANSCRIPTS_DIR = "transcripts"
TOKEN_NAME = "tcp-token"
"""Where ``serve --tcp`` writes the token it made up (tcp.py)."""
NOTICE_NAME = "storage-notice-shown"
"""Made when ``hdcontext proxy`` first said that it keeps conversations here (``mark_once``)."""
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
PRIVATE_UMASK = 0o077
"""Everything the daemon creates is the user's alone (the store narrows its own files too)."""
_DB_FILES = (DB_NAME, f"{DB_NAME}-wal", f"{DB_NAME}-shm", f"{DB_NAME}-journal")
_OWN_NAMES = (*_DB_FILES, TRANSCRIPTS_DIR, storage_lock.LOCK_NAME, TOKEN_NAME, NOTICE_NAME)


def prepare_folder(folder: Path) -> None:
    """Make ``folder`` a private storage folder: created 0700, or narrowed to 0700 (its files
    to 0600) when it exists; StoreError for a link inside it, OSError or ValueError for a
    folder that cannot be made."""
    if "\x00" in str(folder):
        raise ValueError("the path contains a NUL character")
    folder.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
    info = folder.stat()
    if not stat.S_ISDIR(info.st_mode):  # pragma: no cover - mkdir refuses a file already
        raise NotADirectoryError(20, "Not a directory")
    _make_private(folder, info, PRIVATE_DIR)
    for name in _OWN_NAMES:
        path = folder / name
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise StoreError(
                f"{path} is a symbolic link: the daemon follows none in its storage folder"
            )
        _make_private(path, info, PRIVATE_DIR if stat.S_ISDIR(info.st_mode) else PRIVATE_FILE)
    transcripts = folder / TRANSCRIPTS_DIR
    if transcripts.is_dir():
        with os.scandir(transcripts) as found:
            for item in found:
                if item.is_file(follow_symlinks=False):
                    _make_private(Path(item.path), item.stat(follow_symlinks=False), PRIVATE_FILE)


def mark_once(folder: Path, name: str) -> bool:
    """Make the empty file ``name`` in a prepared storage folder: True if this call made it,
    False if it was there (so what it stands for was done before). Made 0600, through no
    link; a folder where it cannot be made answers True, so a notice is said, not lost."""
    try:
        fd = os.open(
            folder / name,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            PRIVATE_FILE,
        )
    except FileExistsError:
        return False
    except OSError:
        return True
    os.close(fd)
    return True


def _make_private(path: Path, info: os.stat_result, mode: int) -> None:
    """Narrow what a former daemon (or a wide umask) left open to others, if it is ours."""
    if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) & ~mode:
        os.chmod(path, stat.S_IMODE(info.st_mode) & mode)


def folder_problem(folder: Path, exc: BaseException) -> str:
    """Why a storage folder cannot be used, as a client should read it (no traceback)."""
    if isinstance(exc, FileExistsError | NotADirectoryError):
        why = "it, or a folder on its path, is a file"
    elif isinstance(exc, OSError) and exc.strerror:
        why = exc.strerror[0].lower() + exc.strerror[1:]
    else:
        why = str(exc)
    return f"cannot use the storage folder {folder}: {why}"


def transcript_file(transcripts: Path, session_id: str) -> Path:
    """A file name in ``transcripts`` that any session id maps to safely and uniquely."""
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", session_id)[:48].strip("._") or "session"
    digest = hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:16]
    return transcripts / f"{readable}-{digest}.jsonl"


def write_transcript(path: Path, entries: Sequence[Blob]) -> bool:
    """Write ``entries`` as JSONL to ``path`` (one IContent a line), whole and renamed into
    place, so a reader never sees half a file; made 0600 through no link. False, and nothing
    written, when the folder of ``path`` is not a folder (a link put there)."""
    folder = path.parent
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=PRIVATE_DIR)
    if not stat.S_ISDIR(os.lstat(folder).st_mode):
        return False
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        for entry in entries:
            fh.write(entry.decode("utf-8"))
            fh.write("\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return True
