"""The density engine gives, turn after turn, exactly what the same passes folded cold over
the whole history give (``optimize``), and so do the read times the daemon settles disk
writes with.

Histories are built the way a session builds them: turns appended one after another, the
result of each optimize applied (or, sometimes, not), writes seen on disk between turns,
settings changed now and then, and the history sometimes replaced wholesale (compression,
a restore after a failure). The generator aims at what the passes keep between turns: call
ids used twice, responses that arrive turns after their call (or before it), failed and
unanswered calls, shell commands that change directory (so that a removed or a late-answered
call changes where every later command ran), exit statuses, outputs already pruned, ``@file``
inclusions of the same files again and again, outputs long enough to be masked (and calls
edited under a masked output, whose pointer names the call), and timestamps on some entries
only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import JsonValue

from hdcontext.core.content import Block, IContent, Metadata, TextBlock
from hdcontext.core.density.engine import DensityEngine
from hdcontext.core.density.optimize import optimize, read_times
from hdcontext.core.density.types import DensityConfig, DensityResult, FileWrite
from hdcontext.core.history.history import History
from hdcontext.core.tools.summary import PRUNED_POINTER
from tests.examples import examples

from .builders import call, inclusion, response

ROOT = "/w"
PATHS = ("a.py", "/w/a.py", "./b.py", "sub/c.py", "/w/sub/../b.py", "c.py")
SHELL = (
    "cat a.py",
    "cat b.py c.py",
    "cd sub && cat c.py",
    "cd sub",
    "cd /w",
    "cd ..",
    "sed -i s/x/y/ a.py",
    "echo hi > b.py",
    "cd sub && echo hi > c.py",
    "head -n 3 c.py | grep x",
    "cat *.py",
    "ls",
    "tee a.py",
    "cd sub; cat c.py",
    "nl -ba b.py",
    "cat <<EOF > a.py\nnew\nEOF",
    "sed -n 1,5p a.py",
)
RESULTS: tuple[JsonValue, ...] = (
    "fine",
    "lines\nof output",
    "exit code: 1\nfailed",
    "<returncode>0</returncode>",
    {"returncode": 2, "stdout": ""},
    PRUNED_POINTER,
    "The file was updated. A snippet of it:\n" + "   7\u2192    return a + b\n" * 6,
    "a long output line, long enough for masking to point at it\n" * 8,
    "exit code: 1\n" + "the failure, at length, for masking to take\n" * 8,
)
TOOLS = (
    "read_file",
    "read_file",
    "read_many_files",
    "write_file",
    "replace",
    "bash",
    "bash",
    "grep",
    "todo_write",
)
READ_TOOLS = frozenset({"read_file", "read_many_files"})
WRITE_TOOLS = frozenset({"write_file", "replace"})
SHELL_TOOLS = frozenset({"bash"})


def counter(entry: IContent) -> int:
    return 4 + sum(len(str(b)) for b in entry.blocks)


def _meta(draw: st.DrawFn, clock: int) -> Metadata | None:
    stamp = clock if draw(st.integers(0, 3)) else None
    cwd = draw(st.sampled_from([None, None, "/w", "/w/sub"]))
    if stamp is None and cwd is None:
        return None
    return Metadata(timestamp=stamp, cwd=cwd) if cwd else Metadata(timestamp=stamp)


def _params(draw: st.DrawFn, name: str) -> JsonValue:
    if name == "bash":
        params: dict[str, JsonValue] = {"command": draw(st.sampled_from(SHELL))}
        if draw(st.integers(0, 4)) == 0:
            params["cwd"] = draw(st.sampled_from(["/w", "sub", "/elsewhere"]))
        return params
    if name == "read_many_files":
        chosen = draw(st.lists(st.sampled_from((*PATHS, "*.py")), min_size=1, max_size=3))
        return {"paths": list(chosen)}
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([None, "a.py", {"file_path": 3}, {}]))
    key = draw(st.sampled_from(["file_path", "absolute_path", "path"]))
    params: dict[str, JsonValue] = {key: draw(st.sampled_from(PATHS))}
    extra = draw(st.sampled_from(["", "", "range", "wide", "content", "edit"]))
    if extra == "range":
        params.update(offset=10, limit=20)
    elif extra == "wide":
        params.update(offset=0, limit=100)
    elif extra == "content":
        params["content"] = "whole"
    elif extra == "edit":
        params.update(old_string="a", new_string="b")
    return params


@st.composite
def turns(draw: st.DrawFn) -> list[tuple[str, Any]]:
    """A session as steps: ("entries", [...]), ("disk", FileWrite), ("config", DensityConfig),
    ("optimize", apply?), ("reset", how)."""
    steps: list[tuple[str, Any]] = []
    clock = 0
    ids: list[str] = []
    pending: list[tuple[str, str]] = []  # (call id, tool) not answered yet
    for _ in range(draw(st.integers(1, 12))):
        clock += draw(st.integers(1, 5))
        entries: list[IContent] = []
        for _ in range(draw(st.integers(1, 3))):
            kind = draw(st.sampled_from(["human", "ai", "calls", "calls", "calls", "late"]))
            meta = _meta(draw, clock)
            if kind == "human":
                parts = draw(
                    st.lists(
                        st.one_of(
                            st.builds(inclusion, st.sampled_from(PATHS), st.just("x")),
                            st.sampled_from(["look", "--- a.py ---\nunclosed", ""]),
                        ),
                        min_size=1,
                        max_size=3,
                    )
                )
                blocks = tuple(TextBlock(text=p) for p in parts)
                entries.append(IContent(speaker="human", blocks=blocks, metadata=meta))
            elif kind == "ai":
                text = draw(st.sampled_from(["thinking", "", "  "]))
                entries.append(
                    IContent(speaker="ai", blocks=(TextBlock(text=text),), metadata=meta)
                )
            elif kind == "late" and pending:
                call_id, tool = pending.pop(draw(st.integers(0, len(pending) - 1)))
                result = draw(st.sampled_from(RESULTS))
                answer = response(call_id, tool, result, draw(st.sampled_from([None, "boom"])))
                entries.append(IContent(speaker="tool", blocks=(answer,), metadata=meta))
            else:
                blocks_: list[Block] = []
                answers: list[Block] = []
                for _ in range(draw(st.integers(1, 3))):
                    name = draw(st.sampled_from(TOOLS))
                    if ids and draw(st.integers(0, 9)) == 0:
                        call_id = draw(st.sampled_from(ids))  # an id used twice
                    else:
                        call_id = f"c{len(ids)}"
                    ids.append(call_id)
                    blocks_.append(call(call_id, name, _params(draw, name)))
                    fate = draw(st.sampled_from(["now", "now", "now", "later", "never", "early"]))
                    if fate == "now":
                        result = draw(st.sampled_from(RESULTS))
                        error = draw(st.sampled_from([None, None, None, "failed", ""]))
                        answers.append(response(call_id, name, result, error))
                    elif fate == "later":
                        pending.append((call_id, name))
                    elif fate == "early":  # a response before its call
                        early = response(call_id, name, "early", None)
                        entries.append(IContent(speaker="tool", blocks=(early,), metadata=meta))
                if draw(st.booleans()):
                    blocks_.insert(0, TextBlock(text="calling"))
                entries.append(IContent(speaker="ai", blocks=tuple(blocks_), metadata=meta))
                if answers:
                    answer_meta = _meta(draw, clock + 1)
                    entries.append(
                        IContent(speaker="tool", blocks=tuple(answers), metadata=answer_meta)
                    )
        steps.append(("entries", entries))
        for _ in range(draw(st.integers(0, 2))):
            path = draw(st.sampled_from(["/w/a.py", "/w/b.py", "/w/sub/c.py", "a.py"]))
            steps.append(("disk", FileWrite(path, draw(st.integers(0, clock + 3)))))
        if draw(st.integers(0, 5)) == 0:
            steps.append(("config", draw(configs)))
        if draw(st.integers(0, 7)) == 0:
            steps.append(("reset", draw(st.sampled_from(["replace_all", "restore", "clear"]))))
        steps.append(("optimize", draw(st.integers(0, 5)) > 0))
    return steps


configs = st.builds(
    DensityConfig,
    read_write_pruning=st.sampled_from([True, True, True, False]),
    file_dedupe=st.sampled_from([True, True, True, False]),
    recency_pruning=st.booleans(),
    recency_retention=st.integers(-1, 3),
    workspace_root=st.sampled_from([ROOT, ROOT, ROOT, ""]),
    read_tools=st.just(READ_TOOLS),
    write_tools=st.just(WRITE_TOOLS),
    shell_tools=st.sampled_from([SHELL_TOOLS, SHELL_TOOLS, frozenset()]),
    keep_latest_view=st.booleans(),
    masking=st.sampled_from(["off", "cold", "always"]),
    mask_retention=st.integers(0, 3),
)


def wire(result: DensityResult) -> tuple[Any, ...]:
    """Everything a DensityResult says, including which keys each entry would write out."""
    return (
        result.removals,
        {i: e.to_wire() for i, e in result.replacements.items()},
        result.metadata,
    )


async def _play(steps: Sequence[tuple[str, Any]], config: DensityConfig) -> int:
    history = History(counter)
    engine = DensityEngine()
    disk: list[FileWrite] = []
    checked = 0
    for what, value in steps:
        if what == "entries":
            history.append(value)
        elif what == "disk":
            disk.append(value)
        elif what == "config":
            config = value
        elif what == "reset":
            if value == "replace_all":
                history.replace_all(list(history.raw))
            elif value == "restore":
                history.restore(list(history.raw_json), list(history.tokens), [])
            else:
                history.clear()
        else:
            full = DensityConfig(**{**config.__dict__, "external_writes": tuple(disk)})
            expected = optimize(list(history.raw), full)
            got = engine.optimize(history, full)
            assert got == expected
            assert wire(got) == wire(expected)
            assert engine.read_times(history, full) == read_times(list(history.raw), full)
            checked += 1
            if value and not got.is_empty:
                history.apply_density_result(got)
    return checked


@settings(max_examples=examples(100), deadline=None)
@given(turns(), configs)
def test_the_engine_gives_what_the_cold_fold_gives(
    steps: list[tuple[str, Any]], config: DensityConfig
) -> None:
    assert asyncio.run(_play(steps, config)) >= 1
