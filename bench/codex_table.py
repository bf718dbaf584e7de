"""The Codex replay's figures (``codex_replay.py``): each session's and the totals, as JSON and
as the table ``python -m bench.codex_replay`` prints."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .codex_ceiling import RETAINED
from .codex_rollouts import Rollout

if TYPE_CHECKING:
    from .codex_replay import Figures

TARGET_CARRIED = 0.95
TARGET_COST = 0.90
COLUMNS = (
    ("gpt_5_6", "gpt_5_6", "5.6"),
    ("prefix", "prefix", "prefix"),
    ("prefix", "prefix_retention", "+ret"),
    ("gpt_5_6_window", "gpt_5_6", "5.6 w"),
    ("prefix_window", "prefix", "prefix w"),
    ("prefix_window", "prefix_retention", "+ret w"),
)
"""The cost columns: (mode, price model, heading)."""


def session_facts(r: Rollout) -> dict[str, Any]:
    return {
        "name": r.name,
        "project": r.project,
        "cli": r.cli_version,
        "requests": len(r.requests),
        "models": sorted({q.model for q in r.requests}),
        "resumed_from": r.resumed_from,
        "replayed_calls": r.replayed_calls,
        "aborted_outputs": r.aborted_outputs,
    }


def summarize(
    rollouts: Sequence[Rollout], rows: Mapping[str, Figures], prices: Sequence[str]
) -> dict[str, Any]:
    """One mode's figures: each session's, in the rollouts' order, and their sums."""
    sessions = [_session(rows[r.name], prices) | {"name": r.name} for r in rollouts]
    requests = sum(f.requests for f in rows.values())
    carried = sum(f.carried for f in rows.values())
    tokens = sum(f.tokens for f in rows.values())
    tokens_codex = sum(f.tokens_codex for f in rows.values())
    real_input = sum(f.real_input for f in rows.values())
    not_carried: Counter[str] = Counter()
    problems: Counter[str] = Counter()
    for f in rows.values():
        not_carried.update(f.not_carried)
        problems.update(f.problems)
    cost = {p: sum(f.cost[p] for f in rows.values()) for p in prices}
    cost_codex = {p: sum(f.cost_codex[p] for f in rows.values()) for p in prices}
    return {
        "sessions": sessions,
        "total": {
            "requests": requests,
            "carried": carried,
            "carried_share": carried / requests if requests else 1.0,
            "changed": sum(f.changed for f in rows.values()),
            "not_carried": dict(not_carried),
            "invalid": sum(f.invalid for f in rows.values()),
            "problems": dict(problems),
            "reasoning_items_checked": sum(f.reasoning_items for f in rows.values()),
            "tokens": tokens / tokens_codex if tokens_codex else 1.0,
            "cost": {p: cost[p] / cost_codex[p] if cost_codex[p] else 1.0 for p in prices},
            "dearer": {
                p: [s["name"] for s in sessions if s["requests"] and s["cost"][p] > 1.0 + 1e-9]
                for p in prices
            },
            "real_cached_share": (
                sum(f.real_cached for f in rows.values()) / real_input if real_input else 0.0
            ),
            "billed_cached_share": (
                sum(f.billed_codex_read for f in rows.values()) / tokens_codex
                if tokens_codex
                else 0.0
            ),
        },
    }


def _session(f: Figures, prices: Sequence[str]) -> dict[str, Any]:
    return {
        "requests": f.requests,
        "carried": f.carried,
        "changed": f.changed,
        "not_carried": dict(f.not_carried),
        "invalid": f.invalid,
        "problems": dict(f.problems),
        "reasoning_items_checked": f.reasoning_items,
        "tokens": f.tokens / f.tokens_codex if f.tokens_codex else 1.0,
        "cost": {p: f.ratio(p) for p in prices},
        "hidden_prompt": f.hidden_prompt,
        "real_cached_share": f.real_cached / f.real_input if f.real_input else None,
        "status": f.status,
        "calls": f.calls,
    }


