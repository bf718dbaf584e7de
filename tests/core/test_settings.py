"""Settings (REQ-HD-009, REQ-HD-001.10, PROTOCOL.md "Settings"): types, defaults, precedence."""

from __future__ import annotations

import pytest

from hdcontext.core.compression.factory import STRATEGY_NAMES
from hdcontext.core.density.types import DensityConfig
from hdcontext.core.settings import (
    DEFAULT_READ_TOOLS,
    DEFAULT_WRITE_TOOLS,
    KEYS,
    SettingError,
    flatten,
    merge_section,
    resolve,
    validate,
)


def test_every_protocol_key_has_its_default() -> None:
    r = resolve({}, {})
    assert set(KEYS) == {
        "compression.strategy",
        "compression.threshold",
        "compression.preserveThreshold",
        "compression.topPreserveThreshold",
        "compression.density.readWritePruning",
        "compression.density.fileDedupe",
        "compression.density.recencyPruning",
        "compression.density.recencyRetention",
        "contextLimit",
        "tools.read",
        "tools.write",
        "tools.shell",
        "watch.enabled",
        "summarizer.provider",
        "summarizer.baseUrl",
        "summarizer.model",
        "summarizer.apiKeyEnv",
        "compression.density.schedule",
        "compression.density.keepLatestView",
        "compression.density.masking",
        "compression.density.maskRetention",
        "cache.pricing",
        "cache.ttlSeconds",
        "cache.readCost",
        "cache.writeCost",
        "cache.maxBreakpoints",
        "cache.prices",
        "cache.ttl",
        "cache.refresh",
        "cache.refreshIdleSeconds",
    }
    w = r.to_wire()["values"]
    assert isinstance(w, dict)
    assert w["compression.strategy"] == "high-density"
    assert w["compression.preserveThreshold"] == 0.3
    assert w["compression.topPreserveThreshold"] == 0.2
    # REQ-HD-009.1-009.4, REQ-HD-007.4/007.5
    assert w["compression.density.readWritePruning"] is True
    assert w["compression.density.fileDedupe"] is True
    assert w["compression.density.recencyPruning"] is False
    assert w["compression.density.recencyRetention"] == 3
    assert w["contextLimit"] == 200_000
    assert w["cache.maxBreakpoints"] == 2
    assert w["watch.enabled"] is True
    assert w["tools.shell"] == [
        "bash",
        "Bash",
        "run_shell_command",
        "shell",
        "shell_command",
        "exec_command",
        "local_shell",
    ]
    assert w["summarizer.provider"] == "client"
    assert w["summarizer.baseUrl"] is None
    assert w["compression.density.schedule"] == "cache-aware"
    assert w["compression.density.keepLatestView"] is True
    assert w["cache.pricing"] == "auto"
    assert w["cache.ttlSeconds"] is None
    assert w["cache.ttl"] == "5m" and w["cache.refresh"] is False
    assert w["cache.refreshIdleSeconds"] == 3600
    assert set(r.sources.values()) == {"default"}


def test_default_tool_lists_hold_the_seeds_and_claude_code() -> None:
    # REQ-HD-005.2 / 005.3 plus common agents' names (issue 2).
    assert {"read_file", "read_line_range", "read_many_files", "ast_read_file", "Read"} <= set(
        DEFAULT_READ_TOOLS
    )
    assert {
        "write_file",
        "ast_edit",
        "replace",
        "insert_at_line",
        "delete_line_range",
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
    } <= set(DEFAULT_WRITE_TOOLS)
    assert not set(DEFAULT_READ_TOOLS) & set(DEFAULT_WRITE_TOOLS)


def test_req_hd_004_4_strategy_enum_includes_high_density() -> None:
    assert "high-density" in STRATEGY_NAMES
    assert validate("compression.strategy", "high-density") == "high-density"
    with pytest.raises(SettingError):
        validate("compression.strategy", "smart")


