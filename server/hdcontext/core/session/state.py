"""A session's state besides its history, and its JSON form (what the store persists)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from ..cache.ledger import CostLedger
from ..cache.pricing import DEFAULT_TTL_SECONDS
from ..cache.prompt_cache import PromptCache
from ..tools.todos import Todo
from .replies import Usage


@dataclass(frozen=True)
class ReplyMark:
    """The history the previous ``history/compact`` returned: its revision and length, and
    since when the view changed under it."""

    revision: int = 0
    raw_len: int = 0
    curated_len: int = 0
    changed_from: int | None = None
    held_len: int = 0
    """How many entries of the working view a refresh call sent since, when it sent more
    than the reply (the model's answer, appended since): the provider may hold them too."""


@dataclass(frozen=True)
class CacheState:
    """What the cache-aware schedule carries from one call to the next."""

    prompt: PromptCache = field(default_factory=PromptCache)
    """What the provider holds in its prompt cache, and what the calls cost."""
    reply: ReplyMark = field(default_factory=ReplyMark)
    density_saved: int = 0
    """Tokens density edits took out since the history was last rewritten whole."""
    pending_tokens: int = 0
    pending_edits: int = 0
    usage: Usage = field(default_factory=Usage)
    free_pending: int = 0
    """Of ``pending_tokens``, what waits for a cold cache (masking's free-only edits): a
    refresh that keeps the cache keeps them waiting."""
    expected: tuple[int, int, int] | None = None
    """The last call's input as the daemon expects it billed, until ``history/usage``
    reports it: (tokens, read from the cache, written to it)."""
    predicted: Usage = field(default_factory=Usage)
    mispredicted: int = 0


@dataclass(frozen=True)
class SessionState:
    overrides: dict[str, object]
    version: int
    saved_tokens: int
    dirty: bool
    todos: tuple[Todo, ...]
    todos_since: int
    writes: dict[str, int]
    model: str | None = None
    epoch: str = ""
    cache: CacheState = field(default_factory=CacheState)
    lineage: tuple[tuple[int, int], ...] | None = None
    """The transcript entries that make up the conversation as ``history/sync`` last saw it,
    as ``[start, stop)`` runs (``None``: never synced)."""
    masked_outputs: int = 0
    masked_tokens: int = 0

    def to_json(self) -> str:
        return json.dumps(
            {
                "overrides": self.overrides,
                "version": self.version,
                "savedTokens": self.saved_tokens,
                "dirty": self.dirty,
                "todos": [_todo_to_json(t) for t in self.todos],
                "todosSince": self.todos_since,
                "writes": self.writes,
                "model": self.model,
                "epoch": self.epoch,
                "cache": _cache_to_json(self.cache),
                "lineage": None if self.lineage is None else [list(run) for run in self.lineage],
                "maskedOutputs": self.masked_outputs,
                "maskedTokens": self.masked_tokens,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str) -> SessionState:
        raw = json.loads(text)
        return cls(
            overrides=dict(raw["overrides"]),
            version=int(raw["version"]),
            saved_tokens=int(raw["savedTokens"]),
            dirty=bool(raw["dirty"]),
            todos=tuple(_todo_from_json(t) for t in raw["todos"]),
            todos_since=int(raw["todosSince"]),
            writes={str(k): int(v) for k, v in raw["writes"].items()},
            model=raw.get("model"),
            epoch=str(raw.get("epoch", "")),
            cache=_cache_from_json(raw.get("cache")),
            lineage=None if raw.get("lineage") is None else _runs(raw["lineage"]),
            masked_outputs=int(raw.get("maskedOutputs", 0)),
            masked_tokens=int(raw.get("maskedTokens", 0)),
        )


def _runs(raw: list[list[int]]) -> tuple[tuple[int, int], ...]:
    return tuple((int(start), int(stop)) for start, stop in raw)


def _todo_to_json(todo: Todo) -> dict[str, Any]:
    return {
        "id": todo.id,
        "content": todo.content,
        "status": todo.status,
        "subtasks": [_todo_to_json(t) for t in todo.subtasks],
    }


def _todo_from_json(raw: dict[str, Any]) -> Todo:
    return Todo(
        id=str(raw["id"]),
        content=str(raw["content"]),
        status=str(raw["status"]),
        subtasks=tuple(_todo_from_json(t) for t in raw.get("subtasks", [])),
    )


def _cache_to_json(cache: CacheState) -> dict[str, Any]:
    out = asdict(cache)
    out["usage"] = cache.usage.model_dump()
    out["predicted"] = cache.predicted.model_dump()
    return out


def _pairs(raw: Any) -> tuple[tuple[int, int], ...]:
    return tuple((int(a), int(b)) for a, b in raw or ())


def _held(raw: Any) -> tuple[tuple[int, int, int], ...]:
    """Saved cache entries; one saved before entries had lifetimes lives the default one."""
    default = DEFAULT_TTL_SECONDS * 1000
    return tuple((int(e[0]), int(e[1]), int(e[2]) if len(e) > 2 else default) for e in raw or ())


def _ledger(raw: dict[str, Any]) -> CostLedger:
    return CostLedger(
        **{**raw, "recent_pauses": tuple(int(g) for g in raw.get("recent_pauses", ()))}
    )


def _prompt_cache(raw: dict[str, Any]) -> PromptCache:
    """The saved prompt cache; a session saved before it had one kept its ledger beside the
    reply mark, and the ends of earlier requests (then the only cache entries) on it."""
    if "prompt" in raw:
        prompt = raw["prompt"]
        return PromptCache(held=_held(prompt["held"]), ledger=_ledger(prompt["ledger"]))
    ledger = _ledger(raw["ledger"])
    held = dict(_pairs(raw["reply"].get("earlier")))
    if ledger.last_at is not None and raw["reply"].get("raw_len"):
        held[int(raw["reply"]["raw_len"])] = ledger.last_at
    return PromptCache(held=_held(sorted(held.items())), ledger=ledger)


def _cache_from_json(raw: object) -> CacheState:
    """The saved cache state, or a fresh one (a session saved before there was any)."""
    if not isinstance(raw, dict):
        return CacheState()
    reply = {k: v for k, v in raw["reply"].items() if k != "earlier"}
    return CacheState(
        prompt=_prompt_cache(raw),
        reply=ReplyMark(**reply),
        density_saved=int(raw["density_saved"]),
        pending_tokens=int(raw["pending_tokens"]),
        pending_edits=int(raw["pending_edits"]),
        usage=Usage.model_validate(raw["usage"]),
        free_pending=int(raw.get("free_pending", 0)),
        expected=None if raw.get("expected") is None else _triple(raw["expected"]),
        predicted=Usage.model_validate(raw.get("predicted", {})),
        mispredicted=int(raw.get("mispredicted", 0)),
    )


def _triple(raw: Any) -> tuple[int, int, int]:
    a, b, c = raw
    return int(a), int(b), int(c)
