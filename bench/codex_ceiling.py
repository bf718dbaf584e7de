"""Where the tokens of Codex's requests are, and what the density rules as they are could take.

What the proxy saves on Codex's sessions is bounded by what its rules can see in them. Codex
reads files through the shell (``cat``, ``sed -n``, ``nl -ba``, ``rg``, through ``shell``,
``shell_command`` or ``exec_command``) and writes them with ``apply_patch``, its own freeform
tool; the stale-read rule (``core/density/stale_reads.py``) knows reads and writes by tool name
and shape, so on these sessions it finds what it finds with the tool lists as they are
(``tools.shell``: ``shell`` among them, ``exec_command`` and ``shell_command`` not), and what
it would find with those two named too (a user's ``tools.shell``; the writes stay unknown).
What is left to any rule that keeps the files' views is the tool outputs the model has answered:
masking's share, which this bounds with a free oracle (each output the model answered, but the
newest ``RETAINED``, a pointer of ``POINTER`` tokens from the next request on, without the
rewrite that costs a real proxy).

For each session: the token-calls (an item's tokens times the requests that send it) by kind;
the stale reads in its last request (found, and those the rule removes, with their tokens);
and the cost of that oracle relative to Codex's own, any prefix read at 0.1, writes free, both
living ``codex_replay.IN_MEMORY_S``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from hdcontext.core.density.optimize import find_stale_reads
from hdcontext.core.settings import DEFAULT_READ_TOOLS, DEFAULT_SHELL_TOOLS, DEFAULT_WRITE_TOOLS
from hdcontext.edges.proxy.responses import head_length
from hdcontext.formats.importers.openai_responses import from_items

from .billing import RESPONSES_PRICE_MODELS, Bill, lifetime
from .codex_rollouts import OUTPUTS, Rollout, kind_of, model_side
from .density import NO_PASSES
from .responses_units import Counts, item_tokens

RETAINED = 3
"""Outputs masking never takes (``compression.density.maskRetention``'s default)."""
POINTER = 50
"""Tokens of the one-line pointer an output becomes."""
CODEX_SHELLS = ("exec_command", "shell_command")


def measure(rollout: Rollout, prompt: int, in_memory_s: int) -> dict[str, Any]:
    """One session's figures (``prompt``: its prompt unit's tokens)."""
    units = Counts()
    by_kind: Counter[str] = Counter()
    price = lifetime(RESPONSES_PRICE_MODELS["prefix"], in_memory_s)
    codex, oracle = Bill(price), Bill(price)
    cost = {"codex": 0.0, "oracle": 0.0}
    names: dict[str, str] = {}
    for request in rollout.requests:
        items = request.items
        mine = units.units(request.model, prompt, items)
        by_kind["prompt"] += prompt
        for item, tokens in zip(items, mine.tokens[1:], strict=True):
            if kind_of(item) in ("function_call", "custom_tool_call"):
                names[str(item.get("call_id"))] = str(item.get("name"))
            by_kind[_kind(item, names)] += tokens
        masked = list(mine.tokens)
        for i in _maskable(items):
            masked[i + 1] = min(masked[i + 1], POINTER)
        ones = [1] * len(mine.blobs)
        cost["codex"] += codex.call(mine.blobs, mine.tokens, ones, mine.breakpoints, request.at)
        cost["oracle"] += oracle.call(mine.blobs, masked, ones, mine.breakpoints, request.at)
    return {
        "token_calls": dict(by_kind),
        "stale_reads": stale_reads(rollout),
        "oracle_masking": cost["oracle"] / cost["codex"] if cost["codex"] else 1.0,
        "cost_codex": cost["codex"],
        "cost_oracle": cost["oracle"],
    }


def _kind(item: Mapping[str, Any], names: Mapping[str, str]) -> str:
    kind = kind_of(item)
    if kind == "message":
        return f"message:{item.get('role')}"
    if kind in OUTPUTS:
        return f"output:{names.get(str(item.get('call_id')), '?')}"
    return kind


def _maskable(items: Sequence[Mapping[str, Any]]) -> list[int]:
    """The outputs the model has answered (a model item comes after them), but the newest
    ``RETAINED``."""
    outputs = [i for i, item in enumerate(items) if kind_of(item) in OUTPUTS]
    last_model = max((i for i, item in enumerate(items) if model_side(item)), default=-1)
    answered = [i for i in outputs if i < last_model]
    return answered[: max(0, len(outputs) - RETAINED)]


def stale_reads(rollout: Rollout) -> dict[str, dict[str, int]]:
    """The stale reads the rule finds in the session's last request: with the tool lists as
    they are, and with Codex's shell tools named."""
    if not rollout.requests:
        return {}
    items = list(rollout.requests[-1].items)
    items = items[head_length(items) :]
    entries = from_items(items)
    weight = {str(i.get("call_id")): item_tokens(i) for i in items if kind_of(i) in OUTPUTS}
    out: dict[str, dict[str, int]] = {}
    for label, shells in (
        ("today", DEFAULT_SHELL_TOOLS),
        ("codex_shells", (*DEFAULT_SHELL_TOOLS, *CODEX_SHELLS)),
    ):
        config = replace(
            NO_PASSES,
            read_write_pruning=True,
            workspace_root=rollout.cwd or "/",
            read_tools=frozenset(DEFAULT_READ_TOOLS),
            write_tools=frozenset(DEFAULT_WRITE_TOOLS),
            shell_tools=frozenset(shells),
        )
        found = find_stale_reads(entries, config)
        out[label] = {
            "found": len(found),
            "removed": sum(s.prunable for s in found),
            "tokens": sum(weight.get(s.call_id, 0) for s in found),
            "removed_tokens": sum(weight.get(s.call_id, 0) for s in found if s.prunable),
            "outputs": len(weight),
            "output_tokens": sum(weight.values()),
        }
    return out


def total(found: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The sessions' figures (``measure``'s, by name) and their sums."""
    calls: Counter[str] = Counter()
    stale: dict[str, Counter[str]] = {}
    codex = oracle = 0.0
    for figures in found.values():
        calls.update(figures["token_calls"])
        for label, counted in figures["stale_reads"].items():
            stale.setdefault(label, Counter()).update(counted)
        codex += figures["cost_codex"]
        oracle += figures["cost_oracle"]
    return {
        "sessions": dict(found),
        "token_calls": dict(calls),
        "stale_reads": {label: dict(counted) for label, counted in stale.items()},
        "oracle_masking": oracle / codex if codex else 1.0,
    }
