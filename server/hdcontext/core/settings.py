"""The ``hdcontext`` settings (PROTOCOL.md "Settings"): specs, validation, resolution.

Values arrive from three places and resolve in this order (REQ-HD-001.10, REQ-HD-009):
a per-session override, the IDE settings, the default (for ``compression.threshold``, the
active strategy's ``trigger.defaultThreshold``). Every resolved value carries its source so a
user can see why a value is what it is. A value of the wrong type or range is refused with a
message naming the key, the value and what was expected; the caller keeps the previous value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .compression.factory import STRATEGY_NAMES, get_strategy

Source: TypeAlias = Literal["override", "settings", "default"]

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
)


# Tools whose ``command`` runs in a shell: gemini-cli/llxprt, Claude Code, mini-swe-agent, Codex.
DEFAULT_SHELL_TOOLS: tuple[str, ...] = ("bash", "Bash", "run_shell_command", "shell")


class SettingError(ValueError):
    def __init__(self, key: str, value: object, expected: str) -> None:
        self.key = key
        self.value = value
        self.expected = expected
        shown = _show(value)
        super().__init__(f"setting '{key}': {shown} is not valid, expected {expected}")


def _show(value: object) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_number(v: object) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _is_int(v: object) -> bool:
    if isinstance(v, bool):
        return False
    return isinstance(v, int) or (isinstance(v, float) and v.is_integer())


def _to_float(value: object) -> float:
    assert isinstance(value, int | float), value
    return float(value)


def _to_int(value: object) -> int:
    assert isinstance(value, int | float), value
    return int(value)


@dataclass(frozen=True)
class Spec:
    key: str
    default: object
    expected: str
    check: Callable[[object], bool]
    coerce: Callable[[Any], object] = lambda v: v
    description: str = ""


def _open_unit(v: object) -> bool:
    return _is_number(v) and 0 < _to_float(v) < 1


def _half_open_unit(v: object) -> bool:
    return _is_number(v) and 0 < _to_float(v) <= 1


def _str_list(v: object) -> bool:
    return isinstance(v, list | tuple) and all(isinstance(x, str) and x for x in v)


def _opt_str(v: object) -> bool:
    return isinstance(v, str)


SPECS: dict[str, Spec] = {
    s.key: s
    for s in (
        Spec(
            "compression.strategy",
            "high-density",
            "one of " + ", ".join(STRATEGY_NAMES),
            lambda v: v in STRATEGY_NAMES,
            description="The one active strategy.",
        ),
        Spec(
            "compression.threshold",
            None,
            "a number in (0, 1]",
            _half_open_unit,
            float,
            "Share of the context limit at which compress() runs; unset: the strategy's default.",
        ),
        Spec(
            "compression.preserveThreshold",
            0.3,
            "a number in (0, 1)",
            _open_unit,
            float,
            "Recent share of the history kept verbatim by compression.",
        ),
        Spec(
            "compression.topPreserveThreshold",
            0.2,
            "a number in (0, 1)",
            _open_unit,
            float,
            "Share of the history's head that middle-out keeps verbatim.",
        ),
        Spec(
            "compression.density.readWritePruning",
            True,
            "a boolean",
            lambda v: isinstance(v, bool),
        ),
        Spec("compression.density.fileDedupe", True, "a boolean", lambda v: isinstance(v, bool)),
        Spec(
            "compression.density.recencyPruning", False, "a boolean", lambda v: isinstance(v, bool)
        ),
        Spec(
            "compression.density.recencyRetention",
            3,
            "an integer (below 1 counts as 1)",
            _is_int,
            int,
        ),
        Spec(
            "contextLimit",
            200_000,
            "a positive integer",
            lambda v: _is_int(v) and _to_int(v) > 0,
            int,
        ),
        Spec("tools.read", list(DEFAULT_READ_TOOLS), "a list of tool names", _str_list, list),
        Spec("tools.write", list(DEFAULT_WRITE_TOOLS), "a list of tool names", _str_list, list),
        Spec(
            "tools.shell",
            list(DEFAULT_SHELL_TOOLS),
            "a list of tool names",
            _str_list,
            list,
            "Tools that run a shell command; their plain file reads and writes count.",
        ),
        Spec("watch.enabled", True, "a boolean", lambda v: isinstance(v, bool)),
        Spec(
            "summarizer.provider",
            "client",
            "one of client, openai",
            lambda v: v in ("client", "openai"),
        ),
        Spec("summarizer.baseUrl", None, "a string", _opt_str),
        Spec("summarizer.model", None, "a string", _opt_str),
        Spec("summarizer.apiKeyEnv", None, "a string", _opt_str),
    )
}

KEYS: tuple[str, ...] = tuple(SPECS)


def validate(key: str, value: object) -> object:
    """The value as stored, or SettingError. ``None`` means unset and is always valid."""
    spec = SPECS.get(key)
    if spec is None:
        raise SettingError(key, value, "a known hdcontext setting")
    if value is None:
        return None
    if not spec.check(value):
        raise SettingError(key, value, spec.expected)
    return spec.coerce(value)


def flatten(section: Mapping[str, Any]) -> dict[str, Any]:
    """Nested (``{"compression": {"strategy": ...}}``) and dotted keys, to dotted keys.

    A known key wins over descending into it: ``tools.read`` is a list, not a section.
    """
    out: dict[str, Any] = {}

    def walk(prefix: str, node: Mapping[str, Any]) -> None:
        for name, value in node.items():
            key = f"{prefix}.{name}" if prefix else str(name)
            if key not in SPECS and isinstance(value, Mapping):
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
        if key not in SPECS:
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
    """Every setting's effective value and where it came from."""

    values: dict[str, object]
    sources: dict[str, Source]

    @property
    def strategy(self) -> str:
        return str(self.values["compression.strategy"])

    @property
    def threshold(self) -> float:
        return _to_float(self.values["compression.threshold"])

    @property
    def preserve_threshold(self) -> float:
        return _to_float(self.values["compression.preserveThreshold"])

    @property
    def top_preserve_threshold(self) -> float:
        return _to_float(self.values["compression.topPreserveThreshold"])

    @property
    def context_limit(self) -> int:
        return _to_int(self.values["contextLimit"])

    def flag(self, key: str) -> bool:
        return bool(self.values[key])

    def number(self, key: str) -> int:
        return _to_int(self.values[key])

    def names(self, key: str) -> frozenset[str]:
        value = self.values[key]
        assert isinstance(value, list)
        return frozenset(str(v) for v in value)

    def text(self, key: str) -> str | None:
        value = self.values[key]
        return None if value is None else str(value)

    def to_wire(self) -> dict[str, object]:
        return {"values": dict(self.values), "sources": dict(self.sources)}


def resolve(overrides: Mapping[str, object], settings: Mapping[str, object]) -> Resolved:
    values: dict[str, object] = {}
    sources: dict[str, Source] = {}
    for key, spec in SPECS.items():
        if overrides.get(key) is not None:
            values[key], sources[key] = overrides[key], "override"
        elif settings.get(key) is not None:
            values[key], sources[key] = settings[key], "settings"
        else:
            values[key], sources[key] = spec.default, "default"
    if values["compression.threshold"] is None:
        strategy = get_strategy(str(values["compression.strategy"]))
        values["compression.threshold"] = strategy.trigger.default_threshold
    return Resolved(values, sources)
