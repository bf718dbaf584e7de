"""The price table (``core/prices.py``): its rows as published on the checked date, the
lookup's three ways on real ids, the multiples the cost model plans with, and a user's override.

A changed figure here is a deliberate change to the table: update ``PRICES_CHECKED`` with it.
"""

from __future__ import annotations

import math
from dataclasses import fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hdcontext.core.cache import pricing
from hdcontext.core.prices import (
    FALLBACK,
    PRICES,
    PRICES_CHECKED,
    LongPrompt,
    ModelPrice,
    Multiples,
    PriceOverrideError,
    at_prompt,
    lookup,
    multiples,
    normalize,
    override,
    provider_of,
)
from hdcontext.core.settings import Settings

ROWS = {row.model: row for row in PRICES}


def figures(model: str) -> tuple[float, float, float, float, float | None, int, int]:
    row = ROWS[model]
    return (
        row.input,
        row.output,
        row.cache_read,
        row.cache_write_5m,
        row.cache_write_1h,
        row.ttl_s,
        row.min_prefix,
    )


# -- the rows as published ---------------------------------------------------------------------


def test_the_table_is_dated() -> None:
    assert PRICES_CHECKED == "2026-11-26"


@pytest.mark.parametrize(
    ("model", "published"),
    [
        ("claude-opus-5-5", (4.0, 20.0, 0.20, 5.0, 8.0, 300, 512)),
        ("claude-sonnet-5-5", (2.0, 10.0, 0.10, 2.50, 4.0, 300, 512)),
        ("claude-fable-5-1", (10.0, 50.0, 0.25, 12.50, 20.0, 300, 512)),
        ("claude-opus-5", (5.0, 25.0, 0.50, 6.25, 10.0, 300, 512)),
        ("claude-sonnet-4-5", (3.0, 15.0, 0.30, 3.75, 6.0, 300, 1024)),
        ("claude-haiku-4-5", (1.0, 5.0, 0.10, 1.25, 2.0, 300, 4096)),
        ("claude-opus-4-1", (15.0, 75.0, 1.50, 18.75, 30.0, 300, 1024)),
        ("gpt-6.2-sol", (2.0, 10.0, 0.10, 2.50, None, 1800, 1024)),
        ("gpt-6-sol", (2.0, 10.0, 0.20, 2.50, None, 1800, 1024)),
        ("gpt-5.6-sol", (4.0, 20.0, 0.40, 5.0, None, 1800, 1024)),
        ("gpt-4.1", (2.0, 8.0, 0.50, 2.0, None, 300, 1024)),
        ("gemini-3.1-pro-preview", (2.0, 12.0, 0.20, 2.0, None, 300, 4096)),
        ("gemini-3-flash-preview", (0.50, 3.0, 0.05, 0.50, None, 300, 1024)),
        ("gemini-2.5-pro", (1.25, 10.0, 0.125, 1.25, None, 300, 4096)),
        ("gemini-2.5-flash", (0.30, 2.50, 0.03, 0.30, None, 300, 1024)),
        ("gemini-2.5-flash-lite", (0.10, 0.40, 0.01, 0.10, None, 300, 1024)),
    ],
)
def test_rows_as_published(
    model: str, published: tuple[float, float, float, float, float | None, int, int]
) -> None:
    assert figures(model) == published


def test_the_providers_geometry() -> None:
    opus = ROWS["claude-opus-5-5"]
    assert (opus.at_breakpoints, opus.lookback_blocks, opus.max_breakpoints) == (True, 20, 4)
    assert opus.assistant_breakpoints and not opus.retention_24h
    sol = ROWS["gpt-6.2-sol"]
    assert (sol.at_breakpoints, sol.lookback_blocks, sol.max_entries) == (True, None, 80)
    assert sol.max_breakpoints == 4 and not sol.assistant_breakpoints
    old = ROWS["gpt-4.1"]
    assert (old.at_breakpoints, old.max_breakpoints, old.retention_24h) == (False, 0, True)
    assert not ROWS["o3"].retention_24h
    for row in PRICES:
        if row.provider == "gemini":
            # Implicit caching: any shared prefix, a tenth, no write premium, no breakpoint.
            assert (row.at_breakpoints, row.max_breakpoints, row.lookback_blocks) == (
                False,
                0,
                None,
            )
            assert multiples(row) == Multiples(0.1, 1.0, None), row.model
            assert "ttl_s" in row.unverified


