"""The benchmark's figures as the tables ``make bench`` prints."""

from __future__ import annotations

from typing import Any

from .density import LIMITS, PASSES


def _k(n: float) -> str:
    return f"{n / 1_000_000:.1f}M" if n >= 10_000_000 else f"{n / 1000:.1f}k"


def _mb(n: float) -> str:
    return f"{n / 1_000_000:.1f} MB"


_FORMATS = {"claude-code": "cc", "mini-swe-agent": "mswe", "swe-agent": "swe"}


def corpus(summary: dict[str, Any]) -> str:
    """The files read: how many, and those left out and why."""
    refused = summary["refused"]
    lines = [
        f"{summary['files']} files, {summary['conversations']} conversations "
        f"({len(summary['duplicates_skipped'])} copies skipped, {len(refused)} refused)"
    ]
    lines += [f"  refused {path}: {reason}" for path, reason in refused.items()]
    return "\n".join(lines)


def density(rows: list[dict[str, Any]]) -> str:
    passes = list(PASSES)
    short = {
        "read→write": "rw",
        "read→write, no shell": "rw-noshell",
        "@file dedupe": "dedupe",
        "recency (keep 3)": "recency",
        "default (rw + dedupe)": "default",
        "all three": "all",
    }
    head = f"{'transcript':<40}{'fmt':<6}{'entries':>8}{'before':>9}"
    head += "".join(f"{short[p]:>11}" for p in passes)
    head += "".join(f"{'@' + _k(limit).replace('.0', ''):>9}" for limit in LIMITS)
    head += f"{'stale found/pruned (shell)':>28}{'valid':>7}"
    lines = [head]
    for row in rows:
        fmt = _FORMATS.get(row["format"], row["format"])
        line = f"{row['name'][:39]:<40}{fmt:<6}{row['entries']:>8}{_k(row['tokens_before']):>9}"
        line += "".join(f"{_k(row['optimize'][p]):>11}" for p in passes)
        for limit in LIMITS:
            c = row["compress"][str(limit)]
            mark = "!" if c["over_limit"] else ("*" if "compress" in c["steps"] else "")
            line += f"{_k(c['tokens_after']) + mark:>9}"
        s = row["stale_reads"]
        stale = f"{s['found']}/{s['pruned']} ({s['found_shell']}/{s['pruned_shell']})"
        line += f"{stale:>28}{'yes' if row['provider_valid'] else 'NO':>7}"
        lines.append(line)
    lines.append(
        "tokens after optimize() with only the named passes on (rw-noshell: read→write "
        "without shell commands);\n@limit: after history/compact at that contextLimit "
        "(* compress ran, ! still over the limit);\nvalid: every output is provider-valid "
        "(core/validity.py) where its input was; [id]: a sub-agent's thread."
    )
    return "\n".join(lines)


def latency(result: dict[str, Any]) -> str:
    lines = [
        f"session {result['session']} · contextLimit {result['context_limit']:,} "
        "(compression never triggers: the continuous path is timed)",
        f"{'scale':<7}{'entries':>8}{'json':>10}{'append p50':>12}{'compact p50':>13}"
        f"{'p95':>9}{'get p50':>9}{'p95':>9}{'work p50':>10}{'reply':>10}",
    ]
    for name, s in result["scales"].items():
        work = s["compact"]["p50_ms"] - s["get"]["p50_ms"]
        lines.append(
            f"{name:<7}{s['entries']:>8}{_mb(s['json_bytes']):>10}"
            f"{s['append']['p50_ms']:>10.1f}ms{s['compact']['p50_ms']:>11.1f}ms"
            f"{s['compact']['p95_ms']:>7.1f}ms{s['get']['p50_ms']:>7.1f}ms"
            f"{s['get']['p95_ms']:>7.1f}ms{work:>8.1f}ms{_mb(s['compact_reply_bytes']):>10}"
        )
    lines.append(
        "round trips over stdio after appending one turn (a tool call and its response); "
        "work = compact − get."
    )
    return "\n".join(lines)


