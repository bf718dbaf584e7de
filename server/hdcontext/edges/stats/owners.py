"""Who each gateway session belongs to, for ``hdcontext stats --by user|team``.

A session hdcontext serves inside LiteLLM (``hdcontext.litellm``) is named within its owner:
its id starts ``litellm-<tag>-``, the tag a digest of the user or key LiteLLM authenticated
(``hdcontext/litellm/identity.py``). The id alone groups a folder's sessions by owner; who an
owner is (user and team ids, the key's alias and the first digits of its hash, never the key)
is kept beside the store, one record per owner, in ``owners.json``: written by the one process
that holds the folder, when an owner first comes or changes, replaced whole (a reader never
sees half of it), private like the store's files, and pruned to the owners that still have a
session when that process starts (the sessions themselves go with the retention).

This is a file and not a table because the store's schema is not this module's to change; a
database shared by several processes would keep the same record per owner in a table of its
own, and this module's readers would read it there.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

OWNERS_FILE = "owners.json"
SESSION_PREFIX = "litellm-"
FORMAT = 1
MOST_OWNERS = 100_000
"""Owners read from the file at most (a file grown past that was not written by hdcontext)."""
_TAGGED = re.compile(rf"^{SESSION_PREFIX}([0-9a-f]{{16}})-")

By = Literal["user", "team"]
NOT_GATEWAY = "(not through LiteLLM)"
NO_TEAM = "(no team)"
ANONYMOUS = "(anonymous)"


def session_prefix(tag: str) -> str:
    """The start of every session id of the owner ``tag``."""
    return f"{SESSION_PREFIX}{tag}-"


def tag_of(session_id: str) -> str | None:
    """The owner's tag a session id starts with; ``None`` for a session not named within an
    owner (the editor's, ``hdcontext proxy``'s)."""
    found = _TAGGED.match(session_id)
    return found.group(1) if found else None


def read_owners(folder: Path) -> dict[str, dict[str, Any]]:
    """The owners recorded in ``folder``, by tag; none when there is no file or it cannot be
    read (the sessions are grouped by their tags all the same)."""
    try:
        data = json.loads((folder / OWNERS_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return {}
    owners = data.get("owners") if isinstance(data, dict) else None
    if not isinstance(owners, dict):
        return {}
    return {
        tag: record
        for tag, record in list(owners.items())[:MOST_OWNERS]
        if isinstance(tag, str) and isinstance(record, dict)
    }


def write_owners(folder: Path, owners: Mapping[str, Mapping[str, Any]]) -> None:
    """Replace the file with ``owners`` (by tag), made 0600 and renamed into place, so that a
    reader finds the old file or the new one whole; OSError if it cannot be written."""
    path = folder / OWNERS_FILE
    temporary = folder / f".{OWNERS_FILE}.{os.getpid()}"
    data = json.dumps({"format": FORMAT, "owners": owners}, ensure_ascii=False, sort_keys=True)
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise


def kept_for(owners: Mapping[str, Mapping[str, Any]], sessions: Iterable[str]) -> dict[str, Any]:
    """The owners that still have one of ``sessions`` (the others' sessions are gone)."""
    tags = {tag for sid in sessions if (tag := tag_of(sid)) is not None}
    return {tag: dict(record) for tag, record in owners.items() if tag in tags}


def group_of(session_id: str, owners: Mapping[str, Mapping[str, Any]], by: By) -> str:
    """The row of ``hdcontext stats --by user`` (or ``team``) a session's calls go to: the user
    id, else the key (its alias, else its hash's first digits); the team's alias and id.
    A session of no owner (the editor's, ``hdcontext proxy``'s) has a row of its own."""
    tag = tag_of(session_id)
    if tag is None:
        return NOT_GATEWAY
    record = owners.get(tag)
    if record is None:
        return f"owner {tag}"
    if by == "team":
        team, alias = record.get("team"), record.get("teamAlias")
        if team is None:
            return NO_TEAM
        return f"{alias} ({team})" if alias is not None and alias != team else str(team)
    if record.get("user") is not None:
        return str(record["user"])
    if record.get("keyAlias") is not None:
        return f"key {record['keyAlias']}"
    if record.get("key") is not None:
        return f"key {record['key']}"
    return ANONYMOUS