def render(result: Mapping[str, Any]) -> str:
    modes = result["modes"]
    head = f"{'project / session':<42}{'cli':>8}{'reqs':>5}{'carried':>8}{'changed':>8}"
    head += f"{'invalid':>8}{'tokens':>7}" + "".join(f"{h:>9}" for _, _, h in COLUMNS)
    lines = [head]
    for i, facts in enumerate(result["sessions"]):
        name = f"{facts['project'][:21]}/{facts['name']}"
        rows = {m: modes[m]["sessions"][i] for m in modes}
        row = rows["prefix"]
        if not row["requests"]:
            lines.append(f"{name:<42}{facts['cli'][:7]:>8}{0:>5}  (no model call)")
            continue
        carried = min(r["carried"] for r in rows.values()) / row["requests"]
        invalid = sum(r["invalid"] for r in rows.values())
        line = f"{name:<42}{facts['cli'][:7]:>8}{row['requests']:>5}{carried:>8.0%}"
        line += f"{row['changed']:>8}{invalid:>8}{row['tokens']:>7.3f}"
        line += "".join(f"{rows[m]['cost'][p]:>9.3f}" for m, p, _ in COLUMNS)
        lines.append(line)
    totals = {m: modes[m]["total"] for m in modes}
    t = totals["prefix"]
    carried = min(x["carried_share"] for x in totals.values())
    invalid = sum(x["invalid"] for x in totals.values())
    line = f"{'total':<42}{'':>8}{t['requests']:>5}{carried:>8.1%}{t['changed']:>8}"
    line += f"{invalid:>8}{t['tokens']:>7.3f}"
    line += "".join(f"{totals[m]['cost'][p]:>9.3f}" for m, p, _ in COLUMNS)
    lines.append(line)
    for m, total in totals.items():
        for why, n in sorted(total["not_carried"].items(), key=lambda x: -x[1]):
            lines.append(f"  {m}: {n} not carried: {why}")
        for what, n in sorted(total["problems"].items(), key=lambda x: -x[1]):
            lines.append(f"  {m}: {n} invalid: {what}")
    for m, p, h in COLUMNS:
        dearer = totals[m]["dearer"][p]
        lines.append(f"  dearer than Codex's own ({h}): {', '.join(dearer) or 'none'}")
    lines += _ceiling(result["ceiling"])
    lines.append(
        f"Codex's requests as billed here read {t['billed_cached_share']:.1%} of their input "
        f"from the cache (in memory, as Codex asked); as OpenAI billed them, "
        f"{t['real_cached_share']:.1%}"
    )
    lines.append(
        "cost: the proxy's requests over Codex's, input tokens as billed (5.6: GPT-5.6 at "
        "breakpoints; prefix: any prefix, both living as long; +ret: Codex's in memory, the "
        "proxy's with the retention it asks; w: --context-limit at the models' window); "
        f"targets: carried ≥ {TARGET_CARRIED:.0%}, invalid 0, cost ≤ {TARGET_COST:.2f}, "
        "no session dearer"
    )
    return "\n".join(lines)


def _ceiling(found: Mapping[str, Any]) -> list[str]:
    calls = found["token_calls"]
    total = sum(calls.values()) or 1
    outputs = sum(v for k, v in calls.items() if k.startswith("output:"))
    top = sorted(calls.items(), key=lambda x: -x[1])[:6]
    lines = [
        f"Codex's input in token-calls: tool outputs {outputs / total:.0%}; by kind "
        + ", ".join(f"{k} {v / total:.0%}" for k, v in top)
    ]
    for label, s in found["stale_reads"].items():
        lines.append(
            f"stale reads the rule removes from the last requests ({label}): {s['removed']} of "
            f"{s['outputs']} outputs, {s['removed_tokens']:,} of {s['output_tokens']:,} tokens"
        )
    lines.append(
        f"a free oracle masking every answered output but the newest {RETAINED}: "
        f"{found['oracle_masking']:.3f} of Codex's cost (any prefix, both in memory)"
    )
    return lines
