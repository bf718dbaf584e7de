"""``hdcontext sessions``: what a storage keeps, and deleting it.

The daemon and the proxy keep every conversation they serve in their storage folder (or a
database); a user must be able to see what is there and take it out without a client of the
protocol. ``list`` and ``show`` read it without its lock (SQLite's read-only mode, a read-only
connection to a database), so they work beside a running daemon. ``delete`` and ``prune``
change it, so they take the lock as a daemon does: while a daemon holds a folder they refuse
(exit 2) rather than write under it (its own retention prunes it; ``history/delete`` deletes
through it); in a database, which replicas share by design, each session's own lock, so that
no request is changing it meanwhile. Whatever is deleted is deleted from the file or the
tables (``Store.delete_sessions``) and its exported transcript goes with it.

Bad input (an unknown id, a bad duration, a folder that is not there) is one line on stderr,
exit 2, and nothing changed: every id is checked before any is deleted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path

from ..edges.daemon.retention import DEFAULT_DAYS, FOREVER, parse_days
from ..edges.storage import storage_lock
from ..edges.storage.folder import PRIVATE_UMASK
from ..edges.storage.location import Location
from ..edges.storage.records import StoredSession, StoreError
from ..edges.storage.store import Store, make_store, open_reader
from .storage_option import add_storage_option, storage_of

OK = 0
BAD_INPUT = 2

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"\s*(\d+)\s*([smhdw]?)\s*", re.IGNORECASE)

DESCRIPTION = (
    "See and delete what hdcontext keeps in a storage folder. The daemon (hdcontext serve) "
    "and the proxy (hdcontext proxy) keep every session they serve there, in a SQLite "
    "database, the proxy's conversations included, so that a conversation picks up where it "
    "was after a restart; each deletes the sessions idle longer than its --retention-days "
    f"(default {DEFAULT_DAYS}) at start and then daily."
)
EPILOG = f"""\
commands:
  list                     every session: id, last used, entries, tokens, calls, model
  show ID                  one session's figures (--transcript: its entries, as JSON lines)
  delete ID [ID ...]       delete sessions: their rows in every table, scrubbed from the
                           database file (nothing left in its free pages or its log), and
                           their exported transcripts
  prune --older-than D     delete every session idle (not used) for longer than D:
                           30d, 12h, 90m, 2w, or a number of days (--dry-run: list them)

storage: --storage FOLDER|URL (or $HDCONTEXT_DATABASE_URL), default the folder the daemon
and the proxy use:
  {{default}}
list and show read it while a daemon runs (read-only, no lock); delete and prune refuse
while a daemon or proxy holds a folder: stop it first, or let its retention prune
(hdcontext proxy --retention-days N|{FOREVER}); in a database they lock each session.