def test_long_prompts_are_billed_higher_where_the_provider_says() -> None:
    haiku = ROWS["claude-haiku-5-5"]
    assert haiku.long == LongPrompt(100_000, 0.50, 2.50, 0.05, 0.625, 1.0)
    assert at_prompt(haiku, 100_000) is haiku
    long = at_prompt(haiku, 100_001)
    assert (long.input, long.output, long.cache_read) == (0.50, 2.50, 0.05)
    assert (long.cache_write_5m, long.cache_write_1h) == (0.625, 1.0)
    pro = at_prompt(ROWS["gemini-2.5-pro"], 200_001)
    assert (pro.input, pro.output, pro.cache_read, pro.cache_write_5m) == (2.50, 15.0, 0.25, 2.50)
    assert at_prompt(ROWS["gemini-2.5-pro"], 200_000) is ROWS["gemini-2.5-pro"]
    sol = at_prompt(ROWS["gpt-6.2-sol"], 272_001)
    assert (sol.input, sol.output, sol.cache_read, sol.cache_write_5m) == (4.0, 15.0, 0.20, 5.0)
    assert at_prompt(ROWS["claude-opus-5-5"], 900_000) is ROWS["claude-opus-5-5"]


def test_every_row_names_its_source_and_what_it_assumed() -> None:
    names = {f.name for f in fields(ModelPrice)}
    for row in PRICES:
        assert row.source.startswith("https://"), row.model
        assert set(row.unverified) <= names, row.model
        if row.unverified:
            assert row.note, row.model


def test_each_provider_falls_back_to_a_row_of_its_own() -> None:
    for provider, model in FALLBACK.items():
        assert ROWS[model].provider == provider
    assert set(FALLBACK) == {"anthropic", "openai", "gemini"}


# -- the lookup ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("claude-opus-5-5", "claude-opus-5-5"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-opus-5-5[1m]", "claude-opus-5-5"),
        ("anthropic/claude-sonnet-4.5", "claude-sonnet-4-5"),
        ("us.anthropic.claude-opus-4-1-20250805-v1:0", "claude-opus-4-1"),
        ("claude-sonnet-4-5@20250929", "claude-sonnet-4-5"),
        ("claude-mythos-5-1", "claude-fable-5-1"),
        ("gpt-5.6", "gpt-5.6-sol"),
        ("openai/gpt-6.2-sol", "gpt-6.2-sol"),
        ("gpt-5.1-codex-max", "gpt-5.1"),
    ],
)
def test_exact_ids_and_aliases(name: str, model: str) -> None:
    found = lookup(name)
    assert found.how == "exact"
    assert found.row is ROWS[model]


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("claude-opus-4-6-20260205", "claude-opus-4-6"),
        ("claude-sonnet-4-6-20260217", "claude-sonnet-4-6"),
        ("claude-opus-5-5-x", "claude-opus-5-5"),
        ("claude-haiku-5-5-thinking", "claude-haiku-5-5"),
        ("gpt-5.6-sol-2026-07-09", "gpt-5.6-sol"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("o4-mini-2025-04-16", "o4-mini"),
        ("o3-2025-04-16", "o3"),
    ],
)
def test_dated_snapshots_are_their_familys_row(name: str, model: str) -> None:
    found = lookup(name)
    assert found.how == "family"
    assert found.row is ROWS[model]


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("claude-foo", "claude-opus-5-5"),
        (None, "claude-opus-5-5"),
        ("", "claude-opus-5-5"),
        ("claude-opus-5-6", "claude-opus-5-5"),
        ("gpt-9-turbo", "gpt-6.2-sol"),
        ("gpt-5.6-mini", "gpt-6.2-sol"),
        ("gpt-5-pro", "gpt-6.2-sol"),
        ("o3-mini", "gpt-6.2-sol"),
        ("o4-mini-deep-research", "gpt-6.2-sol"),
    ],
)
def test_an_unknown_model_gets_its_providers_fallback(name: str | None, model: str) -> None:
    found = lookup(name)
    assert found.how == "fallback"
    assert found.row is ROWS[model]