def memory(result: dict[str, Any]) -> str:
    lines = [
        f"{'scale':<7}{'started':>10}{'idle':>10}{'loaded':>10}{'delta':>10}{'json':>10}"
        f"{'delta/json':>12}{'after turns':>13}"
    ]
    for name, s in result["scales"].items():
        delta = s["rss_loaded_bytes"] - s["rss_idle_bytes"]
        lines.append(
            f"{name:<7}{_mb(s['rss_started_bytes']):>10}{_mb(s['rss_idle_bytes']):>10}"
            f"{_mb(s['rss_loaded_bytes']):>10}{_mb(delta):>10}{_mb(s['json_bytes']):>10}"
            f"{delta / s['json_bytes']:>11.2f}×{_mb(s['rss_after_turns_bytes']):>13}"
        )
    lines.append(
        "RSS of the daemon: just started; idle after a one-turn warm-up session; with the "
        "session appended and compacted; after the timed turns."
    )
    return "\n".join(lines)


def targets(result: dict[str, Any]) -> str:
    t = result["targets"]
    rows = [
        ("compact p50, 1×, after a one-turn append", t["compact_p50_ms_1x"]["value"], "ms", 15.0),
        (
            "per-turn work 10× / 1× (compact − get, p50)",
            t["per_turn_work_ratio_10x_over_1x"]["value"],
            "×",
            2.0,
        ),
        ("RSS above idle / JSON size, 10×", t["rss_over_json_10x"]["value"], "×", 3.0),
    ]
    lines = []
    for label, value, unit, limit in rows:
        verdict = "n/a" if value is None else ("met" if value <= limit else "NOT met")
        shown = "n/a" if value is None else f"{value:g}{unit}"
        lines.append(f"{label:<46}{shown:>10}  target ≤ {limit:g}{unit}  {verdict}")
    work = t["per_turn_work_ratio_10x_over_1x"]
    lines.append(f"(work 1×: {work['work_1x_ms']:g} ms, 10×: {work['work_10x_ms']:g} ms)")
    return "\n".join(lines)


def profile(result: dict[str, Any]) -> str:
    lines = [
        f"cProfile of the daemon, {result['times']}× session, per turn (append + compact), "
        f"averaged over {result['turns']} turns",
        "by own time:",
    ]
    lines += [f"  {r['self_ms']:>8.2f} ms  {r['function']}" for r in result["by_self"][:10]]
    lines.append("hdcontext functions by cumulative time:")
    lines += [
        f"  {r['cumulative_ms']:>8.2f} ms  {r['function']}" for r in result["by_cumulative"][:10]
    ]
    return "\n".join(lines)


def replay(summary: dict[str, Any]) -> str:
    """The cache replay: every settings row and every peer, against density off."""
    columns = {
        "anthropic": "Anthr.",
        "anthropic_005": "0.05x",
        "anthropic_1h": "1h ag.",
        "anthropic_tail": "tail",
        "anthropic_ends": "ends",
        "anthropic_any_prefix": "(any)",
        "openai": "OpenAI",
        "gpt_5_6": "5.6+",
    }
    lines = [
        f"{summary['sessions']} conversations, {summary['calls']} model calls; cost relative to "
        "density off, each request priced as the provider bills it (billing.py)",
        "",
        f"{'settings':<54}{'tokens':>7}"
        + "".join(f"{c:>8}" for c in columns.values())
        + f"{'dearer':>8}{'any':>5}{'>1%':>5}{'worst':>7}{'breaks':>8}{'rewr.':>7}{'lost':>8}"
        f"{'blind edits':>13}{'peak':>9}{'compr.':>8}",
    ]
    for name, row in summary["rows"].items():
        blind = f"{row['blind']}/{row['edits']}"
        pct = f" ({100 * row['blind'] / row['edits']:.0f}%)" if row["edits"] else ""
        lines.append(
            f"{name:<54}{row['tokens']:>7.3f}"
            + "".join(f"{row[c]:>8.3f}" for c in columns)
            + f"{row['dearer']:>8}{row['dearer_any']:>5}{row['dearer_1pct']:>5}"
            f"{row['worst']:>7.2f}{row['prefix_breaks']:>8}{row['rewrites']:>7}"
            f"{_k(row['lost']):>8}{blind + pct:>13}{_k(row['peak']):>9}{row['compressions']:>8}"
        )
    lines.append(
        "Anthr.: Anthropic as it bills (entries only at breakpoints, found 20 content blocks "
        "back at most; Claude Sonnet 4.6's prices, reads 0.1x), the daemon's breakpoints "
        "placed; 0.05x: the same at Claude Opus 5.5's prices (reads 0.05x); 1h ag.: an agent "
        "that asks an hour on every breakpoint, against itself without hdcontext; tail: the "
        "same, the client placing one on its last message only (cache.maxBreakpoints 1); ends: "
        "entries found however far back; (any): any shared prefix read; OpenAI: before GPT-5.6;"
        " 5.6+: GPT-5.6 and later (breakpoints, newest 80, 1.25x writes, 30 minutes); each "
        "column's session planned for its provider; the peers place one breakpoint on the last "
        "message. dearer: sessions that cost more than with density off (Anthropic; any: under "
        "any price model; >1%: Anthropic, by more than 1%); breaks: calls whose request did not"
        " start with the previous one; rewr.: calls that made Anthropic write again entries it "
        "held, lost: those tokens; blind: Edit/MultiEdit of a file the full history had a view "
        "of and the request had none; peak: the largest request; compr.: compressions (200k "
        "limit)"
    )
    return "\n".join(lines)


