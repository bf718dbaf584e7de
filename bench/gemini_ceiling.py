"""Where the tokens of Gemini CLI's requests are, and what the density rules as they are could
take.

What the proxy saves is bounded by what its rules can see. Gemini CLI reads files with
``read_file`` (``absolute_path``, later ``file_path``) and ``read_many_files``, writes them with
``write_file`` and ``replace``, and runs ``run_shell_command``, all of them names the rules know
(``DEFAULT_READ_TOOLS``, ``DEFAULT_WRITE_TOOLS``, ``DEFAULT_SHELL_TOOLS``). What is left to any
rule that keeps the files' views is the tool outputs the model has answered: masking's share,
which this bounds with a free oracle (each output the model answered, but the newest
``RETAINED``, a pointer of ``POINTER`` tokens from the next request on, without the rewrite that
costs a real proxy the reads it loses), and the same keeping each file's latest read, as the
masking rule does (an edit is never made blind).

For each session: the token-calls (a content's tokens times the requests that send it) by kind;
the stale reads in its last request (found, and those the rule removes, with their tokens);
and the cost of that oracle relative to the CLI's own, under Gemini's implicit cache
(``billing.gemini``, the session's models' rows).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from hdcontext.core.density.optimize import find_stale_reads
from hdcontext.core.prices import lookup
from hdcontext.core.settings import DEFAULT_READ_TOOLS, DEFAULT_SHELL_TOOLS, DEFAULT_WRITE_TOOLS
from hdcontext.core.tools.files import extract_path
from hdcontext.formats.importers.gemini_cli_root import preamble_root
from hdcontext.formats.importers.gemini_contents import from_contents

from .billing import Bill, gemini
from .codex_ceiling import POINTER, RETAINED
from .density import NO_PASSES
from .gemini_checks import identities
from .gemini_recordings import Session
from .gemini_send import requests
from .gemini_units import FRAMING, Counts, part_tokens


def measure(session: Session, prompt: int) -> dict[str, Any]:
    """One session's figures (``prompt``: its prompt unit's tokens)."""
    units = Counts()
    by_kind: Counter[str] = Counter()
    cli, oracle, views = (Bill(gemini(session.calls[0].model)) for _ in range(3))
    cost = {"cli": 0.0, "oracle": 0.0, "views": 0.0}
    made = requests(session)
    for request in made:
        row = lookup(request.model).row
        assert row is not None
        cli.price = oracle.price = views.price = gemini(row.model)
        mine = units.units(request.model, prompt, request.contents)
        by_kind["prompt"] += prompt
        for content in request.contents:
            by_kind[f"{content.get('role')}:framing"] += FRAMING
            for part in content.get("parts", []):
                by_kind[_kind(content, part)] += part_tokens(part)
        dollars = row.input / 1e6
        cost["cli"] += dollars * cli.call(
            mine.blobs, mine.tokens, mine.blocks, mine.breakpoints, request.at
        )
        for name, bill, keep in (("oracle", oracle, False), ("views", views, True)):
            masked = list(mine.tokens)
            for i, saved in _maskable(request.contents, keep).items():
                masked[i + 1] = max(FRAMING, masked[i + 1] - saved)
            cost[name] += dollars * bill.call(
                mine.blobs, masked, mine.blocks, mine.breakpoints, request.at
            )
    return {
        "token_calls": dict(by_kind),
        "stale_reads": stale_reads(session, made[-1].contents) if made else {},
        "oracle_masking": cost["oracle"] / cost["cli"] if cost["cli"] else 1.0,
        "oracle_masking_views_kept": cost["views"] / cost["cli"] if cost["cli"] else 1.0,
        "cost_cli": cost["cli"],
        "cost_oracle": cost["oracle"],
        "cost_oracle_views_kept": cost["views"],
    }


def _kind(content: Mapping[str, Any], part: Mapping[str, Any]) -> str:
    response = part.get("functionResponse")
    if isinstance(response, Mapping):
        return f"output:{response.get('name')}"
    if "functionCall" in part:
        return "model:call"
    if "inlineData" in part or "fileData" in part:
        return "media"
    return f"{content.get('role')}:text"


def _maskable(contents: Sequence[Mapping[str, Any]], keep_views: bool) -> dict[int, int]:
    """The contents holding outputs the model has answered (a model content comes after
    them), but the newest ``RETAINED`` outputs (and, ``keep_views``, each file's latest
    read, which the masking rule keeps), each with the tokens a pointer saves."""
    outputs = [
        (i, part)
        for i, content in enumerate(contents)
        for part in content.get("parts", [])
        if "functionResponse" in part
    ]
    last_model = max((i for i, c in enumerate(contents) if c.get("role") == "model"), default=-1)
    views = current_views(contents) if keep_views else set()
    answered = [(i, p) for i, p in outputs if i < last_model]
    saved: Counter[int] = Counter()
    for i, part in answered[: max(0, len(outputs) - RETAINED)]:
        if (i, str(part["functionResponse"].get("id"))) not in views:
            saved[i] += max(0, part_tokens(part) - POINTER)
    return dict(saved)


def current_views(contents: Sequence[Mapping[str, Any]]) -> set[tuple[int, str]]:
    """The responses (content index, id) that are the latest read of a file: a read tool's
    call naming one path (paired with its response by id, else by name and order)."""
    latest: dict[str, tuple[int, str]] = {}
    for i, ids in enumerate(identities(contents)):
        parts = contents[i].get("parts", [])
        for part, key in zip(parts, ids, strict=True):
            call = part.get("functionCall")
            if not isinstance(call, Mapping) or call.get("name") not in DEFAULT_READ_TOOLS:
                continue
            path = extract_path(call.get("args"))
            answer = key[1].removeprefix("answered by ")
            if path is not None and i + 1 < len(contents):
                latest[path] = (i + 1, answer)
    return set(latest.values())


def stale_reads(session: Session, contents: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """The stale reads the rule finds in the session's last request, with the tool lists as
    they are."""
    entries = from_contents(list(contents))
    weight = {
        str(part["functionResponse"].get("id")): part_tokens(part)
        for content in contents
        for part in content.get("parts", [])
        if "functionResponse" in part
    }
    first = contents[0]["parts"][0].get("text", "") if contents and contents[0].get("parts") else ""
    config = replace(
        NO_PASSES,
        read_write_pruning=True,
        workspace_root=preamble_root(first) or "/",
        read_tools=frozenset(DEFAULT_READ_TOOLS),
        write_tools=frozenset(DEFAULT_WRITE_TOOLS),
        shell_tools=frozenset(DEFAULT_SHELL_TOOLS),
    )
    found = find_stale_reads(entries, config)
    return {
        "found": len(found),
        "removed": sum(s.prunable for s in found),
        "tokens": sum(weight.get(s.call_id, 0) for s in found),
        "removed_tokens": sum(weight.get(s.call_id, 0) for s in found if s.prunable),
        "outputs": len(weight),
        "output_tokens": sum(weight.values()),
    }


def total(found: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """The sessions' figures (``measure``'s, by name) and their sums."""
    calls: Counter[str] = Counter()
    stale: Counter[str] = Counter()
    cli = oracle = views = 0.0
    for figures in found.values():
        calls.update(figures["token_calls"])
        stale.update(figures["stale_reads"])
        cli += figures["cost_cli"]
        oracle += figures["cost_oracle"]
        views += figures["cost_oracle_views_kept"]
    return {
        "sessions": dict(found),
        "token_calls": dict(calls),
        "stale_reads": dict(stale),
        "oracle_masking": oracle / cli if cli else 1.0,
        "oracle_masking_views_kept": views / cli if cli else 1.0,
    }
