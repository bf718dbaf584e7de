"""Properties of optimize and compress over generated histories (REQ-HD-005..008, 013.7).

The generator plays an agent at work: reads, multi-file reads, writes and edits of a few files
(some spelled differently but resolving alike), parallel calls, failed and unanswered calls,
stray responses, ``@file`` inclusions (some malformed), timestamps on some entries and writes
seen on disk. Alongside the history it keeps, per read, what an independent reading of
REQ-HD-005 says its fate must be.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from hdcontext.core.compression.high_density import HighDensityStrategy
from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.compression.types import CompressionContext
from hdcontext.core.content import Block, IContent, ToolCallBlock, ToolResponseBlock
from hdcontext.core.density.types import DensityConfig, DensityResult, FileWrite
from hdcontext.core.tokens import count_entry
from tests.examples import examples

from .builders import ai, ai_text, call, human, inclusion, response, tools

ROOT = "/w"
PATHS = ("a.py", "/w/a.py", "./b.py", "/w/sub/../b.py", "/w/A.py")
READ_TOOLS = frozenset({"read_file", "read_many_files"})
WRITE_TOOLS = frozenset({"write_file", "replace"})


def resolved(path: str) -> str:
    return posixpath.normpath(posixpath.join(ROOT, path))


@dataclass(frozen=True)
class PlannedRead:
    call_id: str
    position: tuple[int, int]
    paths: tuple[str, ...] | None  # resolved; None when it can never be judged stale
    time: int | None


@dataclass
class Scenario:
    history: list[IContent] = field(default_factory=list)
    reads: list[PlannedRead] = field(default_factory=list)
    writes: list[tuple[tuple[int, int], str]] = field(default_factory=list)  # counted only
    external: list[FileWrite] = field(default_factory=list)

    def stale(self, read: PlannedRead) -> bool:
        """REQ-HD-005, read independently of the implementation."""
        if read.paths is None:
            return False

        def written_after(path: str) -> bool:
            by_tool = any(pos > read.position and p == path for pos, p in self.writes)
            on_disk = read.time is not None and any(
                w.path == path and w.time > read.time for w in self.external
            )
            return by_tool or on_disk

        return all(written_after(p) for p in read.paths)


def _params(draw: st.DrawFn, kind: str) -> tuple[JsonValue, tuple[str, ...] | None]:
    if kind == "malformed":
        shapes: list[JsonValue] = [None, "a.py", ["a.py"], {"file_path": 3}, {}]
        return draw(st.sampled_from(shapes)), None
    if kind == "many":
        chosen = draw(st.lists(st.sampled_from((*PATHS, "*.py", "src/**")), min_size=1, max_size=3))
        if any("*" in p for p in chosen):
            return {"paths": list(chosen)}, None
        return {"paths": list(chosen)}, tuple(resolved(p) for p in chosen)
    path = draw(st.sampled_from(PATHS))
    key = draw(st.sampled_from(["file_path", "absolute_path", "path"]))
    return {key: path}, (resolved(path),)


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    s = Scenario()
    clock = 0
    next_id = 0
    for _ in range(draw(st.integers(0, 16))):
        clock += draw(st.integers(1, 10))
        turn = draw(st.sampled_from(["human", "text", "tools", "tools", "tools"]))
        stamp = clock if draw(st.booleans()) else None
        if turn == "human":
            included = st.builds(inclusion, st.sampled_from(PATHS), st.sampled_from(["x", "y\nz"]))
            other = st.sampled_from(["please look", "--- a.py ---\nunclosed", ""])
            parts = draw(st.lists(st.one_of(included, included, other), max_size=3))
            s.history.append(human("\n".join(parts), ts=stamp))
            continue
        if turn == "text":
            s.history.append(ai_text("thinking aloud", ts=stamp))
            continue
        entry = len(s.history)
        blocks: list[Block] = []
        if draw(st.booleans()):
            blocks.append(ai_text("calling").blocks[0])
        answers: list[ToolResponseBlock] = []
        planned: list[tuple[str, tuple[int, int], tuple[str, ...] | None, str, str]] = []
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(
                st.sampled_from(["read", "read", "many", "write", "write", "other", "malformed"])
            )
            name = {
                "read": "read_file",
                "many": "read_many_files",
                "write": draw(st.sampled_from(sorted(WRITE_TOOLS))),
                "other": "run_shell_command",
                "malformed": draw(st.sampled_from(["read_file", "write_file"])),
            }[kind]
            params, paths = _params(draw, kind)
            outcome = draw(st.sampled_from(["ok", "ok", "ok", "error", "missing"]))
            call_id = f"c{next_id}"
            next_id += 1
            planned.append((call_id, (entry, len(blocks)), paths, kind, outcome))
            blocks.append(call(call_id, name, params))
            if outcome != "missing":
                error = "failed" if outcome == "error" else None
                answers.append(response(call_id, name, f"out {call_id}\nmore", error))
        if draw(st.integers(0, 9)) == 0:
            answers.append(response(f"stray{next_id}", "read_file", "orphan"))
        s.history.append(ai(*blocks, ts=stamp))
        answer_stamp = clock + 1 if draw(st.booleans()) else None
        if answers:
            s.history.append(tools(*answers, ts=answer_stamp))
        for call_id, position, paths, kind, outcome in planned:
            answered = outcome != "missing"
            if kind in ("read", "many"):
                time = answer_stamp if answered and answer_stamp is not None else stamp
                s.reads.append(PlannedRead(call_id, position, paths, time))
            elif kind == "write" and outcome == "ok":
                assert paths is not None
                s.writes.append((position, paths[0]))
    s.external = draw(
        st.lists(
            st.builds(FileWrite, st.sampled_from(PATHS).map(resolved), st.integers(0, clock + 5)),
            max_size=2,
        )
    )
    return s


mostly_on = st.sampled_from([True, True, True, False])

density_configs = st.builds(
    DensityConfig,
    read_write_pruning=mostly_on,
    file_dedupe=mostly_on,
    recency_pruning=st.booleans(),
    recency_retention=st.integers(-1, 3),
    workspace_root=st.just(ROOT),
    read_tools=st.just(READ_TOOLS),
    write_tools=st.just(WRITE_TOOLS),
)


def with_ledger(config: DensityConfig, s: Scenario) -> DensityConfig:
    return DensityConfig(
        read_write_pruning=config.read_write_pruning,
        file_dedupe=config.file_dedupe,
        recency_pruning=config.recency_pruning,
        recency_retention=config.recency_retention,
        workspace_root=config.workspace_root,
        read_tools=config.read_tools,
        write_tools=config.write_tools,
        external_writes=tuple(s.external),
    )


def apply(history: Sequence[IContent], result: DensityResult) -> list[IContent]:
    out = list(history)
    for index, entry in result.replacements.items():
        out[index] = entry
    for index in sorted(result.removals, reverse=True):
        del out[index]
    return out


def call_ids(history: Sequence[IContent]) -> set[str]:
    return {b.id for e in history for b in e.blocks if isinstance(b, ToolCallBlock)}


@settings(max_examples=examples(100), deadline=None)
@given(scenarios(), density_configs)
def test_req_hd_013_7_result_indices_are_in_bounds_sorted_and_disjoint(
    s: Scenario, config: DensityConfig
) -> None:
    result = HighDensityStrategy().optimize(s.history, with_ledger(config, s))
    n = len(s.history)
    assert not set(result.removals) & set(result.replacements)
    assert all(0 <= i < n for i in (*result.removals, *result.replacements))
    assert list(result.removals) == sorted(set(result.removals))
    touched = len(set(result.removals) | set(result.replacements))
    metadata = result.metadata
    counted = (
        metadata.read_write_pairs_pruned
        + metadata.file_deduplications_pruned
        + metadata.recency_pruned
    )
    assert counted >= touched  # an entry two passes touched counts for each of them
    assert (counted == 0) == result.is_empty


@settings(max_examples=examples(100), deadline=None)
@given(scenarios(), density_configs)
def test_req_hd_005_006_007_optimize_is_idempotent(s: Scenario, config: DensityConfig) -> None:
    full = with_ledger(config, s)
    strategy = HighDensityStrategy()
    once = apply(s.history, strategy.optimize(s.history, full))
    assert strategy.optimize(once, full).is_empty


@settings(max_examples=examples(100), deadline=None)
@given(scenarios(), density_configs)
def test_req_hd_005_6_and_005_7_exactly_the_stale_reads_go(
    s: Scenario, config: DensityConfig
) -> None:
    output = apply(s.history, HighDensityStrategy().optimize(s.history, with_ledger(config, s)))
    survivors = call_ids(output)
    expected_gone = {r.call_id for r in s.reads if config.read_write_pruning and s.stale(r)}
    assert call_ids(s.history) - survivors == expected_gone
    # In particular a read that nothing wrote over afterwards (the latest read of its
    # files) survives, whatever the switches say.
    for read in s.reads:
        paths = read.paths or ()
        by_tool = any(pos > read.position and p in paths for pos, p in s.writes)
        on_disk = read.time is not None and any(
            w.path in paths and w.time > read.time for w in s.external
        )
        if not by_tool and not on_disk:
            assert read.call_id in survivors


@settings(max_examples=examples(100), deadline=None)
@given(scenarios(), density_configs)
def test_req_hd_005_8_pairs_stay_whole(s: Scenario, config: DensityConfig) -> None:
    output = apply(s.history, HighDensityStrategy().optimize(s.history, with_ledger(config, s)))
    assert pairing_problems(output) <= pairing_problems(s.history)


@settings(max_examples=examples(70), deadline=None)
@given(scenarios(), density_configs)
def test_req_hd_006_latest_inclusions_and_human_entries_stay(
    s: Scenario, config: DensityConfig
) -> None:
    result = HighDensityStrategy().optimize(s.history, with_ledger(config, s))
    humans = [i for i, e in enumerate(s.history) if e.speaker == "human"]
    assert not set(humans) & set(result.removals)
    if humans:
        assert humans[-1] not in result.replacements  # nothing is included after it


@settings(max_examples=examples(70), deadline=None)
@given(scenarios(), density_configs)
def test_req_hd_001_optimize_leaves_its_input_alone(s: Scenario, config: DensityConfig) -> None:
    before = list(s.history)
    wire = [e.to_wire() for e in s.history]
    HighDensityStrategy().optimize(s.history, with_ledger(config, s))
    assert all(a is b for a, b in zip(s.history, before, strict=True))
    assert len(s.history) == len(before)
    assert [e.to_wire() for e in s.history] == wire


@settings(max_examples=examples(70), deadline=None)
@given(
    scenarios(),
    st.floats(0.01, 0.99),
    st.integers(0, 3000),
)
async def test_req_hd_008_compress_keeps_structure_and_never_grows(
    s: Scenario, preserve: float, target: int
) -> None:
    tokens = [count_entry(e) for e in s.history]
    context = CompressionContext(
        history=s.history,
        tokens=tokens,
        context_limit=max(1, round(target / 0.6)),
        threshold=1.0,
        preserve_threshold=preserve,
    )
    result = await HighDensityStrategy().compress(context)
    out = result.new_history
    assert len(out) == len(s.history)
    assert result.llm_call_made is False
    changed = [i for i, (a, b) in enumerate(zip(out, s.history, strict=True)) if a is not b]
    assert len(changed) == result.summarized
    for i in changed:
        assert count_entry(out[i]) < tokens[i]
        for new, old in zip(out[i].blocks, s.history[i].blocks, strict=True):
            if isinstance(old, ToolResponseBlock):
                assert isinstance(new, ToolResponseBlock)
                assert (new.call_id, new.tool_name) == (old.call_id, old.tool_name)
                assert isinstance(new.result, str) and "\n" not in new.result
            else:
                assert new is old
    assert pairing_problems(out) == pairing_problems(s.history)
    if s.history:
        assert out[-1] is s.history[-1]
