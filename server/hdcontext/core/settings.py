"""The ``hdcontext`` settings (PROTOCOL.md "Settings"): one typed model, validation, resolution.

``Settings`` is the whole set of resolved values, typed: code reads ``values.context_limit``,
never a string key, so a typo is a type error. Each field's wire key (its alias), default,
range and the words a refusal uses live on the field, in one place.

Values arrive from three places and resolve in this order (REQ-HD-001.10, REQ-HD-009): a
per-session override, the IDE settings, the default (for ``compression.threshold``, the active
strategy's default threshold). Every resolved value carries its source so a user can see why a
value is what it is. A value of the wrong type or range is refused with a message naming the
key, the value and what was expected; the caller keeps the previous value.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, TypeAlias, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictStr,
    ValidationError,
)
from pydantic.config import JsonDict
from pydantic.fields import FieldInfo

from .prices import PRICES, PriceOverrideError, lookup, normalize, override

Masking: TypeAlias = Literal["off", "cold", "always"]
"""``compression.density.masking``: whether tool output the model has read becomes a pointer,
and when (``density/masking.py``)."""

MASK_RETENTION = 3
"""``compression.density.maskRetention``'s default: the newest tool outputs never masked.
Provisional: the replay (``bench/holdout.py``, each project left out in turn) picks it."""

Source: TypeAlias = Literal["override", "settings", "default"]

StrategyName: TypeAlias = Literal["high-density", "middle-out", "top-down-truncation", "one-shot"]
STRATEGY_NAMES: tuple[StrategyName, ...] = get_args(StrategyName)

DEFAULT_THRESHOLDS: dict[StrategyName, float] = {
    "high-density": 0.85,
    "middle-out": 0.85,
    "top-down-truncation": 0.85,
    "one-shot": 0.85,
}
"""Each strategy's ``trigger.defaultThreshold`` (REQ-HD-001.1): what an unset
``compression.threshold`` resolves to. The strategies declare their triggers from it."""

Schedule: TypeAlias = Literal["cache-aware", "every-turn"]
Pricing: TypeAlias = Literal["auto", "anthropic", "openai", "gemini", "none"]
Provider: TypeAlias = Literal["client", "openai"]
Ttl: TypeAlias = Literal["5m", "1h", "auto"]

# REQ-HD-005.2/005.3 plus the names other agents give the same tools.
DEFAULT_READ_TOOLS: tuple[str, ...] = (
    "read_file",
    "read_line_range",
    "read_many_files",
    "ast_read_file",
    # Claude Code
    "Read",
    "NotebookRead",
    # opencode, Cline, Cursor-style agents
    "read",
    "view_file",
)
DEFAULT_WRITE_TOOLS: tuple[str, ...] = (
    "write_file",
    "ast_edit",
    "replace",
    "insert_at_line",
    "delete_line_range",
    # Claude Code
    "Write",
    "Edit",
    "MultiEdit",
    "NotebookEdit",
    # opencode, Cline, Cursor-style agents
    "write",
    "edit",
    "edit_file",
    "create_file",
    "write_to_file",
    "replace_in_file",
    # Codex: a patch of its own format, as a freeform tool's input (tools/patch.py)
    "apply_patch",
)
# Tools whose ``command`` (or ``cmd``) runs in a shell: gemini-cli/llxprt, Claude Code,
# mini-swe-agent, and Codex's by version: ``shell`` (an argv, 0.34-0.58), ``shell_command``
# (0.77), ``exec_command`` (0.98 on) and the Responses API's ``local_shell``.
DEFAULT_SHELL_TOOLS: tuple[str, ...] = (
    "bash",
    "Bash",
    "run_shell_command",
    "shell",
    "shell_command",
    "exec_command",
    "local_shell",
)


# -- value types: what a JSON settings value may be, and what it becomes ----------------------


def _number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError("not a number")
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return float(value)


def _integer(value: object) -> int:
    if isinstance(value, float) and value.is_integer():
        return int(value)  # editors write 200000 as 200000.0 at times
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("not an integer")
    return value


def _names(value: object) -> tuple[str, ...]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and v for v in value):
        raise ValueError("not a list of names")
    return tuple(value)


def _price_overrides(value: object) -> dict[str, dict[str, Any]]:
    """``cache.prices``: model id -> an override of its price-table row, each checked as the
    table applies it (``prices.override``), so a wrong shape is refused whole."""
    if not isinstance(value, Mapping) or not all(isinstance(k, str) and k for k in value):
        raise ValueError("not an object of model ids")
    out: dict[str, dict[str, Any]] = {}
    for model, fields in value.items():
        try:
            override(lookup(model).row or PRICES[0], fields)
        except PriceOverrideError as err:
            raise ValueError(str(err)) from None
        assert isinstance(fields, Mapping)
        out[normalize(model)] = dict(fields)
    return out


Number = Annotated[float, BeforeValidator(_number)]
Integer = Annotated[int, BeforeValidator(_integer)]
Names = Annotated[tuple[str, ...], BeforeValidator(_names)]
PriceOverrides = Annotated[dict[str, dict[str, Any]], BeforeValidator(_price_overrides)]


def _key(alias: str, default: object, expected: str, description: str = "", **bounds: Any) -> Any:
    """A settings field: its wire key, default, bounds, and the words a refusal uses."""
    extra: JsonDict = {"expected": expected}
    return Field(default, alias=alias, description=description, json_schema_extra=extra, **bounds)


class Settings(BaseModel):
    """Every ``hdcontext`` setting, resolved. Built only by ``resolve``."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    strategy: StrategyName = _key(
        "compression.strategy",
        "high-density",
        "one of " + ", ".join(STRATEGY_NAMES),
        "The one active strategy.",
    )
    threshold: Number | None = _key(
        "compression.threshold",
        None,
        "a number in (0, 1]",
        "Share of the context limit at which compress() runs; unset: the strategy's default.",
        gt=0,
        le=1,
    )
    preserve_threshold: Number = _key(
        "compression.preserveThreshold",
        0.3,
        "a number in (0, 1)",
        "Recent share of the history kept verbatim by compression.",
        gt=0,
        lt=1,
    )
    top_preserve_threshold: Number = _key(
        "compression.topPreserveThreshold",
        0.2,
        "a number in (0, 1)",
        "Share of the history's head that middle-out keeps verbatim.",
        gt=0,
        lt=1,
    )
    read_write_pruning: StrictBool = _key("compression.density.readWritePruning", True, "a boolean")
    file_dedupe: StrictBool = _key("compression.density.fileDedupe", True, "a boolean")
    recency_pruning: StrictBool = _key("compression.density.recencyPruning", False, "a boolean")
    recency_retention: Integer = _key(
        "compression.density.recencyRetention", 3, "an integer (below 1 counts as 1)"
    )
    schedule: Schedule = _key(
        "compression.density.schedule",
        "cache-aware",
        "one of cache-aware, every-turn",
        "When density edits apply: when they pay under prompt caching, or at every compact.",
    )
    keep_latest_view: StrictBool = _key(
        "compression.density.keepLatestView",
        True,
        "a boolean",
        "A read goes as stale only when a later full view of the file is in the history.",
    )
    masking: Masking = _key(
        "compression.density.masking",
        "cold",
        "one of off, cold, always",
        "Tool output the model has answered becomes a pointer (the latest view of each file and"
        " the newest maskRetention outputs stay): cold, only when that costs no cache rewrite;"
        " always, whenever it pays under the schedule. Needs keepLatestView.",
    )
    mask_retention: Integer = _key(
        "compression.density.maskRetention",
        MASK_RETENTION,
        "an integer >= 0",
        "How many of the newest tool outputs masking leaves as they are.",
        ge=0,
    )
    context_limit: Integer = _key("contextLimit", 200_000, "a positive integer", gt=0)
    read_tools: Names = _key("tools.read", DEFAULT_READ_TOOLS, "a list of tool names")
    write_tools: Names = _key("tools.write", DEFAULT_WRITE_TOOLS, "a list of tool names")
    shell_tools: Names = _key(
        "tools.shell",
        DEFAULT_SHELL_TOOLS,
        "a list of tool names",
        "Tools that run a shell command; their plain file reads and writes count.",
    )
    watch_enabled: StrictBool = _key("watch.enabled", True, "a boolean")
    summarizer_provider: Provider = _key("summarizer.provider", "client", "one of client, openai")
    summarizer_base_url: StrictStr | None = _key("summarizer.baseUrl", None, "a string")
    summarizer_model: StrictStr | None = _key("summarizer.model", None, "a string")
    summarizer_api_key_env: StrictStr | None = _key("summarizer.apiKeyEnv", None, "a string")
    cache_pricing: Pricing = _key(
        "cache.pricing",
        "auto",
        "one of auto, anthropic, openai, gemini, none",
        "Whose prompt-cache prices to plan with; auto: from the session's model.",
    )
    cache_ttl_seconds: Integer | None = _key(
        "cache.ttlSeconds",
        None,
        "a positive integer",
        "How long the provider keeps a prompt cache; unset: from cache.pricing.",
        gt=0,
    )
    cache_read_cost: Number | None = _key(
        "cache.readCost",
        None,
        "a number >= 0",
        "A cached input token, as a multiple of an uncached one; unset: from cache.pricing.",
        ge=0,
    )
    cache_write_cost: Number | None = _key(
        "cache.writeCost",
        None,
        "a number >= 0",
        "A newly cached input token, as a multiple of an uncached one; unset: from pricing.",
        ge=0,
    )
    cache_max_breakpoints: Integer = _key(
        "cache.maxBreakpoints",
        2,
        "an integer from 1 to 4",
        "Message cache breakpoints the client places where cache.breakpoints says "
        "(1: only the last message carries one).",
        ge=1,
        le=4,
    )
    cache_prices: PriceOverrides = _key(
        "cache.prices",
        {},
        "an object of model ids, each with any of input, output, cacheRead, cacheWrite5m, "
        "cacheWrite1h (numbers >= 0, dollars per million tokens), ttlSeconds, minPrefix "
        "(positive integers)",
        "Your prices for a model, over the price table's row (a negotiated rate, a model "
        "the table lacks).",
    )
    cache_ttl: Ttl = _key(
        "cache.ttl",
        "5m",
        "one of 5m, 1h, auto",
        "The lifetimes the client can ask its cache breakpoints: the provider's default only "
        "(5m), an hour on every one (1h), or each as cache.breakpointTtls says (auto).",
    )
    cache_refresh: StrictBool = _key(
        "cache.refresh",
        False,
        "a boolean",
        "The client makes a refresh call when cache.refreshAt says (a call the user did not "
        "make, so off unless turned on).",
    )
    cache_refresh_idle_seconds: Integer = _key(
        "cache.refreshIdleSeconds",
        3600,
        "a positive integer",
        "No refresh call once the session has been idle this long.",
        gt=0,
    )


