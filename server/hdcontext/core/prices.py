"""What each model costs, as its provider publishes it: one dated table for the daemon's pricing,
the bench and the savings view.

A row is one model (its API id, with the other ids of the same thing as aliases): the price of an
uncached input token, an output token, a cached token read, a token written to the cache for the
default lifetime and for an hour, in US dollars per million tokens; how long an entry lives; the
shortest prefix a breakpoint caches; and the geometry of the provider's cache for that model
(``cache/pricing.py`` says what each of those means to the schedule). ``source`` is the page the
row was read from; ``note`` says what the page did not, and ``unverified`` names the fields no
provider page gave, whose value here is a stated assumption, not a published figure. Where the
page itself could not be read, its figures come from dated transcriptions of it (the OpenAI rows
other than GPT-6.2 Sol, GPT-6 Sol and GPT-5.6 Sol, and the cache prices of a few Claude rows).

``lookup`` finds a model's row by its exact id or alias, then by family (the longest row id the
name starts with, past a date or a suffix that does not name another tier: a dated snapshot is
its model's row, ``gpt-5.6-mini`` is never ``gpt-5.6``'s; a Gemini snapshot, ``-001`` or
``-preview-09-2025``, its model's), then falls back to its provider's most common row and says
so. Gemini's rows are read from Google's pages as well (its implicit cache: any shared prefix,
reads at a tenth of the input price, no write premium); a name that is no Gemini model of the
table takes Gemini 3.1 Pro's row.

Prices change: ``PRICES_CHECKED`` is the day the rows were checked against the providers' pages,
and a test holds a handful of them to the figures, so a change to the table is a deliberate one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

PRICES_CHECKED = "2026-11-26"
"""The day the rows were checked against the providers' pages."""

Provider: TypeAlias = Literal["anthropic", "openai", "gemini"]
How: TypeAlias = Literal["exact", "family", "fallback", "unpriced"]


@dataclass(frozen=True)
class LongPrompt:
    """The prices of a request whose prompt is longer than ``above`` tokens (every input token,
    cached and newly cached ones included). Such a request pays these for all its tokens, output
    included, not only for the part past the threshold."""

    above: int
    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float | None


@dataclass(frozen=True)
class ModelPrice:
    """One model's prices (US dollars per million tokens) and the geometry of its cache."""

    model: str
    """The id as the provider's API takes it, e.g. ``claude-opus-5-5``."""
    provider: Provider
    input: float
    """An uncached input token."""
    output: float
    cache_read: float
    """A token read from the cache."""
    cache_write_5m: float
    """A token written to the cache for the default lifetime (Anthropic's five minutes; OpenAI's
    write price, which is the input price before GPT-5.6: no write fee)."""
    cache_write_1h: float | None
    """A token written for an hour (Anthropic's ``"ttl": "1h"``); ``None``: no one-hour tier."""
    ttl_s: int
    """The default lifetime of an entry after its last use, in seconds."""
    min_prefix: int
    """Tokens: a breakpoint on a shorter prefix writes nothing."""
    at_breakpoints: bool
    """Entries exist only where a request put a breakpoint (Anthropic, OpenAI from GPT-5.6 on),
    not at any prefix two requests share (OpenAI before GPT-5.6)."""
    lookback_blocks: int | None
    """How many content blocks before one of its breakpoints a request finds an entry (Anthropic
    20); ``None``: anywhere before it."""
    max_entries: int
    """Entries the provider matches against, newest first (OpenAI GPT-5.6+: its API reference
    says the newest 80; Anthropic names no limit)."""
    max_breakpoints: int
    """Breakpoints (cache writes) one request may carry, a top-level automatic one included
    (Anthropic 4; OpenAI GPT-5.6+ 4, the implicit one included); 0: the request places none."""
    assistant_breakpoints: bool
    """Whether a breakpoint may sit on the model's own message (not on OpenAI's)."""
    retention_24h: bool
    """Whether ``prompt_cache_retention: "24h"`` is offered (OpenAI before GPT-5.6, the models
    its guide lists; no extra charge)."""
    source: str
    """The page the row was read from."""
    aliases: tuple[str, ...] = ()
    """Other ids of the same row: dated snapshots, the same model under another name."""
    long: LongPrompt | None = None
    """The prices past a prompt length, where the provider bills long prompts higher."""
    note: str = ""
    unverified: tuple[str, ...] = ()
    """Fields no provider page gave: their value is the stated assumption of ``note``."""
    context_window: int | None = None
    """The input tokens the model takes (``CONTEXT_WINDOWS``); ``None``: not known. A
    session priced by this row compresses near it, not near a window another model has."""
    bound_thinking: bool = False
    """Whether the model runs Anthropic's prefix check on the thinking blocks sent back to it
    ("preserved thinking"): a block whose prefix (system, tools, every earlier message) changed
    after the model wrote it is refused (400) or dropped. The models the check's page lists
    (``PREFIX_CHECKS``); ``core/history/thinking.py`` says what hdcontext does about it."""


