"""What a provider charges for input under prompt caching, as multiples of an uncached token.

Providers cache the longest prefix of a request they have seen recently. A cached token costs
a fraction of an uncached one; a token newly written to the cache costs the same or more
(Anthropic 0.1× and 1.25× for its 5-minute cache; OpenAI 0.1× and 1×; Gemini's implicit
cache 0.25×). The cache lives for a few minutes after its last use. ``none`` prices every
token alike, which makes the schedule apply edits as soon as they save anything.

Where a cached prefix may end differs. OpenAI (before GPT-5.6) and Gemini match any prefix two
requests share (in blocks of a few hundred tokens). Anthropic caches a prefix only where a
request put its breakpoint, which agents put on the request's last block: a later request hits
the cache at the end of an earlier request, so changing an entry inside the previous request
loses the cache back to the end of the request before it, not just to that entry. OpenAI's
GPT-5.6 and later families do the same (a breakpoint at the end of the newest message, matched
exactly), bill a cache write at 1.25× and keep a prefix for 30 minutes: the ``openai`` prices
follow the session's model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..settings import Settings

DEFAULT_TTL_SECONDS = 300
OPENAI_BREAKPOINTS_SINCE = (5, 6)
"""The first GPT generation that caches at breakpoints, writes at 1.25× and keeps 30 minutes."""
OPENAI_BREAKPOINT_PRESET = (0.1, 1.25, True, 1800)
"""(read, write, request ends, ttl seconds) for those models."""
_GPT_VERSION = re.compile(r"gpt-(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class Pricing:
    name: str
    """``anthropic``, ``openai``, ``gemini`` or ``none``: whose prices these are."""
    read: float
    """A cached input token, as a multiple of an uncached one."""
    write: float
    """A token written to the cache."""
    ttl_ms: int
    """How long the provider keeps a prefix after its last use."""
    request_ends: bool = False
    """A cached prefix ends only where an earlier request ended (Anthropic, OpenAI from
    GPT-5.6 on), not wherever the requests still agree (older OpenAI models, Gemini)."""


PRESETS: dict[str, tuple[float, float, bool]] = {
    "anthropic": (0.1, 1.25, True),
    "openai": (0.1, 1.0, False),
    "gemini": (0.25, 1.0, False),
    "none": (1.0, 1.0, False),
}


def provider_of(model: str | None) -> str:
    """``cache.pricing: auto``: the provider a model name points at. Unknown models get
    Anthropic's prices, the ones that punish a broken prefix most."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    if name.startswith("claude"):
        return "anthropic"
    if name.startswith(("gpt", "chatgpt", "codex")) or (
        len(name) > 1 and name[0] == "o" and name[1].isdigit()
    ):
        return "openai"
    if name.startswith("gemini"):
        return "gemini"
    return "anthropic"


def caches_at_breakpoints(model: str | None) -> bool:
    """Whether an OpenAI model is of GPT-5.6 or a later family."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    found = _GPT_VERSION.match(name)
    if found is None:
        return False
    version = (int(found.group(1)), int(found.group(2) or 0))
    return version >= OPENAI_BREAKPOINTS_SINCE


def pricing_for(settings: Settings, model: str | None) -> Pricing:
    """The prices to plan with: the preset that ``cache.pricing`` names (or the model
    implies), with ``cache.readCost``, ``cache.writeCost`` and ``cache.ttlSeconds`` over it."""
    name = settings.cache_pricing if settings.cache_pricing != "auto" else provider_of(model)
    read, write, request_ends = PRESETS[name]
    ttl = DEFAULT_TTL_SECONDS
    if name == "openai" and caches_at_breakpoints(model):
        read, write, request_ends, ttl = OPENAI_BREAKPOINT_PRESET
    if settings.cache_read_cost is not None:
        read = settings.cache_read_cost
    if settings.cache_write_cost is not None:
        write = settings.cache_write_cost
    ttl = settings.cache_ttl_seconds or ttl
    return Pricing(name, read, write, ttl * 1000, request_ends)