def test_never_another_familys_row() -> None:
    # the longest id wins: Opus 5.5's snapshot is not Opus 5's, Opus 4.5's is not Opus 4's
    assert lookup("claude-opus-5-5-20260922").row is ROWS["claude-opus-5-5"]
    assert lookup("claude-opus-4-5-20251101").row is ROWS["claude-opus-4-5"]
    assert lookup("claude-opus-4-20250514").row is ROWS["claude-opus-4-0"]
    # a newer version, or another tier, is never priced as its prefix's row
    assert lookup("claude-opus-4-9").how == "fallback"
    assert lookup("gpt-6-sol-mini").how == "fallback"


@pytest.mark.parametrize(
    ("name", "model", "how"),
    [
        ("models/gemini-2.5-pro", "gemini-2.5-pro", "exact"),
        ("gemini-3.1-pro-preview-customtools", "gemini-3.1-pro-preview", "exact"),
        ("GEMINI-3-flash", "gemini-3-flash-preview", "exact"),
        ("gemini-2.5-flash-001", "gemini-2.5-flash", "family"),
        ("gemini-2.5-flash-preview-09-2025", "gemini-2.5-flash", "family"),
        ("gemini-2.5-pro-preview-05-06", "gemini-2.5-pro", "family"),
        ("gemini-2.5-flash-lite-preview-06-17", "gemini-2.5-flash-lite", "family"),
        ("publishers/google/models/gemini-2.5-flash@001", "gemini-2.5-flash", "family"),
        ("gemini-2.5-flash-image", "gemini-3.1-pro-preview", "fallback"),
        ("gemini-3.8-flash", "gemini-3.1-pro-preview", "fallback"),
        ("context-calibrator", "claude-opus-5-5", "fallback"),
    ],
)
def test_gemini_ids_find_their_row(name: str, model: str, how: str) -> None:
    """A snapshot of a Gemini model is its model's row (never another tier's: an image
    model, a Flash-Lite, are not Flash's); a Gemini name the table lacks takes Gemini's
    fallback, priced with Gemini's cache."""
    found = lookup(name)
    assert (found.row, found.how) == (ROWS[model], how)
    if provider_of(name) == "gemini":
        planned = pricing.pricing_for(Settings(), name)
        assert (planned.name, planned.read, planned.write, planned.at_breakpoints) == (
            "gemini",
            0.1,
            1.0,
            False,
        )


NAMES = [
    None,
    "",
    "claude-opus-5-5",
    "anthropic/claude-sonnet-4-5",
    "us.anthropic.claude-haiku-4-5-20251001-v1:0",
    "gpt-6.2-sol",
    "openai/gpt-4.1",
    "chatgpt-4o-latest",
    "codex-mini-latest",
    "o3",
    "o4-mini",
    "models/gemini-2.5-pro",
    "GEMINI-3-flash",
    "llama-3.3-70b",
    "o",
    "deepseek-v4",
]


@pytest.mark.parametrize("name", NAMES)
def test_provider_of_keeps_pricings_behaviour(name: str | None) -> None:
    assert provider_of(name) == pricing.provider_of(name)


# -- multiples -----------------------------------------------------------------------------------


def test_multiples() -> None:
    assert multiples(ROWS["claude-opus-5-5"]) == Multiples(0.05, 1.25, 2.0)
    assert multiples(ROWS["claude-fable-5-1"]) == Multiples(0.025, 1.25, 2.0)
    assert multiples(ROWS["claude-haiku-4-5"]) == Multiples(0.1, 1.25, 2.0)
    assert multiples(ROWS["gpt-6-sol"]) == Multiples(0.1, 1.25, None)
    assert multiples(ROWS["gpt-4.1"]) == Multiples(0.25, 1.0, None)
    assert multiples(override(ROWS["claude-opus-5-5"], {"input": 0})) == Multiples(1.0, 1.0, 1.0)