exit status:
  {OK}  done
  {BAD_INPUT}  bad usage, an unknown session id, a bad duration, a folder that is not there
     or cannot be read, or a folder in use by a running daemon (nothing was changed)"""


def add_parser(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    default: Path,
    formatter: type[argparse.HelpFormatter],
) -> None:
    """``hdcontext sessions`` and its commands, on the command line's subparsers; ``default``
    is the storage folder when none is named."""
    common = argparse.ArgumentParser(add_help=False)
    add_storage_option(common, f"the daemon's and the proxy's folder is {default}")
    epilog = EPILOG.format(default=default)
    sessions = sub.add_parser(
        "sessions",
        help="list, show, delete or prune the sessions a storage folder keeps",
        description=DESCRIPTION,
        epilog=epilog,
        formatter_class=formatter,
    )
    actions = sessions.add_subparsers(dest="action", required=True, metavar="COMMAND")

    def command(name: str, summary: str, more: str = "") -> argparse.ArgumentParser:
        return actions.add_parser(
            name,
            parents=[common],
            help=summary,
            description=summary[0].upper() + summary[1:] + "." + more,
            epilog=epilog,
            formatter_class=formatter,
        )

    reading = " Reads the folder without its lock, so it works while a daemon runs."
    changing = " Takes the folder's lock: while a daemon or proxy runs on it, it refuses (exit 2)."
    listing = command("list", "every stored session, most recently used first", reading)
    listing.add_argument("--json", action="store_true", help="one JSON array")
    show = command("show", "one session's figures", reading)
    show.add_argument("session_id", metavar="ID")
    show.add_argument("--json", action="store_true", help="one JSON object")
    show.add_argument(
        "--transcript",
        action="store_true",
        help="print the session's transcript instead (every entry ever appended, one IContent "
        "JSON a line)",
    )
    delete = command(
        "delete",
        "delete sessions from the database file and their exported transcripts",
        " Every table's rows of each session go, and what they held is overwritten in the "
        "file and its log; an unknown id deletes nothing." + changing,
    )
    delete.add_argument("session_ids", nargs="+", metavar="ID")
    prune = command(
        "prune",
        "delete the sessions idle for longer than a duration",
        " Idle: no request changed the session (the daemon's retention uses the same "
        "clock)." + changing + " --dry-run only reads, without the lock.",
    )
    prune.add_argument(
        "--older-than",
        required=True,
        metavar="D",
        help="idle for longer than this: 30d, 12h, 90m, 2w, or a number of days",
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="list what would be deleted, delete nothing"
    )


def _say(message: str) -> None:
    print(f"hdcontext: {message}", file=sys.stderr)


def parse_duration(text: str) -> int | None:
    """A duration in seconds: a whole number with a unit (s, m, h, d, w), days without one;
    ``None`` if it is not one."""
    found = _DURATION.fullmatch(text)
    if found is None:
        return None
    return int(found.group(1)) * _UNITS[(found.group(2) or "d").lower()]


def main(args: argparse.Namespace, default_storage: Path) -> int:
    where = storage_of(args.storage, default_storage)
    if isinstance(where, str):
        _say(where)
        return BAD_INPUT
    # A read-only reader may still make the database's -wal and -shm files: the user's alone.
    os.umask(PRIVATE_UMASK)
    try:
        if args.action == "list":
            return _list(where, args.json)
        if args.action == "show":
            return _show(where, args.session_id, args.json, args.transcript)
        if args.action == "delete":
            return _delete(where, list(dict.fromkeys(args.session_ids)))
        return _prune(where, args.older_than, args.dry_run)
    except (StoreError, OSError, RuntimeError) as exc:
        _say(str(exc) if isinstance(exc, StoreError) else f"{where}: {exc}")
        return BAD_INPUT


def _when(ms: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ms / 1000))


def _ago(ms: int) -> str:
    seconds = max(0, time.time() - ms / 1000)
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'' if n == 1 else 's'} ago"
    return "just now"


def _list(where: Location, as_json: bool) -> int:
    with open_reader(where) as db:
        found = db.sessions()
    if as_json:
        print(json.dumps([asdict(s) for s in found]))
        return OK
    if not found:
        print(f"no sessions in {where}")
        return OK
    width = max(len("SESSION"), *(len(s.session_id) for s in found))
    print(
        f"{'SESSION':<{width}}  {'LAST USED':<16}  {'ENTRIES':>7}  {'TOKENS':>9}  "
        f"{'CALLS':>5}  MODEL"
    )
    for s in found:
        print(
            f"{s.session_id:<{width}}  {_when(s.updated):<16}  {s.entry_count:>7}  "
            f"{s.total_tokens:>9,}  {s.calls:>5}  {s.model or '-'}"
        )
    print(f"{len(found)} session{'' if len(found) == 1 else 's'} in {where}")
    return OK


def _show(where: Location, session_id: str, as_json: bool, transcript: bool) -> int:
    with open_reader(where) as db:
        found = db.session(session_id)
        if found is None:
            _say(f"no session {session_id!r} in {where}")
            return BAD_INPUT
        if transcript:
            for line in db.transcript(session_id):
                print(line)
            return OK
        exported = db.exported(session_id)
    if as_json:
        print(
            json.dumps({**asdict(found), "exported": None if exported is None else str(exported)})
        )
        return OK
    _describe(found, exported)
    return OK


def _describe(s: StoredSession, exported: Path | None) -> None:
    rows = [
        ("session", s.session_id),
        ("created", _when(s.created)),
        ("last used", f"{_when(s.updated)} ({_ago(s.updated)})"),
        ("model", s.model or "-"),
        ("entries", f"{s.entry_count} sent to the model, {s.transcript_entries} in the transcript"),
        ("tokens", f"{s.total_tokens:,} (density saved {s.saved_tokens:,})"),
        ("calls", str(s.calls)),
        ("transcript", str(exported) if exported is not None else "none exported"),
    ]
    for name, value in rows:
        print(f"{name:<11} {value}")


def _locked(where: Location) -> str | None:
    """Take the folder's lock for a change (None), or say why it cannot be had. A database
    has none: each session is locked as it is deleted (``_delete_sessions``)."""
    folder = where.folder
    if folder is None:
        return None
    if not folder.is_dir():
        return f"no storage folder at {folder}"
    try:
        storage_lock.acquire(folder)
    except storage_lock.StorageLocked as exc:
        holder = f"pid {exc.pid}" if exc.pid is not None else "another process"
        return (
            f"the storage folder {folder} is in use by a running hdcontext daemon or proxy "
            f"({holder}): stop it first, or let its --retention-days prune; nothing deleted"
        )
    return None


def _delete(where: Location, ids: list[str]) -> int:
    refused = _locked(where)
    if refused is not None:
        _say(refused)
        return BAD_INPUT
    try:
        with open_reader(where) as db:
            unknown = [sid for sid in ids if db.session(sid) is None]
        if unknown:
            _say(f"no session {unknown[0]!r} in {where}; nothing deleted")
            return BAD_INPUT
        deleted = asyncio.run(_delete_sessions(where, ids, None))
    finally:
        _unlocked(where)
    for sid in deleted:
        print(f"deleted {sid}")
    return OK


def _prune(where: Location, older_than: str, dry_run: bool) -> int:
    seconds = parse_duration(older_than)
    if seconds is None:
        _say(
            f"--older-than: not a duration: {older_than!r} (a whole number and a unit: 30d, "
            "12h, 90m, 2w; days without one)"
        )
        return BAD_INPUT
    before = time.time_ns() // 1_000_000 - seconds * 1000
    if dry_run:
        with open_reader(where) as db:
            idle = [s.session_id for s in db.sessions() if s.updated < before]
        for sid in idle:
            print(f"would delete {sid}")
        print(
            f"{len(idle)} session{'' if len(idle) == 1 else 's'} idle for longer than {older_than}"
        )
        return OK
    refused = _locked(where)
    if refused is not None:
        _say(refused)
        return BAD_INPUT
    try:
        with open_reader(where) as db:
            idle = [s.session_id for s in db.sessions() if s.updated < before]
        deleted = asyncio.run(_delete_sessions(where, idle, before)) if idle else []
    finally:
        _unlocked(where)
    for sid in deleted:
        print(f"deleted {sid}")
    noun = "session" if len(deleted) == 1 else "sessions"
    print(f"{len(deleted)} {noun} idle for longer than {older_than} deleted")
    return OK


def _unlocked(where: Location) -> None:
    if where.folder is not None:
        storage_lock.release(where.folder)


LOCKED_AT_ONCE = 100
"""Sessions of a database locked together for a deletion (their tables vacuumed once)."""


async def _delete_sessions(where: Location, ids: list[str], idle_before: int | None) -> list[str]:
    store = make_store(where)
    store.warn = _say
    await store.open()
    try:
        if not store.shared:
            return await store.delete_sessions(ids, idle_before=idle_before)
        deleted: list[str] = []
        for start in range(0, len(ids), LOCKED_AT_ONCE):
            deleted += await _delete_locked(store, ids[start : start + LOCKED_AT_ONCE], idle_before)
        return deleted
    finally:
        await store.close()


async def _delete_locked(store: Store, ids: list[str], idle_before: int | None) -> list[str]:
    """Delete sessions of a shared database, each under its lock (a replica's request for
    one goes on first, and with ``idle_before`` keeps it)."""
    locked: list[str] = []
    try:
        for sid in ids:
            await store.lock(sid)
            locked.append(sid)
        return await store.delete_sessions(ids, idle_before=idle_before)
    finally:
        for sid in locked:
            await store.unlock(sid)


def retention_days(text: str) -> int | None:
    """``--retention-days`` for argparse: days, or ``None`` for ``forever``."""
    try:
        return parse_days(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