@dataclass(frozen=True)
class Lookup:
    """A model's row and how it was found. ``fallback``: the model is not in the table and its
    provider's most common row stands in (say so); ``unpriced``: no row can (a provider with no
    fallback row: none has, since Gemini's rows)."""

    row: ModelPrice | None
    how: How


@dataclass(frozen=True)
class Multiples:
    """A row's cache prices as multiples of its input price: what the cost model plans with."""

    read: float
    write_5m: float
    write_1h: float | None


# The providers' pages the rows were read from.
_A_PRICING = "https://platform.claude.com/docs/en/about-claude/pricing"
_A_CACHING = "https://platform.claude.com/docs/en/build-with-claude/prompt-caching"
_A_DOCS_PRICING = "https://docs.anthropic.com/en/docs/about-claude/pricing"
_A_MODELS = "https://platform.claude.com/docs/{lang}/models/{slug}/overview"
PREFIX_CHECKS = (
    "https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks"
)
"""The page that lists the models with preserved thinking (its ``supportedModels``:
claude-fable-5-2, claude-mythos-5-2, claude-fable-5-1, claude-mythos-5-1, claude-opus-5-5,
claude-sonnet-5-5, claude-haiku-5-5): the rows with ``bound_thinking``."""
_O_PRICING = "https://developers.openai.com/api/docs/pricing"
_O_CACHING = "https://developers.openai.com/api/docs/guides/prompt-caching"
_O_MODEL = "https://developers.openai.com/api/docs/models/{model}"
_G_PRICING = "https://ai.google.dev/gemini-api/docs/pricing"
_G_CACHING = "https://ai.google.dev/gemini-api/docs/caching"

ANTHROPIC_TTL_S = 300
ANTHROPIC_LOOKBACK_BLOCKS = 20
ANTHROPIC_BREAKPOINTS = 4
OPENAI_TTL_S = 1800
"""GPT-5.6 and later: ``prompt_cache_options.ttl`` ``"30m"``, its only value."""
OPENAI_IN_MEMORY_TTL_S = 300
"""Before GPT-5.6, ``in_memory`` retention: "5 to 10 minutes of inactivity, up to one hour"."""
OPENAI_BREAKPOINTS = 4
MAX_ENTRIES = 80
OPENAI_LONG_ABOVE = 272_000
HAIKU_5_5_LONG_ABOVE = 100_000
_UNKNOWN_MIN_PREFIX = 4096
"""Where no page gives a Claude model's minimum cacheable prefix: the largest Anthropic
publishes, so the daemon never counts on a write the provider may not make."""
_OPENAI_OLD_MIN_PREFIX = 1024


def _claude(
    model: str,
    prices: tuple[float, float, float, float, float],
    min_prefix: int,
    source: str,
    *,
    aliases: tuple[str, ...] = (),
    long: LongPrompt | None = None,
    note: str = "",
    unverified: tuple[str, ...] = (),
    bound_thinking: bool = False,
) -> ModelPrice:
    """A Claude row; ``prices``: input, output, cache read, 5-minute write, 1-hour write."""
    input_, output, read, write_5m, write_1h = prices
    return ModelPrice(
        model=model,
        provider="anthropic",
        input=input_,
        output=output,
        cache_read=read,
        cache_write_5m=write_5m,
        cache_write_1h=write_1h,
        ttl_s=ANTHROPIC_TTL_S,
        min_prefix=min_prefix,
        at_breakpoints=True,
        lookback_blocks=ANTHROPIC_LOOKBACK_BLOCKS,
        max_entries=MAX_ENTRIES,
        max_breakpoints=ANTHROPIC_BREAKPOINTS,
        assistant_breakpoints=True,
        retention_24h=False,
        source=source,
        aliases=aliases,
        long=long,
        note=note,
        unverified=unverified,
        bound_thinking=bound_thinking,
    )


def _gpt(
    model: str,
    prices: tuple[float, float, float, float],
    source: str,
    *,
    aliases: tuple[str, ...] = (),
    long: tuple[float, float, float, float] | None = None,
    note: str = "",
) -> ModelPrice:
    """An OpenAI row of GPT-5.6 or later; ``prices``: input, output, cache read, write."""
    input_, output, read, write = prices
    tier = None
    if long is not None:
        tier = LongPrompt(OPENAI_LONG_ABOVE, long[0], long[1], long[2], long[3], None)
    return ModelPrice(
        model=model,
        provider="openai",
        input=input_,
        output=output,
        cache_read=read,
        cache_write_5m=write,
        cache_write_1h=None,
        ttl_s=OPENAI_TTL_S,
        min_prefix=1024,
        at_breakpoints=True,
        lookback_blocks=None,
        max_entries=MAX_ENTRIES,
        max_breakpoints=OPENAI_BREAKPOINTS,
        assistant_breakpoints=False,
        retention_24h=False,
        source=source,
        aliases=aliases,
        long=tier,
        note=note,
    )