# -- a user's override -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mapping", "key"),
    [
        ({"input": -1}, "input"),
        ({"output": "3"}, "output"),
        ({"cacheRead": True}, "cacheRead"),
        ({"cacheWrite5m": None}, "cacheWrite5m"),
        ({"cacheWrite1h": math.inf}, "cacheWrite1h"),
        ({"cacheRead": math.nan}, "cacheRead"),
        ({"ttlSeconds": 0}, "ttlSeconds"),
        ({"ttlSeconds": 300.0}, "ttlSeconds"),
        ({"minPrefix": -512}, "minPrefix"),
        ({"minPrefix": False}, "minPrefix"),
        ({"cache_read": 0.1}, "cache_read"),
        ({"input": 3, "readCost": 0.1}, "readCost"),
    ],
)
def test_a_bad_override_names_the_key(mapping: dict[str, object], key: str) -> None:
    with pytest.raises(PriceOverrideError) as refused:
        override(ROWS["claude-opus-5-5"], mapping)
    assert refused.value.key == key
    assert str(refused.value).startswith(f"{key}: expected ")
    assert isinstance(refused.value, ValueError)


@pytest.mark.parametrize("mapping", [[1, 2], "input=3", 3, None])
def test_an_override_that_is_not_an_object(mapping: object) -> None:
    with pytest.raises(PriceOverrideError, match="expected a JSON object") as refused:
        override(ROWS["claude-opus-5-5"], mapping)
    assert refused.value.key == ""


def test_an_override_changes_only_what_it_names() -> None:
    row = ROWS["claude-opus-5-5"]
    changed = override(row, {"cacheRead": 0.4, "ttlSeconds": 3600, "minPrefix": 1024})
    assert (changed.cache_read, changed.ttl_s, changed.min_prefix) == (0.4, 3600, 1024)
    untouched = {f.name for f in fields(ModelPrice)} - {"cache_read", "ttl_s", "min_prefix"}
    for name in untouched:
        assert getattr(changed, name) == getattr(row, name), name
    assert override(row, {}) is row
    assert override(row, {"input": 4}).input == 4.0


# -- properties ----------------------------------------------------------------------------------


@given(st.sampled_from(PRICES))
def test_every_row_is_self_consistent(row: ModelPrice) -> None:
    assert 0 <= row.cache_read < row.input <= row.cache_write_5m
    if row.cache_write_1h is not None:
        assert row.cache_write_5m <= row.cache_write_1h
    assert row.output > 0 and row.ttl_s > 0 and row.min_prefix > 0
    assert row.max_entries > 0 and row.max_breakpoints >= 0
    assert row.at_breakpoints == (row.max_breakpoints > 0)
    if row.long is not None:
        assert row.long.above > 0
        assert 0 <= row.long.cache_read < row.long.input <= row.long.cache_write_5m
    # the row is found by its own id and every alias, and by a dated snapshot of them
    for name in (row.model, *row.aliases):
        assert lookup(name).row is row
        assert lookup(f"{name}-20261126").row is row


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-._/@[]:", max_size=40))
def test_no_name_is_priced_as_another_providers_row(name: str) -> None:
    found = lookup(name)
    assert found.how in ("exact", "family", "fallback", "unpriced")
    if found.row is None:
        assert provider_of(name) == "gemini"
    else:
        assert found.row.provider == provider_of(name)
    assert normalize(normalize(name)) == normalize(name)


@given(
    st.sampled_from(PRICES),
    st.dictionaries(
        st.sampled_from(["input", "output", "cacheRead", "cacheWrite5m", "cacheWrite1h"]),
        st.floats(min_value=0, max_value=1000, allow_nan=False),
    ),
)
def test_a_good_override_is_applied_whole(row: ModelPrice, mapping: dict[str, float]) -> None:
    changed = override(row, mapping)
    attribute = {
        "input": "input",
        "output": "output",
        "cacheRead": "cache_read",
        "cacheWrite5m": "cache_write_5m",
        "cacheWrite1h": "cache_write_1h",
    }
    for key, value in mapping.items():
        assert getattr(changed, attribute[key]) == value
    for key in set(attribute) - set(mapping):
        assert getattr(changed, attribute[key]) == getattr(row, attribute[key])
