"""What the gateway tests share with the modules LiteLLM loads for them, without LiteLLM: the
keys, each a user of a team with the key's alias (``custom_auth.py`` authenticates them), and
what the poisoned compactor raises with (``poisoned.py``)."""

from __future__ import annotations

KEYS = {
    "sk-alice": ("alice", "team-a", "alice-laptop"),
    "sk-alice-ci": ("alice", "team-a", "alice-ci"),
    "sk-bob": ("bob", "team-b", None),
}

SAID = "the words of a conversation, which no log may show"
