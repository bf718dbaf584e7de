"""A conversation as the importers read it and the exporters write it.

IContent has no speaker for a system prompt, and llxprt-style agents keep theirs outside the
history; provider formats put it at the top (OpenAI's ``system`` message, Anthropic's
``system``, Gemini's ``systemInstruction``). So a conversation is the history plus its system
prompt beside it: compaction works on the history alone, and a conversion carries the prompt
over. ``workspace_root`` is where the agent ran when the source says (mini-swe-agent's
``cwd``, Claude Code's record ``cwd``, a Codex rollout's ``session_meta``): relative tool paths
resolve against it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from ..core.content import IContent, Metadata
from ..core.validity import Problem

# Formats by the names the command line and the benchmark use.
IMPORT_FORMATS: tuple[str, ...] = (
    "icontent",
    "claude-code",
    "codex",
    "mini-swe-agent",
    "swe-agent",
    "openai",
    "anthropic",
    "gemini",
    "gemini-cli",
)
EXPORT_FORMATS: tuple[str, ...] = ("icontent", "openai", "anthropic", "gemini")

SYSTEM_ROLE_KEY = "role"
"""``metadata.role`` of an IContent entry that stands for a system message (``system`` or
``developer``): how the IContent form carries a prompt that has no speaker of its own."""


def role_metadata(role: str) -> Metadata:
    """Metadata marking an entry as a ``system`` (or ``developer``) message."""
    return Metadata.model_validate({SYSTEM_ROLE_KEY: role})


def entry_role(metadata: Metadata | None) -> str | None:
    """The ``metadata.role`` of an entry, when it has one."""
    extra = metadata.model_extra if metadata is not None else None
    role = (extra or {}).get(SYSTEM_ROLE_KEY)
    return role if isinstance(role, str) else None


@dataclass(frozen=True)
class Conversation:
    entries: tuple[IContent, ...]
    system: str | None = None
    workspace_root: str | None = None
    warnings: tuple[str, ...] = ()
    """What the import skipped or repaired, one line each (the bad lines of a JSONL log,
    results moved next to their calls…): the caller shows them; nothing in them is an error."""
    incomplete: str | None = None
    """Set when part of the input could not be read, saying how much
    (``39 of 211 lines (82% of the file's bytes)``): what is counted from the conversation
    is then what could be read."""
    model: str | None = None
    """The model the conversation was last held with, when the source names it (a Codex
    rollout's ``turn_context``)."""
    provider: str | None = None
    """Whose API the agent spoke (``openai``, ``anthropic``), when the format says so whatever
    the model: a Codex rollout is OpenAI's even when it names no model."""


@dataclass(frozen=True)
class Exported:
    """A conversation in a provider's shape, and what that shape could not carry."""

    payload: object
    dropped: Mapping[str, int] = field(default_factory=dict)
    """Blocks or attributes left out, by kind (``"thinking"``, ``"media in ai"``…)."""
    problems: tuple[Problem, ...] = ()
    """How the payload breaks the provider's rules (``core.validity``); empty when valid.
    A caller that sends or writes the payload refuses it when there is any."""


class FormatError(ValueError):
    """The input is not the format it was said (or detected) to be."""
