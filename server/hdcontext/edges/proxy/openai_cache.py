"""OpenAI's extended prompt cache retention, asked for the agent where it is free.

OpenAI keeps a cached prefix in memory for minutes (five to ten of inactivity, an hour at
most); for the models that offer it, ``prompt_cache_retention: "24h"`` keeps it up to a day at
the same price (Chat Completions and Responses). A longer life at no premium is a pure gain, so
the proxy asks it for an agent that did not choose a retention itself, and only for a model
the price table names as offering it (by its own row or its family's: a guessed row could ask a
model that refuses the parameter). The daemon is told the session's entries live longer
(``cache.ttlSeconds``), so that it does not wait for a cold moment that will not come.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.prices import lookup

RETENTION_KEY = "prompt_cache_retention"
OPTIONS_KEY = "prompt_cache_options"
"""GPT-5.6 on: ``{"mode": "implicit"|"explicit", "ttl": "30m"|"12h"}``. The proxy never
writes it (sources disagree on whether ``12h`` is taken yet: the API reference lists it, the
guide's own SDK notes call ``30m`` the only value); an agent's goes as sent."""
LONG_OPTIONS_TTL = "12h"
LONG_OPTIONS_TTL_S = 12 * 3600
"""What an entry asked ``12h`` lives at least: the daemon counts on it."""
LONG_RETENTION = "24h"
LONG_RETENTION_TTL_S = 3600
"""What the daemon counts on with ``24h``: OpenAI promises no length ("up to 24 hours",
"typically around 30 minutes" for some models), so an hour, which the usage checks then hold
to what the provider bills."""


def retention_to_ask(body: Mapping[str, Any]) -> str | None:
    """``"24h"`` when the proxy should ask it for this request, else None (the agent chose
    its own, or the model does not offer it, or the table does not know the model)."""
    if RETENTION_KEY in body or OPTIONS_KEY in body:
        return None  # never both: the agent chose the cache's lifetime itself
    model = body.get("model")
    if not isinstance(model, str):
        return None
    found = lookup(model)
    if found.row is None or found.how not in ("exact", "family"):
        return None
    return LONG_RETENTION if found.row.retention_24h else None


def with_field(data: bytes, key: str, value: str) -> bytes:
    """``data`` (one JSON object) with ``key: value`` first among its members; the rest of the
    client's bytes as they were."""
    start = data.index(b"{") + 1
    rest = data[start:].lstrip()
    member = f'"{key}":"{value}"'.encode()
    return data[:start] + member + (b"," if not rest.startswith(b"}") else b"") + data[start:]
