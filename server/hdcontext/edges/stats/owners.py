"""Who each gateway session belongs to, for ``hdcontext stats --by user|team``.

A session hdcontext serves inside LiteLLM (``hdcontext.litellm``) is named within its owner:
its id starts ``litellm-<tag>-``, the tag a digest of the user or key LiteLLM authenticated
(``hdcontext/litellm/identity.py``). The id alone groups a store's sessions by owner; who an
owner is (user and team ids, the key's alias and the first digits of its hash, never the key)
is a row of the store's ``owners`` table (``storage/records.py``), written by whichever replica
served the owner, kept while the owner has a session or was seen within the retention.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ..storage.location import Location
from ..storage.records import OwnerRow
from ..storage.store import open_reader

SESSION_PREFIX = "litellm-"
MOST_OWNERS = 100_000
"""Owners read at most (a table grown past that was not written by hdcontext)."""
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


def read_owners(where: Location | Path | str) -> dict[str, dict[str, Any]]:
    """The owners recorded in the store at ``where``, by tag; none when the store holds none
    or a record cannot be read (the sessions are grouped by their tags all the same).
    ``StoreError`` when the store itself cannot be read."""
    with open_reader(where) as reader:
        rows = reader.owners()
    owners: dict[str, dict[str, Any]] = {}
    for tag, text in list(rows.items())[:MOST_OWNERS]:
        try:
            record = json.loads(text)
        except ValueError:
            continue
        if isinstance(record, dict):
            owners[tag] = record
    return owners


def owner_row(tag: str, record: Mapping[str, Any], seen: int) -> OwnerRow:
    """The store's row of an owner: its sessions' prefix, its record as JSON."""
    text = json.dumps(dict(record), ensure_ascii=False, sort_keys=True)
    return OwnerRow(tag, session_prefix(tag), text, seen)


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
