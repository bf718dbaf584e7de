"""The LiteLLM replay's figures (``litellm_replay.py``): each session's and the totals, as JSON
and as the table ``python -m bench.litellm_replay`` prints. Costs are kept in uncached input
tokens and shown in dollars at the model's input price, and as each path's ratio to Claude
Code's own requests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hdcontext.core.prices import lookup

from .claude_logs import MODEL

if TYPE_CHECKING:
    from .litellm_replay import Figures

PATHS = ("proxy", "litellm")
"""The paths' names (``litellm_paths.py``), the proxy's first."""


def dollars(cost: float) -> float:
    """A cost in uncached input tokens, in dollars at ``MODEL``'s input price."""
    row = lookup(MODEL).row
    assert row is not None
    return cost * row.input / 1_000_000


def summarize(rows: Sequence[Figures]) -> dict[str, Any]:
    sessions = [_session(f) for f in rows]
    agent = sum(f.cost_agent for f in rows)
    total: dict[str, Any] = {
        "sessions": len(rows),
        "calls": sum(f.calls for f in rows),
        "identical": sum(f.identical for f in rows),
        "changed": sum(f.changed for f in rows),
        "ledgers_equal": sum(f.ledgers_equal for f in rows),
        "cost_agent_usd": round(dollars(agent), 4),
    }
    for name in PATHS:
        cost = sum(f.paths[name].cost for f in rows)
        not_carried: Counter[str] = Counter()
        problems: Counter[str] = Counter()
        for f in rows:
            not_carried.update(f.paths[name].not_carried)
            problems.update(f.paths[name].problems)
        total[name] = {
            "carried": sum(f.paths[name].carried for f in rows),
            "not_carried": dict(not_carried),
            "problems": dict(problems),
            "cost_usd": round(dollars(cost), 4),
            "ratio": round(cost / agent, 4) if agent else 1.0,
        }
    differences: Counter[str] = Counter()
    for f in rows:
        differences.update(f.differences)
    total["differences"] = dict(differences)
    return {"sessions": sessions, "total": total}


def _session(f: Figures) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f.name,
        "calls": f.calls,
        "identical": f.identical,
        "changed": f.changed,
        "ledgers_equal": f.ledgers_equal,
        "prompt_tokens": f.prompt,
        "tokens_agent": f.tokens_agent,
        "cost_agent_usd": round(dollars(f.cost_agent), 4),
    }
    for name in PATHS:
        p = f.paths[name]
        out[name] = {
            "carried": p.carried,
            "not_carried": dict(p.not_carried),
            "problems": dict(p.problems),
            "tokens": p.tokens,
            "cost_usd": round(dollars(p.cost), 4),
            "ratio": round(p.cost / f.cost_agent, 4) if f.cost_agent else 1.0,
        }
    out["first_difference"] = f.first_difference
    out["calls_detail"] = f.verdicts
    return out


def render(result: dict[str, Any]) -> str:
    head = f"{'session':<40}{'calls':>6}{'edited':>7}{'same':>6}{'ledger':>7}{'carried':>9}"
    head += f"{'Claude $':>10}"
    head += f"{'proxy':>8}{'litellm':>8}"
    lines = [head]
    total = result["total"]
    ledgers = f"{total['ledgers_equal']}/{total['sessions']}"
    rows = [*result["sessions"], {**total, "name": "total", "ledgers_equal": ledgers}]
    for row in rows:
        ledger = row["ledgers_equal"]
        ledger = ("same" if ledger else "DIFF") if isinstance(ledger, bool) else ledger
        carried = f"{row['proxy']['carried']}/{row['litellm']['carried']}"
        line = f"{row['name'][:39]:<40}{row['calls']:>6}{row['changed']:>7}{row['identical']:>6}"
        line += f"{ledger:>7}{carried:>9}{row['cost_agent_usd']:>10.2f}"
        line += f"{row['proxy']['ratio']:>8.3f}{row['litellm']['ratio']:>8.3f}"
        lines.append(line)
    lines.append(
        "edited: calls the proxy sent otherwise than Claude Code (an edit, a mark moved or "
        "lifted); same: calls whose two requests were identical (messages, system, tools, every "
        "breakpoint and its lifetime); ledger: both daemons' sessions alike at the end; "
        "carried: proxy/litellm; proxy, litellm: each path's input cost relative to Claude "
        f"Code's own requests (Claude $: theirs), Anthropic's {MODEL} prices"
    )
    for name in PATHS:
        for why, n in total[name]["not_carried"].items():
            lines.append(f"  {name}: {n} not carried: {why}")
        for what, n in total[name]["problems"].items():
            lines.append(f"  {name}: {n} that Anthropic would refuse: {what}")
    for what, n in total["differences"].items():
        lines.append(f"  differed: {what} in {n} calls")
    for row in result["sessions"]:
        if row["first_difference"] is not None:
            lines.append(f"  {row['name']}: first difference {row['first_difference']}")
    return "\n".join(lines)
