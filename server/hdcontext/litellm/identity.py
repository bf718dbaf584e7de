"""Whose request it is, as LiteLLM authenticated it: the owner a session is named within.

A gateway serves many people through one hdcontext, and two of them may send byte-identical
conversations (the same agent, the same repository, the same first prompt). The session a
request belongs to is therefore named within its owner (``tag``): one person's request never
finds another's history, whatever its bytes. The owner is read from LiteLLM's
``UserAPIKeyAuth`` by attribute (nothing of LiteLLM is imported here): the user, else the key,
with the team and the end user (a service key calling on behalf of its customers) besides. A
user's keys share the user's sessions; a key with no user is an owner of its own.

What is kept of the key is LiteLLM's own SHA-256 of it (``token``), shortened for people; the
raw key never reaches a log, a session id or a file. The tag is a digest, so a session id says
which owner's it is without saying who: ``edges/stats/owners.py`` keeps who, for ``hdcontext
stats --by user|team``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

import orjson

TAG_BYTES = 8
"""A tag is 16 hex digits: a collision between two owners needs about four billion of them."""
MOST_CHARS = 200
"""An id longer than this is cut (LiteLLM's are far shorter; a value is never trusted whole)."""
KEY_SHOWN = 12
"""Hex digits of the key's hash shown to people (``hdcontext stats``)."""
_HASH = re.compile(r"^[0-9a-f]{64}$")


def _text(value: object) -> str | None:
    """An id LiteLLM gave: a string or a number as text, anything else (or empty) none."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        value = str(value)
    if not isinstance(value, str) or not value.strip():
        return None
    return value.strip()[:MOST_CHARS]


def key_hash(auth: Any) -> str | None:
    """LiteLLM's SHA-256 of the key (``token``; ``api_key`` holds the same once LiteLLM has
    hashed it). A key LiteLLM left unhashed is hashed here, as LiteLLM hashes it, so that only
    its digest goes on."""
    for name in ("token", "api_key"):
        value = getattr(auth, name, None)
        if not isinstance(value, str) or not value:
            continue
        if _HASH.match(value):
            return value
        return hashlib.sha256(value.encode()).hexdigest()
    return None


@dataclass(frozen=True, slots=True)
class Owner:
    user: str | None = None
    team: str | None = None
    team_alias: str | None = None
    key_alias: str | None = None
    key: str | None = None
    """LiteLLM's SHA-256 of the key (64 hex digits), never the key."""
    end_user: str | None = None

    @property
    def scope(self) -> tuple[str | None, ...]:
        """What tells this owner's sessions from everyone else's: the user (across their
        keys), else the key; the team and the end user within either. The aliases are names
        for people: renaming a key or a team keeps its sessions."""
        if self.user is not None:
            return ("user", self.user, self.team, self.end_user)
        if self.key is not None:
            return ("key", self.key, self.team, self.end_user)
        return ("anonymous", self.team, self.end_user)

    @property
    def tag(self) -> str:
        """The owner's part of a session id: a digest of ``scope``."""
        digest = hashlib.blake2b(orjson.dumps(self.scope), digest_size=TAG_BYTES)
        return digest.hexdigest()

    def to_json(self) -> dict[str, str]:
        """Who, for ``hdcontext stats``: the ids and aliases LiteLLM gave, the key as the first
        digits of its hash; empty fields left out."""
        fields = {
            "user": self.user,
            "team": self.team,
            "teamAlias": self.team_alias,
            "keyAlias": self.key_alias,
            "key": self.key[:KEY_SHOWN] if self.key is not None else None,
            "endUser": self.end_user,
        }
        return {name: value for name, value in fields.items() if value is not None}


def owner_of(auth: Any) -> Owner:
    """The owner of a request from LiteLLM's ``UserAPIKeyAuth`` (any object: what it lacks is
    left out; ``None``, a request LiteLLM did not authenticate, is the anonymous owner)."""
    if auth is None:
        return Owner()
    return Owner(
        user=_text(getattr(auth, "user_id", None)),
        team=_text(getattr(auth, "team_id", None)),
        team_alias=_text(getattr(auth, "team_alias", None)),
        key_alias=_text(getattr(auth, "key_alias", None)),
        key=key_hash(auth),
        end_user=_text(getattr(auth, "end_user_id", None)),
    )