def test_req_hd_001_10_threshold_precedence_override_settings_default() -> None:
    unset = resolve({}, {})
    assert unset.threshold == 0.85  # the strategy's trigger.defaultThreshold
    assert unset.sources["compression.threshold"] == "default"
    from_settings = resolve({}, {"compression.threshold": 0.7})
    assert (from_settings.threshold, from_settings.sources["compression.threshold"]) == (
        0.7,
        "settings",
    )
    overridden = resolve({"compression.threshold": 0.5}, {"compression.threshold": 0.7})
    assert (overridden.threshold, overridden.sources["compression.threshold"]) == (
        0.5,
        "override",
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("compression.threshold", 0),
        ("compression.threshold", 1.5),
        ("compression.threshold", "0.8"),
        ("compression.preserveThreshold", 1),
        ("compression.topPreserveThreshold", 0),
        ("compression.density.readWritePruning", "yes"),
        ("compression.density.recencyRetention", 2.5),
        ("compression.density.recencyRetention", True),
        ("contextLimit", 0),
        ("contextLimit", -5),
        ("tools.read", "read_file"),
        ("tools.write", ["ok", 3]),
        ("summarizer.provider", "anthropic"),
        ("summarizer.baseUrl", 42),
        ("no.such.key", 1),
    ],
)
def test_bad_values_are_refused_with_key_value_and_expectation(key: str, value: object) -> None:
    with pytest.raises(SettingError) as err:
        validate(key, value)
    assert err.value.key == key
    assert key in str(err.value)
    assert "expected" in str(err.value)


def test_req_hd_013_6_retention_below_one_counts_as_one() -> None:
    assert validate("compression.density.recencyRetention", 0) == 0
    assert DensityConfig(recency_retention=0).retention == 1
    assert DensityConfig(recency_retention=-3).retention == 1
    assert DensityConfig(recency_retention=5).retention == 5


def test_nested_and_dotted_forms_flatten_alike() -> None:
    nested = {
        "compression": {"strategy": "one-shot", "density": {"fileDedupe": False}},
        "tools": {"read": ["Read"]},
        "contextLimit": 1000,
    }
    dotted = {
        "compression.strategy": "one-shot",
        "compression.density.fileDedupe": False,
        "tools.read": ["Read"],
        "contextLimit": 1000,
    }
    assert flatten(nested) == dotted
    assert flatten(dotted) == dotted


def test_merge_keeps_previous_value_of_a_refused_key_and_reports_it() -> None:
    previous = {"compression.threshold": 0.6, "contextLimit": 5000}
    merged, errors = merge_section(
        previous,
        {"compression": {"threshold": 7}, "contextLimit": 8000, "unrelated": {"x": 1}},
    )
    assert merged == {"compression.threshold": 0.6, "contextLimit": 8000}
    assert [(e.key, e.value) for e in errors] == [("compression.threshold", 7)]
    assert "a number in (0, 1]" in str(errors[0])


def test_merge_returns_removed_keys_to_their_default() -> None:
    merged, errors = merge_section({"contextLimit": 5000}, {"compression": {"strategy": None}})
    assert merged == {}
    assert errors == []
    assert resolve({}, merged).values.context_limit == 200_000


def test_resolved_values_are_typed_fields() -> None:
    r = resolve({"contextLimit": 9000}, {"tools.read": ["Read"], "cache.readCost": 0.2})
    assert r.values.context_limit == 9000
    assert r.values.read_tools == ("Read",)
    assert r.values.cache_read_cost == 0.2
    assert r.values.schedule == "cache-aware"
    assert (r.sources["contextLimit"], r.sources["tools.read"]) == ("override", "settings")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("compression.density.schedule", "sometimes"),
        ("compression.density.keepLatestView", 1),
        ("cache.pricing", "azure"),
        ("cache.ttlSeconds", 0),
        ("cache.readCost", -0.1),
        ("cache.writeCost", "1.25"),
        ("cache.maxBreakpoints", 0),
        ("cache.maxBreakpoints", 5),
        ("cache.maxBreakpoints", "2"),
        ("cache.ttl", "24h"),
        ("cache.ttl", 300),
        ("cache.refresh", "yes"),
        ("cache.refresh", 1),
        ("cache.refreshIdleSeconds", 0),
    ],
)
def test_protocol_v2_settings_are_validated(key: str, value: object) -> None:
    with pytest.raises(SettingError) as err:
        validate(key, value)
    assert err.value.key == key


def test_integral_floats_are_stored_as_ints() -> None:
    assert validate("contextLimit", 1000.0) == 1000
    assert isinstance(validate("contextLimit", 1000.0), int)
