"""Density on the real sessions: what each pass saves, what compression does near a limit,
which stale reads were found and which pruned, and whether every output is provider-valid.

Everything runs in-process through the engine's public functions (``optimize`` of the
high-density strategy, ``find_stale_reads``, and ``Session.compact`` for compression), with the
default tool lists and the transcript's own workspace root.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from hdcontext.core.compression.high_density import HighDensityStrategy
from hdcontext.core.content import IContent, ToolCallBlock, is_empty_ai
from hdcontext.core.density.optimize import find_stale_reads
from hdcontext.core.density.types import DensityConfig, DensityResult
from hdcontext.core.session.session import Session
from hdcontext.core.settings import DEFAULT_READ_TOOLS, DEFAULT_SHELL_TOOLS, DEFAULT_WRITE_TOOLS
from hdcontext.core.tokens import count_entry
from hdcontext.core.validity import problems

from .transcripts import Transcript

LIMITS = (100_000, 40_000, 20_000)

NO_PASSES = DensityConfig(read_write_pruning=False, file_dedupe=False, recency_pruning=False)
PASSES: dict[str, dict[str, Any]] = {
    "read→write": {"read_write_pruning": True},
    "read→write, no shell": {"read_write_pruning": True, "shell_tools": frozenset()},
    "@file dedupe": {"file_dedupe": True},
    "recency (keep 3)": {"recency_pruning": True},
    "default (rw + dedupe)": {"read_write_pruning": True, "file_dedupe": True},
    "all three": {"read_write_pruning": True, "file_dedupe": True, "recency_pruning": True},
}


@dataclass(frozen=True)
class Counted:
    """A history and its per-entry token counts, counted once."""

    entries: tuple[IContent, ...]
    counts: tuple[int, ...]

    @classmethod
    def of(cls, entries: Sequence[IContent]) -> Counted:
        return cls(tuple(entries), tuple(count_entry(e) for e in entries))

    @property
    def total(self) -> int:
        return sum(c for e, c in zip(self.entries, self.counts, strict=True) if not is_empty_ai(e))

    def apply(self, result: DensityResult) -> Counted:
        removed = set(result.removals)
        entries: list[IContent] = []
        counts: list[int] = []
        for i, (entry, count) in enumerate(zip(self.entries, self.counts, strict=True)):
            if i in removed:
                continue
            if i in result.replacements:
                entry = result.replacements[i]
                count = count_entry(entry)
            entries.append(entry)
            counts.append(count)
        return Counted(tuple(entries), tuple(counts))


def base_config(t: Transcript) -> DensityConfig:
    return replace(
        NO_PASSES,
        workspace_root=t.root,
        read_tools=frozenset(DEFAULT_READ_TOOLS),
        write_tools=frozenset(DEFAULT_WRITE_TOOLS),
        shell_tools=frozenset(DEFAULT_SHELL_TOOLS),
    )


def _valid(before: Sequence[IContent], after: Sequence[IContent]) -> bool:
    """Provider-valid (``core.validity``): no problem the input did not have (DESIGN.md
    decision 4). The importers repair what they read, so the input has none."""

    def found(history: Sequence[IContent]) -> set[tuple[str, str]]:
        return {(p.kind, p.key) for p in problems(history)}

    return found(after) <= found(before)


def _call_ids(entries: Sequence[IContent]) -> set[str]:
    return {b.id for e in entries for b in e.blocks if isinstance(b, ToolCallBlock)}


def measure(t: Transcript) -> dict[str, Any]:
    strategy = HighDensityStrategy()
    source = Counted.of(t.entries)
    config = base_config(t)
    passes: dict[str, int] = {}
    valid = True
    for name, flags in PASSES.items():
        after = source.apply(strategy.optimize(source.entries, replace(config, **flags)))
        passes[name] = after.total
        valid = valid and _valid(source.entries, after.entries)

    default = replace(config, **PASSES["default (rw + dedupe)"])
    stale = find_stale_reads(source.entries, default)
    optimized = source.apply(strategy.optimize(source.entries, default)).entries
    pruned = _call_ids(source.entries) - _call_ids(optimized)
    shell_tools = default.shell_tools
    stale_reads = {
        "found": len(stale),
        "found_shell": sum(s.tool_name in shell_tools for s in stale),
        "prunable": sum(s.prunable for s in stale),
        "pruned": sum(s.call_id in pruned for s in stale),
        "pruned_shell": sum(s.call_id in pruned and s.tool_name in shell_tools for s in stale),
        "kept_partly_stale": sum(len(s.stale) < len(s.paths) for s in stale),
        "kept_not_only_a_read": sum(len(s.stale) == len(s.paths) and not s.prunable for s in stale),
    }
    compress = {str(limit): _compress(t, limit) for limit in LIMITS}
    valid = valid and all(c["valid"] for c in compress.values())
    return {
        "name": t.name,
        "format": t.fmt,
        "entries": len(source.entries),
        "tokens_before": source.total,
        "optimize": passes,
        "compress": compress,
        "stale_reads": stale_reads,
        "provider_valid": valid,
    }


def _compress(t: Transcript, limit: int) -> dict[str, Any]:
    async def run() -> dict[str, Any]:
        session = Session("bench", workspace_root=lambda: t.root)
        session.set_override("contextLimit", limit)
        session.append(t.entries)
        result = await session.compact()
        return {
            "tokens_after": result.status.total_tokens,
            "steps": [s.name for s in result.steps],
            "over_limit": result.over_limit,
            "valid": _valid(t.entries, result.history),
        }

    return asyncio.run(run())


def run(transcripts: Sequence[Transcript]) -> list[dict[str, Any]]:
    return [measure(t) for t in transcripts]