def _gpt_before(
    model: str,
    prices: tuple[float, float, float],
    source: str,
    *,
    retention_24h: bool = False,
    ttl_s: int = OPENAI_IN_MEMORY_TTL_S,
    aliases: tuple[str, ...] = (),
    note: str = "",
) -> ModelPrice:
    """An OpenAI row before GPT-5.6: any shared prefix is read, a write costs what input does;
    ``prices``: input, output, cache read."""
    input_, output, read = prices
    return ModelPrice(
        model=model,
        provider="openai",
        input=input_,
        output=output,
        cache_read=read,
        cache_write_5m=input_,
        cache_write_1h=None,
        ttl_s=ttl_s,
        min_prefix=_OPENAI_OLD_MIN_PREFIX,
        at_breakpoints=False,
        lookback_blocks=None,
        max_entries=MAX_ENTRIES,
        max_breakpoints=0,
        assistant_breakpoints=True,
        retention_24h=retention_24h,
        source=source,
        aliases=aliases,
        note=(note + " " if note else "")
        + "The guide gives no minimum prefix before GPT-5.6 (it 'varies with request "
        "settings'); 1,024 is the floor its earlier text named.",
        unverified=("min_prefix",),
    )


GEMINI_TTL_S = 300
"""Google names no lifetime for an implicit cache entry ("send requests with similar prefix in
a short amount of time"; an explicit cache lives an hour by default): five minutes assumed, as
OpenAI's in-memory cache, which it resembles."""
GEMINI_LONG_ABOVE = 200_000
_GEMINI_TTL_NOTE = (
    "Implicit caching: any shared prefix from the model's minimum on, reads at the listed "
    "cache price, no write premium, no storage fee (the storage price is explicit caching's). "
    "Google names no lifetime for an implicit entry: five minutes assumed."
)


def _gemini(
    model: str,
    prices: tuple[float, float, float],
    min_prefix: int,
    source: str,
    *,
    aliases: tuple[str, ...] = (),
    long: tuple[float, float, float] | None = None,
    note: str = "",
    unverified: tuple[str, ...] = (),
) -> ModelPrice:
    """A Gemini row; ``prices``: input, output (thinking included), cache read, for text,
    images and video (audio input is dearer: not modelled); ``long``: the same past
    ``GEMINI_LONG_ABOVE`` prompt tokens."""
    input_, output, read = prices
    tier = None
    if long is not None:
        tier = LongPrompt(GEMINI_LONG_ABOVE, long[0], long[1], long[2], long[0], None)
    return ModelPrice(
        model=model,
        provider="gemini",
        input=input_,
        output=output,
        cache_read=read,
        cache_write_5m=input_,
        cache_write_1h=None,
        ttl_s=GEMINI_TTL_S,
        min_prefix=min_prefix,
        at_breakpoints=False,
        lookback_blocks=None,
        max_entries=MAX_ENTRIES,
        max_breakpoints=0,
        assistant_breakpoints=True,
        retention_24h=False,
        source=source,
        aliases=aliases,
        long=tier,
        note=(note + " " if note else "") + _GEMINI_TTL_NOTE,
        unverified=("ttl_s", *unverified),
    )


_OLD_OPUS = (15.0, 75.0, 1.50, 18.75, 30.0)
_OPUS_4_5_TO_5 = (5.0, 25.0, 0.50, 6.25, 10.0)
_SONNET_3_TO_4 = (3.0, 15.0, 0.30, 3.75, 6.0)

