"""One conversation replayed with one setting, and the table row a corpus of them makes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .billing import MAIN, PRICE_MODELS
from .transcripts import Transcript


@dataclass
class Replayed:
    """One conversation replayed with one settings row (or one peer's rule)."""

    calls: int = 0
    tokens: int = 0
    cost: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PRICE_MODELS, 0.0))
    prefix_breaks: int = 0
    rewrites: int = 0
    """Calls on a warm cache that wrote again entries the provider held (main price model)."""
    lost: int = 0
    """Tokens the provider held in its cache that those calls wrote again."""
    edits: int = 0
    blind: int = 0
    peak: int = 0
    compressions: int = 0
    refreshes: int = 0
    """Refresh calls made (main price model's session)."""


def summarize(sessions: Sequence[Transcript], rows: Mapping[str, list[Replayed]]) -> dict[str, Any]:
    """Each row's figures relative to density off, under every price model: cost, sessions
    dearer than density off (and by more than 1%), the worst ratio."""
    off = rows["density off"]
    table: dict[str, Any] = {}
    for name, results in rows.items():
        row: dict[str, Any] = {
            "tokens": sum(r.tokens for r in results) / max(1, sum(o.tokens for o in off)),
        }
        for model in PRICE_MODELS:
            ratios = [
                r.cost[model] / o.cost[model] if o.cost[model] else 1.0
                for r, o in zip(results, off, strict=True)
            ]
            row[model] = sum(r.cost[model] for r in results) / max(
                1e-9, sum(o.cost[model] for o in off)
            )
            row[f"{model}_dearer"] = sum(1 for x in ratios if x > 1.0 + 1e-9)
            row[f"{model}_worst"] = max(ratios, default=1.0)
        ratios = [
            r.cost[MAIN] / o.cost[MAIN] if o.cost[MAIN] else 1.0
            for r, o in zip(results, off, strict=True)
        ]
        row.update(
            {
                "dearer": row[f"{MAIN}_dearer"],
                "dearer_1pct": sum(1 for x in ratios if x > 1.01),
                "dearer_any": sum(
                    1
                    for r, o in zip(results, off, strict=True)
                    if any(r.cost[m] > o.cost[m] * (1 + 1e-9) for m in PRICE_MODELS)
                ),
                "worst": row[f"{MAIN}_worst"],
                "prefix_breaks": sum(r.prefix_breaks for r in results),
                "rewrites": sum(r.rewrites for r in results),
                "lost": sum(r.lost for r in results),
                "edits": sum(r.edits for r in results),
                "blind": sum(r.blind for r in results),
                "peak": max((r.peak for r in results), default=0),
                "compressions": sum(r.compressions for r in results),
                "refreshes": sum(r.refreshes for r in results),
                "per_session": {
                    t.name: {
                        "calls": r.calls,
                        "ratio": round(x, 4),
                        "blind": r.blind,
                        "cost": {m: round(c, 1) for m, c in r.cost.items()},
                    }
                    for t, r, x in zip(sessions, results, ratios, strict=True)
                },
            }
        )
        table[name] = row
    return {
        "sessions": len(sessions),
        "calls": sum(r.calls for r in off),
        "price_models": {k: m.description for k, m in PRICE_MODELS.items()},
        "rows": table,
    }
