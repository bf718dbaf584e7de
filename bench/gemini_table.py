"""The Gemini replay's figures (``gemini_replay.py``): each session's and the totals, as JSON and
as the table ``python -m bench.gemini_replay`` prints."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hdcontext.core.prices import lookup

from .billing import gemini
from .codex_ceiling import RETAINED
from .gemini_recordings import Session

if TYPE_CHECKING:
    from .gemini_replay import Figures

TARGET_CARRIED = 0.95
TARGET_COST = 0.85


def session_facts(s: Session) -> dict[str, Any]:
    return {
        "name": s.name,
        "project": s.project,
        "kind": s.kind,
        "requests": len(s.calls),
        "models": sorted({c.model for c in s.calls}),
        "with_usage": sum(1 for c in s.calls if c.usage is not None),
    }


def prices(sessions: Sequence[Session]) -> dict[str, str]:
    """How each model the sessions ran is billed, as its row says."""
    models = sorted({c.model for s in sessions for c in s.calls})
    out = {}
    for model in models:
        row = lookup(model).row
        assert row is not None
        out[model] = gemini(row.model).description + f"; ${row.input:g} per million input tokens"
    return out


def summarize(sessions: Sequence[Session], rows: Mapping[str, Figures]) -> dict[str, Any]:
    """Each session's figures, in the sessions' order, and their sums."""
    listed = [_session(rows[s.name]) | {"name": s.name} for s in sessions]
    f = list(rows.values())
    requests = sum(x.requests for x in f)
    carried = sum(x.carried for x in f)
    tokens_cli = sum(x.tokens_cli for x in f)
    cost_cli = sum(x.cost_cli for x in f)
    real_input = sum(x.real_input for x in f)
    billed_input = sum(x.billed_cli_input for x in f)
    not_carried: Counter[str] = Counter()
    problems: Counter[str] = Counter()
    for x in f:
        not_carried.update(x.not_carried)
        problems.update(x.problems)
    return {
        "sessions": listed,
        "total": {
            "requests": requests,
            "carried": carried,
            "carried_share": carried / requests if requests else 1.0,
            "changed": sum(x.changed for x in f),
            "not_carried": dict(not_carried),
            "invalid": sum(x.invalid for x in f),
            "problems": dict(problems),
            "signatures_checked": sum(x.signatures for x in f),
            "cli_masked": sum(x.cli_masked for x in f),
            "tokens": sum(x.tokens for x in f) / tokens_cli if tokens_cli else 1.0,
            "cost": sum(x.cost for x in f) / cost_cli if cost_cli else 1.0,
            "cost_cli_dollars": cost_cli,
            "dearer": [s["name"] for s in listed if s["requests"] and s["cost"] > 1.0 + 1e-9],
            "real_cached_share": (
                sum(x.real_cached for x in f) / real_input if real_input else 0.0
            ),
            "billed_cached_share": (
                sum(x.billed_cli_read for x in f) / billed_input if billed_input else 0.0
            ),
        },
    }


def _session(f: Figures) -> dict[str, Any]:
    return {
        "requests": f.requests,
        "carried": f.carried,
        "changed": f.changed,
        "not_carried": dict(f.not_carried),
        "invalid": f.invalid,
        "problems": dict(f.problems),
        "signatures_checked": f.signatures,
        "cli_masked": f.cli_masked,
        "tokens": f.tokens / f.tokens_cli if f.tokens_cli else 1.0,
        "cost": f.ratio,
        "cost_cli_dollars": f.cost_cli,
        "hidden_prompt": f.hidden_prompt,
        "real_cached_share": f.real_cached / f.real_input if f.real_input else None,
        "status": f.status,
        "calls": f.calls,
    }


def render(result: Mapping[str, Any]) -> str:
    figures = result["figures"]
    head = f"{'project / session':<48}{'kind':>11}{'reqs':>5}{'carried':>8}{'changed':>8}"
    head += f"{'invalid':>8}{'tokens':>7}{'cost':>7}{'saved':>8}"
    lines = [head]
    for facts, row in zip(result["sessions"], figures["sessions"], strict=True):
        name = f"{facts['project'][:20]}/{facts['name']}"
        if not row["requests"]:
            lines.append(f"{name:<48}{facts['kind']:>11}{0:>5}  (no model call)")
            continue
        line = f"{name:<48}{facts['kind']:>11}{row['requests']:>5}"
        line += f"{row['carried'] / row['requests']:>8.0%}{row['changed']:>8}{row['invalid']:>8}"
        line += f"{row['tokens']:>7.3f}{row['cost']:>7.3f}{row['status'].get('savedTokens', 0):>8,}"
        lines.append(line)
    t = figures["total"]
    line = f"{'total':<48}{'':>11}{t['requests']:>5}{t['carried_share']:>8.1%}{t['changed']:>8}"
    line += f"{t['invalid']:>8}{t['tokens']:>7.3f}{t['cost']:>7.3f}"
    lines.append(line)
    for why, n in sorted(t["not_carried"].items(), key=lambda x: -x[1]):
        lines.append(f"  {n} not carried: {why}")
    for what, n in sorted(t["problems"].items(), key=lambda x: -x[1]):
        lines.append(f"  {n} invalid: {what}")
    lines.append(f"  dearer than the CLI's own: {', '.join(t['dearer']) or 'none'}")
    lines.append(
        f"  {t['signatures_checked']:,} signed parts checked; the CLI's own masking replaced "
        f"{t['cli_masked']} outputs"
    )
    lines += _ceiling(result["ceiling"])
    for model, said in result["prices"].items():
        lines.append(f"{model}: {said}")
    lines.append(
        f"the CLI's requests as billed here read {t['billed_cached_share']:.1%} of their input "
        f"from the cache; as Gemini billed them (the recordings' usage), "
        f"{t['real_cached_share']:.1%}"
    )
    lines.append(
        "cost: the proxy's requests over the CLI's, dollars of input as billed; "
        f"targets: carried ≥ {TARGET_CARRIED:.0%}, invalid 0, cost ≤ {TARGET_COST:.2f}, "
        "no session dearer"
    )
    return "\n".join(lines)


def _ceiling(found: Mapping[str, Any]) -> list[str]:
    calls = found["token_calls"]
    total = sum(calls.values()) or 1
    outputs = sum(v for k, v in calls.items() if k.startswith("output:"))
    top = sorted(calls.items(), key=lambda x: -x[1])[:6]
    s = found["stale_reads"]
    return [
        f"the CLI's input in token-calls: tool outputs {outputs / total:.0%}; by kind "
        + ", ".join(f"{k} {v / total:.0%}" for k, v in top),
        f"stale reads the rule removes from the last requests: {s.get('removed', 0)} of "
        f"{s.get('outputs', 0)} outputs, {s.get('removed_tokens', 0):,} of "
        f"{s.get('output_tokens', 0):,} tokens",
        f"a free oracle masking every answered output but the newest {RETAINED}: "
        f"{found['oracle_masking']:.3f} of the CLI's cost; keeping each file's latest read, "
        f"as the masking rule does, {found['oracle_masking_views_kept']:.3f}",
    ]