ANTHROPIC_ROWS: tuple[ModelPrice, ...] = (
    _claude(
        "claude-fable-5-2",
        (8.0, 40.0, 0.20, 10.0, 16.0),
        _UNKNOWN_MIN_PREFIX,
        "https://platform.claude.com/docs/en/models/fable-5-2/whats-new-fable-5-2",
        aliases=("claude-mythos-5-2",),
        note="Released 2026-11-09; Mythos 5.2 shares its specs and prices. Reads 0.025x; the "
        "writes ($10, $16) as the pricing page was transcribed on release. No page names the "
        "minimum cacheable prefix of 5.2 (Fable 5 and 5.1: 512); 4,096 assumed. The prefix check "
        "applies to every account: a request in which anything before a Fable 5.2 thinking block "
        "changed is refused (400) unless prefix_mismatch_behavior is set.",
        unverified=("min_prefix",),
        bound_thinking=True,
    ),
    _claude(
        "claude-fable-5-1",
        (10.0, 50.0, 0.25, 12.50, 20.0),
        512,
        _A_PRICING,
        aliases=("claude-mythos-5-1",),
        note="Mythos 5.1 (limited availability) is billed the same. Reads 0.025x. The prefix "
        "check refuses edited earlier turns on accounts created on or after 2026-08-31.",
        bound_thinking=True,
    ),
    _claude(
        "claude-fable-5",
        (10.0, 50.0, 1.0, 12.50, 20.0),
        512,
        _A_PRICING,
        aliases=("claude-mythos-5",),
        note="Legacy; Mythos 5 is billed the same.",
    ),
    _claude(
        "claude-opus-5-5",
        (4.0, 20.0, 0.20, 5.0, 8.0),
        512,
        _A_MODELS.format(lang="zh-CN", slug="opus-5-5"),
        note="Reads 0.05x. Fast mode ($8/$40) is not modelled.",
        bound_thinking=True,
    ),
    _claude(
        "claude-opus-5",
        _OPUS_4_5_TO_5,
        512,
        _A_PRICING,
        note="Legacy since Opus 5.5 (2026-09-22).",
    ),
    _claude(
        "claude-sonnet-5-5",
        (2.0, 10.0, 0.10, 2.50, 4.0),
        512,
        _A_MODELS.format(lang="zh-CN", slug="sonnet-5-5"),
        note="Reads 0.05x since Anthropic cut them from $0.20 on 2026-10-07; the overview copy "
        "read still showed $0.20, the cut is from dated transcriptions of the pricing page.",
        bound_thinking=True,
    ),
    _claude(
        "claude-sonnet-5",
        (2.0, 10.0, 0.20, 2.50, 4.0),
        1024,
        _A_MODELS.format(lang="zh-CN", slug="sonnet-5"),
        note="Legacy since Sonnet 5.5.",
    ),
    _claude(
        "claude-haiku-5-5",
        (0.10, 0.50, 0.01, 0.125, 0.20),
        _UNKNOWN_MIN_PREFIX,
        _A_MODELS.format(lang="en", slug="haiku-5-5"),
        long=LongPrompt(HAIKU_5_5_LONG_ABOVE, 0.50, 2.50, 0.05, 0.625, 1.0),
        note="Released 2026-10-07. Priced by prompt length: a prompt (input, cache reads and "
        "writes) over 100,000 tokens pays the higher prices on every token. No page names its "
        "minimum cacheable prefix; 4,096 assumed.",
        unverified=("min_prefix",),
        bound_thinking=True,
    ),
    _claude("claude-opus-4-8", _OPUS_4_5_TO_5, 1024, _A_PRICING),
    _claude(
        "claude-opus-4-7",
        _OPUS_4_5_TO_5,
        2048,
        _A_PRICING,
        note="Bedrock's minimum prefix for Opus 4.7 is 4,096.",
    ),
    _claude("claude-opus-4-6", _OPUS_4_5_TO_5, 4096, _A_PRICING),
    _claude(
        "claude-opus-4-5",
        _OPUS_4_5_TO_5,
        4096,
        _A_PRICING,
        aliases=("claude-opus-4-5-20251101",),
        note="Legacy; retirement not sooner than 2026-11-24.",
    ),
    _claude(
        "claude-opus-4-1",
        _OLD_OPUS,
        1024,
        _A_PRICING,
        aliases=("claude-opus-4-1-20250805",),
        note="Retired on the Claude API; still served on Bedrock and Google Cloud.",
    ),
    _claude(
        "claude-opus-4-0",
        _OLD_OPUS,
        1024,
        _A_PRICING,
        aliases=("claude-opus-4", "claude-opus-4-20250514"),
        note="Retired on the Claude API on 2026-06-15; still served on Google Cloud.",
    ),
    _claude(
        "claude-sonnet-4-6",
        _SONNET_3_TO_4,
        1024,
        _A_MODELS.format(lang="pt-BR", slug="sonnet-4-6"),
        note="Legacy. Cache prices: the 1.25x / 2x / 0.1x of every 4.x row.",
    ),
    _claude(
        "claude-sonnet-4-5",
        _SONNET_3_TO_4,
        1024,
        _A_MODELS.format(lang="pt-BR", slug="sonnet-4-5"),
        aliases=("claude-sonnet-4-5-20250929",),
        note="Deprecated, retires 2026-11-30. With the 1M-context beta a request over 200K "
        "input tokens paid $6 / $22.50; not modelled.",
    ),
    _claude(
        "claude-sonnet-4-0",
        _SONNET_3_TO_4,
        1024,
        _A_DOCS_PRICING,
        aliases=("claude-sonnet-4", "claude-sonnet-4-20250514"),
        note="Retired on the Claude API on 2026-06-15; partner platforms set their own dates.",
    ),
    _claude(
        "claude-haiku-4-5",
        (1.0, 5.0, 0.10, 1.25, 2.0),
        4096,
        _A_MODELS.format(lang="zh-CN", slug="opus-5"),
        aliases=("claude-haiku-4-5-20251001",),
        note="$1 / $5 from the lineup table of the page read; the cache prices as the pricing "
        "page was transcribed (the usual 1.25x / 2x / 0.1x).",
    ),
    _claude(
        "claude-3-7-sonnet-20250219",
        _SONNET_3_TO_4,
        1024,
        _A_DOCS_PRICING,
        aliases=("claude-3-7-sonnet", "claude-3-7-sonnet-latest"),
        note="Retired on the Claude API on 2026-02-19; partner platforms set their own dates.",
    ),
    _claude(
        "claude-3-5-haiku-20241022",
        (0.80, 4.0, 0.08, 1.0, 1.6),
        2048,
        _A_DOCS_PRICING,
        aliases=("claude-3-5-haiku", "claude-3-5-haiku-latest"),
        note="Whether the Claude API still serves it was not re-checked.",
    ),
)