FIELDS: dict[str, tuple[str, FieldInfo]] = {
    str(info.alias): (name, info) for name, info in Settings.model_fields.items()
}
"""Wire key -> (field name, field)."""

KEYS: tuple[str, ...] = tuple(FIELDS)


class SettingError(ValueError):
    def __init__(self, key: str, value: object, expected: str) -> None:
        self.key = key
        self.value = value
        self.expected = expected
        super().__init__(f"setting '{key}': {_show(value)} is not valid, expected {expected}")


def _show(value: object) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _expected(info: FieldInfo) -> str:
    extra = info.json_schema_extra
    return str(extra["expected"]) if isinstance(extra, dict) else "a valid value"


def validate(key: str, value: object) -> object:
    """The value as stored (JSON), or SettingError. ``None`` means unset and is always valid."""
    found = FIELDS.get(key)
    if found is None:
        raise SettingError(key, value, "a known hdcontext setting")
    if value is None:
        return None
    name, info = found
    try:
        checked = getattr(Settings.model_validate({key: value}), name)
    except ValidationError:
        raise SettingError(key, value, _expected(info)) from None
    if checked is None:
        raise SettingError(key, value, _expected(info))
    return list(checked) if isinstance(checked, tuple) else checked


def flatten(section: Mapping[str, Any]) -> dict[str, Any]:
    """Nested (``{"compression": {"strategy": ...}}``) and dotted keys, to dotted keys.

    A known key wins over descending into it: ``tools.read`` is a list, not a section.
    """
    out: dict[str, Any] = {}

    def walk(prefix: str, node: Mapping[str, Any]) -> None:
        for name, value in node.items():
            key = f"{prefix}.{name}" if prefix else str(name)
            if key not in FIELDS and isinstance(value, Mapping):
                walk(key, value)
            else:
                out[key] = value

    walk("", section)
    return out


