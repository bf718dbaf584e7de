"""What a provider charges for input under prompt caching, and where its cache can hit.

Prices are multiples of an uncached input token: a cached token costs a fraction of one, a
token newly written to the cache the same or more (Anthropic 0.1× and 1.25× for its 5-minute
cache; OpenAI 0.1× and 1×, from GPT-5.6 on 0.1× and 1.25× for 30 minutes; Gemini's implicit
cache 0.1× and 1×, from Gemini 2.5 on). A cached prefix lives for a while after its last use.
``none`` prices every token alike, which makes the schedule apply edits as soon as they save
anything.

A provider may offer a longer lifetime at a dearer write (Anthropic: a breakpoint that asks
``"ttl": "1h"`` writes its entry at 2× and it lives an hour from its last use; reads cost the
same). Its price is ``write_long``; a provider without one has ``None`` there.

Where a cached prefix may end differs, and it decides what an edit costs (the geometry):

- OpenAI before GPT-5.6 and Gemini match any prefix two requests share.
- Anthropic writes a cache entry only at a breakpoint (``cache_control``) of a request: the
  prefix up to and including that block. A later request reads the longest entry it still
  starts with that lies at most 20 content blocks before one of its own breakpoints (each text,
  tool call, tool result, thinking and media block counts). A request whose only message
  breakpoint is on its last block therefore finds nothing once an edit lies more than 20 blocks
  back, or once a turn added more than 20 blocks, unless another breakpoint sits near an entry
  the cache still holds: the daemon names where those go (``cache/prompt_cache.py``).
- OpenAI's GPT-5.6 and later families cache at breakpoints too (``prompt_cache_breakpoint``):
  up to four written per request, matched against the newest 80 of the conversation with no
  block lookback; a breakpoint sits only on a system, user or tool message, never the model's.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from functools import lru_cache

from ..prices import lookup, multiples, normalize, override, provider_of
from ..settings import Settings

DEFAULT_TTL_SECONDS = 300
LONG_TTL_MS = 3_600_000
"""The longer lifetime a breakpoint may ask (Anthropic's ``"ttl": "1h"``)."""
ANTHROPIC_LOOKBACK_BLOCKS = 20
"""How many content blocks before one of a request's breakpoints Anthropic looks for a cache
entry (its prompt-caching guide)."""
MAX_ENTRIES = 80
"""Cache entries a provider matches against, newest first (OpenAI GPT-5.6: 80; Anthropic
names no limit, and fewer live in its 5 minutes at any agent's pace)."""
OPENAI_BREAKPOINTS_SINCE = (5, 6)
"""The first GPT generation that caches at breakpoints, writes at 1.25× and keeps 30 minutes."""
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
    at_breakpoints: bool = False
    """Cache entries exist only where a request put a breakpoint (Anthropic, OpenAI from
    GPT-5.6 on), not wherever two requests still agree (older OpenAI models, Gemini)."""
    lookback_blocks: int | None = None
    """How many content blocks before one of its breakpoints a request finds an entry
    (Anthropic 20); ``None``: anywhere before it."""
    max_entries: int = MAX_ENTRIES
    """Entries the provider matches against, newest first."""
    assistant_breakpoints: bool = True
    """Whether a breakpoint may sit on the model's own message (not on OpenAI's)."""
    write_long: float | None = None
    """A token written to an entry of the longer lifetime (Anthropic's hour: 2×); ``None``:
    the provider offers none."""
    long_ttl_ms: int = LONG_TTL_MS
    min_prefix: int = 0
    """Tokens: a breakpoint on a shorter prompt writes no entry. The minimum counts the whole
    prompt, system prompt and tools included, which agents' own exceed (Claude Code's alone is
    some 15,000 tokens); the daemon sees the messages only and plans as if every prefix
    reached it, so the cost model does not apply it."""
    row: str | None = None
    """The price table's row these come from (``None``: a provider's preset)."""
    match: str = "preset"
    """How the row was found: ``exact``, ``family``, ``fallback`` (the model is not in the
    table: its provider's most common row stands in), ``override`` (the user's), or
    ``preset``."""

    def lifetime(self, long: bool) -> int:
        """How long an entry written now lives after its last use, in ms."""
        return self.long_ttl_ms if long and self.write_long is not None else self.ttl_ms

    def write_price(self, long: bool) -> float:
        if long and self.write_long is not None:
            return self.write_long
        return self.write


ANTHROPIC = Pricing(
    "anthropic",
    0.1,
    1.25,
    DEFAULT_TTL_SECONDS * 1000,
    at_breakpoints=True,
    lookback_blocks=ANTHROPIC_LOOKBACK_BLOCKS,
    write_long=2.0,
)
OPENAI = Pricing("openai", 0.1, 1.0, DEFAULT_TTL_SECONDS * 1000)
OPENAI_BREAKPOINTS = Pricing(
    "openai", 0.1, 1.25, 1_800_000, at_breakpoints=True, assistant_breakpoints=False
)
"""GPT-5.6 and later."""
GEMINI = Pricing("gemini", 0.1, 1.0, DEFAULT_TTL_SECONDS * 1000)
"""Gemini 2.5 and later: implicit caching at any shared prefix, a tenth, no write premium."""
NONE = Pricing("none", 1.0, 1.0, DEFAULT_TTL_SECONDS * 1000)
PRESETS: dict[str, Pricing] = {p.name: p for p in (ANTHROPIC, OPENAI, GEMINI, NONE)}


def caches_at_breakpoints(model: str | None) -> bool:
    """Whether an OpenAI model is of GPT-5.6 or a later family."""
    name = (model or "").lower().rsplit("/", 1)[-1]
    found = _GPT_VERSION.match(name)
    if found is None:
        return False
    version = (int(found.group(1)), int(found.group(2) or 0))
    return version >= OPENAI_BREAKPOINTS_SINCE


OLD_OPENAI_FALLBACK = "gpt-4.1"
"""The row an OpenAI model the table lacks is priced by when its name is older than GPT-5.6
(it matches any prefix and pays no write fee, as ``gpt-4.1`` does); newer names take the
table's fallback."""


def pricing_for(settings: Settings, model: str | None) -> Pricing:
    """The prices and geometry to plan with. ``cache.pricing: auto`` (or the model's own
    provider named): the model's row of the price table (``core/prices.py``), by exact id, then by
    family, else its provider's fallback row (``Pricing.match`` says which), with the user's
    ``cache.prices`` override of it; another provider named, or ``none``: the provider's
    preset. ``cache.readCost``, ``cache.writeCost`` and
    ``cache.ttlSeconds`` go over either."""
    provider = provider_of(model)
    name = settings.cache_pricing if settings.cache_pricing != "auto" else provider
    base = _row_pricing(settings, model) if name == provider else None
    if base is None:
        base = PRESETS[name]
        if name == "openai" and caches_at_breakpoints(model):
            base = OPENAI_BREAKPOINTS
    return replace(
        base,
        name=name,
        read=base.read if settings.cache_read_cost is None else settings.cache_read_cost,
        write=base.write if settings.cache_write_cost is None else settings.cache_write_cost,
        ttl_ms=(settings.cache_ttl_seconds or base.ttl_ms // 1000) * 1000,
    )


def _row_pricing(settings: Settings, model: str | None) -> Pricing | None:
    """The model's row as the cost model plans with it, or ``None`` where the table prices
    nothing."""
    own = settings.cache_prices
    if not own:
        return _row_of(model, "")
    name = normalize(model)
    found = lookup(model).row
    mine = own.get(name) or (own.get(found.model) if found is not None else None)
    return _row_of(model, json.dumps(mine, sort_keys=True) if mine else "")


@lru_cache(maxsize=64)
def _row_of(model: str | None, mine: str) -> Pricing | None:
    """``_row_pricing`` for one model and one override (JSON, "" for none): looked up once,
    since every status and every compact asks."""
    found = lookup(model)
    row, how = found.row, str(found.how)
    if row is None:
        return None
    if how == "fallback" and row.provider == "openai" and not caches_at_breakpoints(model):
        row = lookup(OLD_OPENAI_FALLBACK).row or row
    if mine:
        row, how = override(row, json.loads(mine)), "override"
    m = multiples(row)
    return Pricing(
        row.provider,
        m.read,
        m.write_5m,
        row.ttl_s * 1000,
        at_breakpoints=row.at_breakpoints,
        lookback_blocks=row.lookback_blocks,
        max_entries=row.max_entries,
        assistant_breakpoints=row.assistant_breakpoints,
        write_long=m.write_1h,
        min_prefix=row.min_prefix,
        row=row.model,
        match=how,
    )