_REBATE = "Reads 0.05x."
OPENAI_ROWS: tuple[ModelPrice, ...] = (
    _gpt(
        "gpt-6.2-astra",
        (8.0, 40.0, 0.40, 10.0),
        _O_PRICING,
        long=(16.0, 60.0, 0.80, 20.0),
        note="Released 2026-11-17. " + _REBATE,
    ),
    _gpt(
        "gpt-6.2-sol",
        (2.0, 10.0, 0.10, 2.50),
        _O_MODEL.format(model="gpt-6.2-sol"),
        long=(4.0, 15.0, 0.20, 5.0),
        note="Released 2026-11-17. "
        + _REBATE
        + " The write price is for 30 minutes; the model page also lists a 12-hour write at $5, "
        "which the caching guide does not describe: not modelled.",
    ),
    _gpt(
        "gpt-6.1-sol",
        (2.0, 10.0, 0.10, 2.50),
        _O_PRICING,
        long=(4.0, 15.0, 0.20, 5.0),
        note=_REBATE,
    ),
    _gpt("gpt-6-astra", (10.0, 50.0, 1.0, 12.50), _O_PRICING, long=(20.0, 75.0, 2.0, 25.0)),
    _gpt(
        "gpt-6-sol",
        (2.0, 10.0, 0.20, 2.50),
        "https://developers.openai.com/docs/models/gpt-6-sol",
        long=(4.0, 15.0, 0.40, 5.0),
    ),
    _gpt("gpt-6-luna", (0.10, 0.50, 0.01, 0.125), _O_PRICING, long=(0.20, 0.75, 0.02, 0.25)),
    _gpt(
        "gpt-5.6-sol",
        (4.0, 20.0, 0.40, 5.0),
        "https://developers.openai.com/pt-BR/api/docs/models/gpt-5.6-sol",
        aliases=("gpt-5.6",),
        long=(8.0, 30.0, 0.80, 10.0),
        note="Promotional prices, 'available at least through November 21, 2026' (list: $5 / "
        "$30, reads $0.50); the page read did not say whether they still hold.",
    ),
    _gpt(
        "gpt-5.6-terra",
        (2.0, 12.0, 0.20, 2.50),
        _O_PRICING,
        note="Its long-context prices were not read: not modelled.",
    ),
    _gpt(
        "gpt-5.6-luna",
        (0.20, 1.20, 0.02, 0.25),
        _O_PRICING,
        note="Its long-context prices were not read: not modelled.",
    ),
    _gpt_before(
        "gpt-5.5",
        (5.0, 30.0, 0.50),
        _O_PRICING,
        retention_24h=True,
        ttl_s=OPENAI_TTL_S,
        note="Retention '24h' only: 'typically around 30 minutes, up to 24 hours'. Over 272K "
        "input tokens $10 / $45; not modelled.",
    ),
    _gpt_before(
        "gpt-5.4",
        (2.50, 15.0, 0.25),
        _O_PRICING,
        retention_24h=True,
        note="Over 272K input tokens $5 / $22.50; not modelled.",
    ),
    _gpt_before("gpt-5.4-mini", (0.75, 4.50, 0.075), _O_PRICING),
    _gpt_before("gpt-5.4-nano", (0.20, 1.25, 0.02), _O_PRICING),
    _gpt_before("gpt-5.3-codex", (1.75, 14.0, 0.175), _O_PRICING),
    _gpt_before("gpt-5.2", (1.75, 14.0, 0.175), _O_PRICING, retention_24h=True),
    _gpt_before("gpt-5.2-codex", (1.75, 14.0, 0.175), _O_MODEL.format(model="gpt-5.2-codex")),
    _gpt_before(
        "gpt-5.1",
        (1.25, 10.0, 0.125),
        _O_PRICING,
        retention_24h=True,
        aliases=("gpt-5.1-codex", "gpt-5.1-codex-max"),
    ),
    _gpt_before("gpt-5.1-codex-mini", (0.25, 2.0, 0.025), _O_PRICING, retention_24h=True),
    _gpt_before(
        "gpt-5", (1.25, 10.0, 0.125), _O_PRICING, retention_24h=True, aliases=("gpt-5-codex",)
    ),
    _gpt_before("gpt-5-mini", (0.25, 2.0, 0.025), _O_PRICING),
    _gpt_before("gpt-5-nano", (0.05, 0.40, 0.005), _O_PRICING),
    _gpt_before("gpt-4.1", (2.0, 8.0, 0.50), _O_PRICING, retention_24h=True),
    _gpt_before("gpt-4.1-mini", (0.40, 1.60, 0.10), _O_PRICING),
    _gpt_before("gpt-4.1-nano", (0.10, 0.40, 0.025), _O_PRICING),
    _gpt_before("o3", (2.0, 8.0, 0.50), _O_PRICING),
    _gpt_before("o4-mini", (1.10, 4.40, 0.275), _O_PRICING),
)