def merge_section(
    previous: Mapping[str, object], section: Mapping[str, Any]
) -> tuple[dict[str, object], list[SettingError]]:
    """Apply a freshly pulled settings section.

    The section replaces the previous one (a key the user removed returns to its default),
    except that a refused value leaves the previous value of that key standing.
    Unknown keys are ignored: editors send their own keys in the same section.
    """
    merged: dict[str, object] = {}
    errors: list[SettingError] = []
    for key, value in flatten(section).items():
        if key not in FIELDS:
            continue
        try:
            stored = validate(key, value)
        except SettingError as err:
            errors.append(err)
            if key in previous:
                merged[key] = previous[key]
            continue
        if stored is not None:
            merged[key] = stored
    return merged, errors


@dataclass(frozen=True)
class Resolved:
    """Every setting's effective value (typed) and where it came from."""

    values: Settings
    sources: Mapping[str, Source]

    @property
    def threshold(self) -> float:
        """``compression.threshold``, or the active strategy's default when unset."""
        threshold = self.values.threshold
        return DEFAULT_THRESHOLDS[self.values.strategy] if threshold is None else threshold

    def to_wire(self) -> dict[str, object]:
        values = self.values.model_dump(mode="json", by_alias=True)
        values["compression.threshold"] = self.threshold
        return {"values": values, "sources": dict(self.sources)}


def resolve(overrides: Mapping[str, object], settings: Mapping[str, object]) -> Resolved:
    """Override, else IDE setting, else default, key by key. Both mappings hold values as
    ``validate`` stored them, so building the model cannot fail."""
    chosen: dict[str, object] = {}
    sources: dict[str, Source] = {}
    for key in KEYS:
        if overrides.get(key) is not None:
            chosen[key], sources[key] = overrides[key], "override"
        elif settings.get(key) is not None:
            chosen[key], sources[key] = settings[key], "settings"
        else:
            sources[key] = "default"
    return Resolved(Settings.model_validate(chosen), sources)
