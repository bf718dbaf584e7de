"""The engine on real Claude Code sessions (shared/data/transcripts/claude-code).

The expected stale reads come from a small independent oracle written straight from the
rule (a Read whose file a later, successful Write/Edit/MultiEdit changed), not from the
engine, and the engine must find exactly those.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.content import IContent, ToolCallBlock, ToolResponseBlock
from hdcontext.core.session.session import Session
from hdcontext.formats.importers.claude_code import from_jsonl

from .seeds import seeds

TRANSCRIPTS = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "claude-code"
)
FILES = sorted(TRANSCRIPTS.glob("*.jsonl"))

pytestmark = pytest.mark.skipif(not FILES, reason=f"no transcripts at {TRANSCRIPTS}")


def load(path: Path) -> list[IContent]:
    return from_jsonl(path.read_text(encoding="utf-8"))


def oracle_stale_reads(history: list[IContent]) -> set[str]:
    events: list[tuple[str, str, str]] = []  # (kind, call id, path) in order
    failed: set[str] = set()
    answered: set[str] = set()
    for entry in history:
        for block in entry.blocks:
            if isinstance(block, ToolCallBlock) and isinstance(block.parameters, dict):
                path = block.parameters.get("file_path")
                if block.name == "Read" and isinstance(path, str):
                    events.append(("read", block.id, path))
                elif block.name in ("Write", "Edit", "MultiEdit") and isinstance(path, str):
                    events.append(("write", block.id, path))
            elif isinstance(block, ToolResponseBlock):
                answered.add(block.call_id)
                if block.error:
                    failed.add(block.call_id)
    stale: set[str] = set()
    for i, (kind, call_id, path) in enumerate(events):
        if kind != "read":
            continue
        if any(
            k == "write" and p == path and cid in answered and cid not in failed
            for k, cid, p in events[i + 1 :]
        ):
            stale.add(call_id)
    return stale


def call_ids(history: list[IContent]) -> set[str]:
    return {b.id for e in history for b in e.blocks if isinstance(b, ToolCallBlock)}


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_imported_sessions_are_provider_valid(path: Path) -> None:
    history = load(path)
    assert len(history) > 20
    assert pairing_problems(history) == set()


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
async def test_optimize_prunes_exactly_the_stale_reads(path: Path) -> None:
    history = load(path)
    expected = oracle_stale_reads(history)
    session = seeds(Session("real", workspace_root=lambda: "/"))
    session.set_override("tools.shell", [])  # the oracle knows the file tools only
    session.append(history)
    result = await session.compact()
    pruned = call_ids(history) - call_ids(result.history)
    assert pruned == expected
    assert pairing_problems(result.history) == set()
    assert list(session.history.transcript) == history


async def test_a_bash_head_of_a_file_edited_later_is_pruned_in_a_real_session() -> None:
    path = TRANSCRIPTS / "jssoundrecorder-7acd37a8.jsonl"
    if not path.exists():
        pytest.skip(f"{path} is missing")
    history = load(path)
    head = next(
        b
        for e in history
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
        and isinstance(b.parameters, dict)
        and b.parameters.get("command") == "head -20 js/drone.js"
    )
    session = seeds(Session("real", workspace_root=lambda: "/"))
    session.append(history)
    result = await session.compact()
    pruned = call_ids(history) - call_ids(result.history)
    assert pruned == oracle_stale_reads(history) | {head.id}
    assert pairing_problems(result.history) == set()


async def test_some_real_session_has_stale_reads() -> None:
    assert sum(len(oracle_stale_reads(load(p))) for p in FILES) > 0


@pytest.mark.parametrize("strategy", ["high-density", "top-down-truncation"])
@pytest.mark.parametrize("limit", [20_000, 50_000])
@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
async def test_compression_at_small_limits_stays_provider_valid(
    path: Path, limit: int, strategy: str
) -> None:
    history = load(path)
    session = Session("real", workspace_root=lambda: "/")
    session.set_override("compression.strategy", strategy)
    session.set_override("contextLimit", limit)
    session.append(history)
    result = await session.compact()
    assert pairing_problems(result.history) == set()
    assert list(session.history.transcript) == history
    if result.compression is not None:
        assert result.compression.tokens_after <= result.compression.tokens_before
    if strategy == "top-down-truncation" and result.compression is not None:
        assert result.status.total_tokens < 0.85 * limit * 0.6 or result.over_limit


def oracle_latest_views(history: list[IContent]) -> set[str]:
    """Keep the latest view, read straight from the rule: a Read goes when a later view of
    its file covers it (a Read of the whole file, or of a range containing its own; a Write
    of the whole content) that worked."""
    calls: list[tuple[str, str, str, int, int | None]] = []  # (kind, id, path, low, high)
    failed: set[str] = set()
    answered: set[str] = set()
    for entry in history:
        for block in entry.blocks:
            if isinstance(block, ToolCallBlock) and isinstance(block.parameters, dict):
                params = block.parameters
                path = params.get("file_path")
                if not isinstance(path, str):
                    continue
                if block.name == "Read":
                    offset, limit = params.get("offset"), params.get("limit")
                    if offset is None and limit is None:
                        calls.append(("read", block.id, path, -1, None))
                    else:
                        low = int(offset or 0)
                        high = None if limit is None else low + int(limit)
                        calls.append(("read", block.id, path, low, high))
                elif block.name == "Write" and isinstance(params.get("content"), str):
                    calls.append(("write", block.id, path, -1, None))
            elif isinstance(block, ToolResponseBlock):
                answered.add(block.call_id)
                if block.error:
                    failed.add(block.call_id)

    def covers(later: tuple[str, str, str, int, int | None], low: int, high: int | None) -> bool:
        _, _, _, l_low, l_high = later
        if l_low == -1:
            return True
        if low == -1:
            return False
        return l_low <= low and (l_high is None or (high is not None and l_high >= high))

    pruned: set[str] = set()
    for i, (kind, call_id, path, low, high) in enumerate(calls):
        if kind != "read":
            continue
        if any(
            p == path and cid in answered and cid not in failed and covers(later, low, high)
            for later in calls[i + 1 :]
            for _, cid, p, _, _ in [later]
        ):
            pruned.add(call_id)
    return pruned


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
async def test_keeping_the_latest_view_prunes_exactly_the_covered_reads(path: Path) -> None:
    history = load(path)
    session = Session("real", workspace_root=lambda: "/")
    session.set_override("tools.shell", [])  # the oracle knows the file tools only
    session.append(history)
    result = await session.compact()
    pruned = call_ids(history) - call_ids(result.history)
    assert pruned == oracle_latest_views(history)
    assert pruned <= oracle_stale_reads(history) | oracle_latest_views(history)
    assert pairing_problems(result.history) == set()


async def test_a_read_whose_only_later_write_was_refused_stays_in_a_real_session() -> None:
    """docs/density.md, "Decisions where the seeds are silent": llxprt's optimize() counts any write
    call; here a write counts once it happened. In this real session the user refused the one
    MultiEdit after a Read, and the Read stays under the seeds' settings."""
    path = (
        TRANSCRIPTS.parent
        / "claude-code-log"
        / "-Users-dain-workspace-claude-code-log-sample"
        / "0d3a8e6f-290f-4105-a327-a2496e5e2a83.jsonl"
    )
    if not path.exists():
        pytest.skip(f"{path} is missing")
    history = load(path)
    target = "/Users/dain/workspace/claude-code-log/claude_code_log/templates/components/"
    target += "timeline_styles.css"
    calls = [
        b
        for e in history
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
        and isinstance(b.parameters, dict)
        and b.parameters.get("file_path") == target
    ]
    assert [c.name for c in calls] == ["Read", "MultiEdit"]
    refused = next(
        b
        for e in history
        for b in e.blocks
        if isinstance(b, ToolResponseBlock) and b.call_id == calls[1].id
    )
    assert refused.error is not None and "doesn't want to proceed" in refused.error
    session = seeds(Session("real", workspace_root=lambda: "/"))
    session.append(history)
    result = await session.compact()
    assert calls[0].id in call_ids(result.history)