_G_TRANSCRIBED = (
    "Google's pricing page was not read itself: its figures as transcribed, quoting it, on "
    "2026-07-04 (factquire.com) and in March 2026 guides that cite it."
)
GEMINI_ROWS: tuple[ModelPrice, ...] = (
    _gemini(
        "gemini-3.1-pro-preview",
        (2.0, 12.0, 0.20),
        4096,
        _G_PRICING,
        aliases=("gemini-3.1-pro-preview-customtools",),
        long=(4.0, 18.0, 0.40),
        note=_G_TRANSCRIBED + " Gemini CLI's configured model with no -m (and what it turns "
        "-m gemini-3-pro-preview into). Its minimum prefix is Gemini 3 Pro Preview's on the "
        "caching page (" + _G_CACHING + "), which does not list 3.1.",
        unverified=("min_prefix",),
    ),
    _gemini(
        "gemini-3-pro-preview",
        (2.0, 12.0, 0.20),
        4096,
        _G_PRICING,
        long=(4.0, 18.0, 0.40),
        note=_G_TRANSCRIBED + " Minimum prefix from the caching page. Shut down on the API on "
        "2026-03-09 (the id then points to 3.1 Pro), as guides citing the models page say.",
    ),
    _gemini(
        "gemini-3-flash-preview",
        (0.50, 3.0, 0.05),
        1024,
        _G_PRICING,
        aliases=("gemini-3-flash",),
        note="The figures as factquire.com quoted the pricing page on 2026-07-04; minimum "
        "prefix from the caching page (" + _G_CACHING + ").",
    ),
    _gemini(
        "gemini-3.1-flash-lite-preview",
        (0.25, 1.50, 0.025),
        1024,
        _G_PRICING,
        note=_G_TRANSCRIBED + " The caching page lists no Flash-Lite minimum: Flash's 1,024 "
        "assumed.",
        unverified=("min_prefix",),
    ),
    _gemini(
        "gemini-2.5-pro",
        (1.25, 10.0, 0.125),
        4096,
        _G_PRICING,
        long=(2.50, 15.0, 0.25),
        note=_G_TRANSCRIBED + " Minimum prefix from the caching page (" + _G_CACHING + "; "
        "2,048 in its 2025 text). Announced to shut down on 2026-12-01.",
    ),
    _gemini(
        "gemini-2.5-flash",
        (0.30, 2.50, 0.03),
        1024,
        _G_PRICING,
        note=_G_TRANSCRIBED + " Minimum prefix from the caching page. Announced to shut down "
        "on 2026-12-01.",
    ),
    _gemini(
        "gemini-2.5-flash-lite",
        (0.10, 0.40, 0.01),
        1024,
        _G_PRICING,
        note=_G_TRANSCRIBED + " The caching page lists no Flash-Lite minimum: Flash's 1,024 "
        "assumed.",
        unverified=("min_prefix",),
    ),
)

CONTEXT_WINDOWS: dict[str, int] = {
    # Claude: 200,000 input tokens on the platform's models pages (1M only behind a beta header
    # an agent sets itself).
    "anthropic": 200_000,
    # OpenAI, as Codex CLI 0.171's bundled model catalog gives each (its ``context_window``:
    # the input the model takes; Codex compacts at 90% of it), and the models pages for the
    # others: GPT-5 to 5.5, 400,000 with 128,000 of output, so 272,000 of input.
    "gpt-6.2-sol": 500_000,
    "gpt-6.1-sol": 500_000,
    "gpt-6.2-astra": 272_000,
    "gpt-6-astra": 272_000,
    "gpt-6-sol": 272_000,
    "gpt-6-luna": 272_000,
    "gpt-5.6-sol": 272_000,
    "gpt-5.6-terra": 272_000,
    "gpt-5.6-luna": 272_000,
    "gpt-5.5": 272_000,
    "gpt-5.4": 272_000,
    "gpt-5.4-mini": 272_000,
    "gpt-5.4-nano": 272_000,
    "gpt-5.3-codex": 272_000,
    "gpt-5.2": 272_000,
    "gpt-5.2-codex": 272_000,
    "gpt-5.1": 272_000,
    "gpt-5.1-codex-mini": 272_000,
    "gpt-5": 272_000,
    "gpt-5-mini": 272_000,
    "gpt-5-nano": 272_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "o3": 200_000,
    "o4-mini": 200_000,
    # Gemini: 1,048,576 input tokens on its models page, for every model it lists here.
    "gemini": 1_048_576,
}
"""Each row's window, by its model or, for every row of it, by its provider."""