def protocol_v2(result: dict[str, Any]) -> str:
    lines = [
        f"{'scale':<7}{'entries':>8}{'json':>9}{'append':>9}{'compact':>9}{'delta':>9}"
        f"{'sync':>9}{'then compact':>14}",
    ]
    for name, s in result["scales"].items():
        lines.append(
            f"{name:<7}{s['entries']:>8}{_mb(s['json_bytes']):>9}"
            f"{s['append']['p50_ms']:>7.2f}ms{s['compact_delta']['p50_ms']:>7.2f}ms"
            f"{_k(s['compact_delta_reply_bytes']).replace('k', 'kB'):>9}"
            f"{s['sync']['p50_ms']:>7.2f}ms{s['sync_then_compact_delta']['p50_ms']:>12.2f}ms"
        )
    lines.append(
        "p50 round trips: compact with reply=delta after a one-turn append (delta: its "
        "reply size); sync of the whole conversation with one new turn, then a delta "
        "compact"
    )
    for name, t in result["targets"].items():
        met = "met" if t["value"] <= t["target"] else "NOT met"
        lines.append(f"  {name:<42}{t['value']:>6}×  target ≤ {t['target']}×  {met}")
    return "\n".join(lines)


def scale(result: dict[str, Any]) -> str:
    gb = result["json_bytes_each"] * result["sessions"]
    above = result["rss_loaded_bytes"] - result["rss_idle_bytes"]
    lines = [
        f"{result['sessions']} sessions of {result['tokens_each']:,} tokens "
        f"({_mb(result['json_bytes_each'])} each, {_mb(gb)} in all) loaded in "
        f"{result['load_seconds']} s; RSS above idle {_mb(above)}",
        f"compact (delta) of one of them p50 {result['compact_among_p50_ms']} ms, the same session "
        f"alone {result['compact_alone_p50_ms']} ms (two daemons, turn by turn)",
        f"after a restart: first reply {result['restart_first_reply_s']} s, all "
        f"{result['sessions']} opened {result['restart_all_open_s']} s",
    ]
    for name, t in result["targets"].items():
        met = "met" if t["value"] <= t["target"] else "NOT met"
        lines.append(f"  {name:<42}{t['value']:>7}  target ≤ {t['target']}  {met}")
    return "\n".join(lines)


def holdout(result: dict[str, Any]) -> str:
    """The replay with the schedule's constants tuned without the project it prices."""
    lines = [
        f"{result['sessions']} conversations in {result['projects']} projects; Anthropic-priced "
        "cost relative to density off; held out: each project priced with the constants chosen "
        "on the others",
        "",
        f"{'settings':<20}{'shipped':>9}{'>1%':>5}{'held out':>10}{'>1%':>5}{'worst':>7}"
        f"{'best in sample':>16}   picks (horizon cap, batch allowance: projects)",
    ]
    rows = {**result["rows"]}
    if "mask_retention" in result:
        rows["maskRetention"] = result["mask_retention"]
    for name, row in rows.items():
        s, h, b = row["shipped"], row["held_out"], row["best_in_sample"]
        picks = "; ".join(f"{k}: {v}" for k, v in row["picks"].items())
        lines.append(
            f"{name:<20}{s['anthropic']:>9.3f}{s['dearer_1pct']:>5}{h['anthropic']:>10.3f}"
            f"{h['dearer_1pct']:>5}{h['worst']:>7.2f}{b['anthropic']:>16.3f}   {picks}"
        )
    if "mask_retention" in result:
        lines.append(
            "maskRetention: the default settings with each retention of "
            + ", ".join(str(r) for r in result["mask_retention"]["grid"])
            + f" (shipped {result['mask_retention']['default']}; picks: retention: projects)"
        )
    return "\n".join(lines)