def _windowed(rows: tuple[ModelPrice, ...]) -> tuple[ModelPrice, ...]:
    return tuple(
        replace(r, context_window=CONTEXT_WINDOWS.get(r.model) or CONTEXT_WINDOWS.get(r.provider))
        for r in rows
    )


PRICES: tuple[ModelPrice, ...] = _windowed(ANTHROPIC_ROWS + OPENAI_ROWS + GEMINI_ROWS)

FALLBACK: dict[str, str] = {
    "anthropic": "claude-opus-5-5",
    "openai": "gpt-6.2-sol",
    "gemini": "gemini-3.1-pro-preview",
}
"""Each provider's most common row, for a model the table does not know (Claude Code's default
model; OpenAI's everyday Sol; the model Gemini CLI is configured with by default). Every
Gemini row caches alike (a tenth, no premium, any prefix): a Gemini name the table lacks is
priced by its multiples rightly, its dollars as 3.1 Pro's."""

# -- names ---------------------------------------------------------------------------------------

_BEDROCK_PREFIX = re.compile(r"^(?:[a-z]+(?:-[a-z]+)?\.)?anthropic\.")
_BEDROCK_VERSION = re.compile(r"(?:-v\d+)?(?::\d+)?$")
_BRACKETS = re.compile(r"\[[^\]]*\]$")
_DATE = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})(?=-|$)")
_WORD = re.compile(r"-([a-z][a-z0-9]*)(?=-|$)")
_OTHER_TIER = frozenset(
    {
        "astra",
        "audio",
        "chat",
        "codex",
        "deep",
        "fable",
        "fast",
        "flash",
        "haiku",
        "image",
        "instant",
        "lite",
        "luna",
        "max",
        "mini",
        "mythos",
        "nano",
        "opus",
        "preview",
        "pro",
        "realtime",
        "research",
        "search",
        "sol",
        "sonnet",
        "spark",
        "terra",
        "transcribe",
        "tts",
        "turbo",
        "ultrafast",
    }
)
"""Suffix words that name another model or tier, billed on its own: a name that goes on with
one of them is never its prefix's row."""


def normalize(model: str | None) -> str:
    """The id a name stands for: lowercase, without a provider path (``anthropic/``,
    ``openai/``, ``models/``), a ``[1m]`` suffix, a Bedrock ``us.anthropic.`` prefix and
    ``-v1:0`` suffix; Vertex's ``@`` date as a dash; dots in a Claude version as dashes."""
    name = (model or "").strip().lower().rsplit("/", 1)[-1]
    name = _BRACKETS.sub("", name)
    if _BEDROCK_PREFIX.match(name):
        name = _BEDROCK_VERSION.sub("", _BEDROCK_PREFIX.sub("", name))
    name = name.replace("@", "-")
    if name.startswith("claude"):
        name = name.replace(".", "-")
    return name


def provider_of(model: str | None) -> Provider:
    """Whose model a name is (``cache.pricing: auto``). Unknown names are Anthropic's, the
    provider whose prices punish a broken prefix most."""
    name = normalize(model)
    if name.startswith("claude"):
        return "anthropic"
    if name.startswith(("gpt", "chatgpt", "codex")) or (
        len(name) > 1 and name[0] == "o" and name[1].isdigit()
    ):
        return "openai"
    if name.startswith("gemini"):
        return "gemini"
    return "anthropic"


def _index(rows: tuple[ModelPrice, ...]) -> dict[str, ModelPrice]:
    index: dict[str, ModelPrice] = {}
    for row in rows:
        for name in (row.model, *row.aliases):
            key = normalize(name)
            if key in index:
                raise ValueError(f"{name} names two rows: {index[key].model} and {row.model}")
            index[key] = row
    return index


_BY_NAME = _index(PRICES)


def _same_model(rest: str) -> bool:
    """Whether what follows a row's id still names that model: dates, and words that name no
    other tier (``-20250929``, ``-2025-08-07``, ``-latest``, ``-thinking``). A version
    (``-6``, ``.1``) or another tier (``-mini``, ``-pro``) is another model."""
    while rest:
        found = _DATE.match(rest) or _WORD.match(rest)
        if found is None or found.group(0)[1:] in _OTHER_TIER:
            return False
        rest = rest[found.end() :]
    return True


_GEMINI_SNAPSHOT = re.compile(r"(?:-preview)?(?:-\d{2,4})+$|-(?:latest|exp)$")
"""What follows a Gemini model's id in one of its snapshots: ``-001``, ``-preview-05-20``,
``-preview-09-2025``, ``-latest``, ``-exp``: the same model, billed as it."""


def _same_gemini(rest: str) -> bool:
    return _GEMINI_SNAPSHOT.fullmatch(rest) is not None or _same_model(rest)


def _family(name: str, provider: Provider) -> ModelPrice | None:
    best: tuple[int, ModelPrice] | None = None
    same = _same_gemini if provider == "gemini" else _same_model
    for key, row in _BY_NAME.items():
        if (
            row.provider == provider
            and len(key) < len(name)
            and name.startswith(key)
            and same(name[len(key) :])
            and (best is None or len(key) > best[0])
        ):
            best = (len(key), row)
    return None if best is None else best[1]


def lookup(model: str | None) -> Lookup:
    """The row that prices ``model``: its own, its family's, or its provider's fallback."""
    name = normalize(model)
    provider = provider_of(model)
    row = _BY_NAME.get(name)
    if row is not None:
        return Lookup(row, "exact")
    row = _family(name, provider) if name else None
    if row is not None:
        return Lookup(row, "family")
    fallback = FALLBACK.get(provider)
    if fallback is None:
        return Lookup(None, "unpriced")
    return Lookup(_BY_NAME[fallback], "fallback")


def binds_thinking(model: str | None) -> bool:
    """Whether ``model`` checks the prefix of the thinking blocks sent back to it, as its row
    (``lookup``) says. A Claude model the table does not know takes its provider's fallback
    row, which does: every Claude model since Fable 5.1 does, and a wrongly bound model only
    loses some savings, where a wrongly unbound one gets its requests refused. So does a session
    that never named its model (``provider_of`` takes an unknown name for Anthropic's)."""
    row = lookup(model).row
    return row is not None and row.bound_thinking


# -- derived ---------------------------------------------------------------------------------------


def multiples(row: ModelPrice) -> Multiples:
    """The row's cache prices as multiples of its input price. A free input (an override of
    0) makes every token alike: 1, 1, 1."""
    if row.input == 0:
        return Multiples(1.0, 1.0, None if row.cache_write_1h is None else 1.0)

    def ratio(price: float) -> float:
        return round(price / row.input, 9)  # 0.30 / 3.00 is 0.1, not 0.09999999999999999

    write_1h = None if row.cache_write_1h is None else ratio(row.cache_write_1h)
    return Multiples(ratio(row.cache_read), ratio(row.cache_write_5m), write_1h)


def at_prompt(row: ModelPrice, prompt_tokens: int) -> ModelPrice:
    """The row as it bills a request of ``prompt_tokens`` prompt tokens (every input token,
    cached ones included): its long-prompt prices past the threshold."""
    tier = row.long
    if tier is None or prompt_tokens <= tier.above:
        return row
    return replace(
        row,
        input=tier.input,
        output=tier.output,
        cache_read=tier.cache_read,
        cache_write_5m=tier.cache_write_5m,
        cache_write_1h=tier.cache_write_1h,
    )


# -- a user's override ---------------------------------------------------------------------------

_NUMBER = "a number >= 0"
_POSITIVE = "a positive integer"
_OVERRIDES: dict[str, tuple[str, str]] = {
    "input": ("input", _NUMBER),
    "output": ("output", _NUMBER),
    "cacheRead": ("cache_read", _NUMBER),
    "cacheWrite5m": ("cache_write_5m", _NUMBER),
    "cacheWrite1h": ("cache_write_1h", _NUMBER),
    "ttlSeconds": ("ttl_s", _POSITIVE),
    "minPrefix": ("min_prefix", _POSITIVE),
}
"""The override's JSON keys -> (the row's field, what a value must be)."""


class PriceOverrideError(ValueError):
    """A price override of the wrong shape: ``key`` is the JSON key ("" for the override
    itself), ``expected`` what it had to be."""

    def __init__(self, key: str, expected: str, value: object) -> None:
        where = key or "the price override"
        super().__init__(f"{where}: expected {expected}, got {value!r}")
        self.key = key
        self.expected = expected
        self.value = value


def _checked(key: str, expected: str, value: object) -> float | int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise PriceOverrideError(key, expected, value)
    if expected == _POSITIVE:
        if not isinstance(value, int) or value <= 0:
            raise PriceOverrideError(key, expected, value)
        return value
    if not math.isfinite(value) or value < 0:
        raise PriceOverrideError(key, expected, value)
    return float(value)


def override(row: ModelPrice, mapping: object) -> ModelPrice:
    """The row with a user's override of it: a JSON object with any of ``input``, ``output``,
    ``cacheRead``, ``cacheWrite5m``, ``cacheWrite1h`` (numbers >= 0, dollars per million
    tokens), ``ttlSeconds`` and ``minPrefix`` (positive integers). Only what it names changes;
    the provider's long-prompt prices stay as published. Any wrong shape raises
    ``PriceOverrideError`` naming the key, before anything is applied."""
    if not isinstance(mapping, Mapping):
        raise PriceOverrideError("", "a JSON object", mapping)
    changes: dict[str, float | int] = {}
    for key, value in mapping.items():
        if not isinstance(key, str) or key not in _OVERRIDES:
            raise PriceOverrideError(str(key), "one of " + ", ".join(_OVERRIDES), value)
        field, expected = _OVERRIDES[key]
        changes[field] = _checked(key, expected, value)
    if not changes:
        return row
    return replace(row, **changes)  # type: ignore[arg-type]
