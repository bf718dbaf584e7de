"""Gemini CLI's tools as the density rules read them, under the default tool settings.

``read_file`` (``absolute_path`` in 2025's CLIs, ``file_path`` since; ``offset``/``limit`` or
``start_line``/``end_line`` make it part of the file), ``read_many_files`` (``paths``),
``write_file`` (the whole content), ``replace`` (a partial edit) and ``run_shell_command``
(``command``, run in ``directory``). And the CLI's own masked outputs
(``<tool_output_masked>…``): already small, they are no view of the file, and no rule of ours
rewrites them.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pydantic import JsonValue

from hdcontext.core.content import IContent, Metadata, ToolCallBlock, ToolResponseBlock
from hdcontext.core.density.optimize import optimize
from hdcontext.core.density.types import DensityConfig, DensityResult, FileWrite
from hdcontext.core.settings import DEFAULT_READ_TOOLS, DEFAULT_SHELL_TOOLS, DEFAULT_WRITE_TOOLS
from hdcontext.core.tools.files import extract_path
from hdcontext.core.tools.summary import DISK_POINTER, is_compact
from hdcontext.formats.importers import load

from .builders import ai_call, ai_text, human, tool_result

KEEP = DensityConfig(
    read_write_pruning=True,
    file_dedupe=False,
    workspace_root="/w",
    read_tools=frozenset(DEFAULT_READ_TOOLS),
    write_tools=frozenset(DEFAULT_WRITE_TOOLS),
    shell_tools=frozenset(DEFAULT_SHELL_TOOLS),
    keep_latest_view=True,
)
SEEDS = dataclasses.replace(KEEP, keep_latest_view=False)
MASKING = dataclasses.replace(KEEP, masking="cold", mask_retention=0)
SOURCE = "".join(f"def f{n}(x):\n    return x + {n}\n" for n in range(30))


# What Gemini CLI 0.61 sends for an old output once it masked it (NOTES.md §4): 250
# characters of the head and of the tail of the response, and where the whole of it went.
def cli_masked(output: str, tool: str = "read_file") -> str:
    return (
        f"<tool_output_masked>\n{output[:250]}\n... [TRUNCATED] ...\n{output[-250:]}\n\n"
        "Output too large. Full output available at: /home/u/.gemini/tmp/w/tool-outputs/"
        f"session-1/{tool}_{tool}_1796656079729_0_1cd8pj.txt\n</tool_output_masked>"
    )


CLI_MASKED = cli_masked(SOURCE)


def call(
    cid: str, name: str, params: dict[str, JsonValue], out: JsonValue = "ok"
) -> list[IContent]:
    return [ai_call(cid, name, params), tool_result(cid, name, out)]


def read(
    cid: str, path: str = "/w/a.py", key: str = "file_path", **more: JsonValue
) -> list[IContent]:
    return call(cid, "read_file", {key: path, **more}, SOURCE)


def write_file(cid: str, path: str = "/w/a.py") -> list[IContent]:
    return call(cid, "write_file", {"file_path": path, "content": SOURCE})


def replace(cid: str, path: str = "/w/a.py") -> list[IContent]:
    params: dict[str, JsonValue] = {
        "file_path": path,
        "instruction": "Make f3 add 4.",
        "old_string": "x + 3",
        "new_string": "x + 4",
    }
    return call(cid, "replace", params, f"Successfully modified file: {path} (1 replacements).")


def gone(history: list[IContent], result: DensityResult) -> set[str]:
    """Ids of the calls the result removes."""
    out: set[str] = set()
    for i in result.removals:
        out.update(b.id for b in history[i].blocks if isinstance(b, ToolCallBlock))
    for i, entry in result.replacements.items():
        kept = {b.id for b in entry.blocks if isinstance(b, ToolCallBlock)}
        out.update(
            b.id for b in history[i].blocks if isinstance(b, ToolCallBlock) and b.id not in kept
        )
    return out


def outputs(history: list[IContent], result: DensityResult) -> dict[str, JsonValue]:
    """Each response's result as ``result`` leaves it, by call id."""
    out: dict[str, JsonValue] = {}
    for i, entry in enumerate(history):
        if i not in result.removals:
            for block in result.replacements.get(i, entry).blocks:
                if isinstance(block, ToolResponseBlock):
                    out[block.call_id] = block.result
    return out


@pytest.mark.parametrize("key", ["file_path", "absolute_path"])
def test_a_read_goes_once_write_file_writes_the_whole_file(key: str) -> None:
    history = [human("rewrite a.py"), *read("r1", key=key), *write_file("w1"), ai_text("done")]
    assert gone(history, optimize(history, KEEP)) == {"r1"}


@pytest.mark.parametrize("key", ["file_path", "absolute_path"])
def test_a_later_whole_read_supersedes_an_earlier_one(key: str) -> None:
    history = [*read("r1", key=key), *replace("e1"), *read("r2", key=key), ai_text("ok")]
    assert gone(history, optimize(history, KEEP)) == {"r1"}


def test_a_read_followed_only_by_replace_stays() -> None:
    """Decision 11: ``replace`` changes a part; the read is the model's only sight of the
    file, and an edit made without it would be made blind."""
    history = [human("fix f3"), *read("r1"), *replace("e1"), *replace("e2"), ai_text("fixed")]
    assert gone(history, optimize(history, KEEP)) == set()
    assert gone(history, optimize(history, SEEDS)) == {"r1"}  # the seeds' rule: any write


@pytest.mark.parametrize(
    "part",
    [{"start_line": 10, "end_line": 20}, {"offset": 10, "limit": 10}],
    ids=["lines", "offset"],
)
def test_part_of_a_file_does_not_supersede_all_of_it(part: dict[str, JsonValue]) -> None:
    history = [*read("r1"), *read("r2", **part), ai_text("ok")]
    assert gone(history, optimize(history, KEEP)) == set()
    wider = [*read("p1", **part), *read("r2"), ai_text("ok")]
    assert gone(wider, optimize(wider, KEEP)) == {"p1"}


def test_read_many_files_goes_when_every_file_it_read_has_a_later_view() -> None:
    many = call("m1", "read_many_files", {"paths": ["/w/a.py", "/w/b.py"]}, SOURCE * 2)
    one = [*many, *write_file("w1", "/w/a.py"), ai_text("ok")]
    assert gone(one, optimize(one, KEEP)) == set()
    both = [*one, *write_file("w2", "/w/b.py"), ai_text("ok")]
    assert gone(both, optimize(both, KEEP)) == {"m1"}
    globbed = [*call("m2", "read_many_files", {"paths": ["/w/*.py"]}), *write_file("w1")]
    assert gone(globbed, optimize(globbed, KEEP)) == set()


def test_run_shell_command_reads_in_the_directory_it_names() -> None:
    shell = call("s1", "run_shell_command", {"command": "cat a.py", "directory": "/w/sub"}, SOURCE)
    elsewhere = [*shell, *write_file("w1", "/w/a.py"), ai_text("ok")]
    assert gone(elsewhere, optimize(elsewhere, KEEP)) == set()
    there = [*shell, *write_file("w1", "/w/sub/a.py"), ai_text("ok")]
    assert gone(there, optimize(there, KEEP)) == {"s1"}
    relative = call("s2", "run_shell_command", {"command": "cat a.py", "directory": "sub"}, SOURCE)
    history = [*relative, *write_file("w1", "/w/sub/a.py"), ai_text("ok")]
    assert gone(history, optimize(history, KEEP)) == {"s2"}


# -- the CLI's own masked outputs -------------------------------------------------------------


def test_the_cli_s_masked_output_is_compact_and_no_view_of_the_file() -> None:
    assert is_compact(CLI_MASKED)
    assert not is_compact(SOURCE + "<tool_output_masked>")  # a file that merely mentions it
    # r2's output is the CLI's mask: not a sight of the file, so r1 stays the view.
    masked_later = [*read("r1"), *call("r2", "read_file", {"file_path": "/w/a.py"}, CLI_MASKED)]
    history = [*masked_later, *replace("e1"), ai_text("ok")]
    assert gone(history, optimize(history, KEEP)) == set()


def test_no_rule_rewrites_the_cli_s_masked_output() -> None:
    """Masking leaves a shell output the CLI masked as the CLI wrote it, while it masks the
    others; a read the CLI masked stays so when its file changes on disk."""
    history = [
        human("go"),
        *call("s1", "run_shell_command", {"command": "make test"}, cli_masked(SOURCE * 3)),
        *call("s2", "run_shell_command", {"command": "make lint"}, SOURCE),
        *call("s3", "run_shell_command", {"command": "make docs"}, SOURCE),
        ai_text("ok"),
    ]
    out = outputs(history, optimize(history, MASKING))
    assert out["s1"] == cli_masked(SOURCE * 3)
    assert out["s2"] != SOURCE and out["s3"] != SOURCE  # masked by us: the rule did run
    read_masked = [*call("r1", "read_file", {"file_path": "/w/a.py"}, CLI_MASKED), ai_text("k")]
    stamped = [e.model_copy(update={"metadata": Metadata(timestamp=1)}) for e in read_masked]
    changed = dataclasses.replace(KEEP, external_writes=(FileWrite("/w/a.py", 5),))
    assert outputs(stamped, optimize(stamped, changed))["r1"] == CLI_MASKED
    plain = [e.model_copy(update={"metadata": Metadata(timestamp=1)}) for e in read("r2")]
    assert outputs(plain, optimize(plain, changed))["r2"] == DISK_POINTER  # an unmasked one


# -- on the real sessions ---------------------------------------------------------------------

GEMINI = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "gemini"
DEV = next(GEMINI.rglob("checkpoint-dev.json"), None) if GEMINI.is_dir() else None


@pytest.mark.skipif(DEV is None, reason=f"no checkpoints under {GEMINI}")
def test_a_real_session_s_stale_reads_go_and_its_writes_stay() -> None:
    """checkpoint-dev.json: a Go project written with write_file and read back with
    read_file; every read that goes has a later whole view of its file."""
    assert DEV is not None
    conversation, _ = load(DEV.read_text(encoding="utf-8"))
    history = list(conversation.entries)
    config = dataclasses.replace(KEEP, workspace_root=conversation.workspace_root or "/")
    pruned = gone(history, optimize(history, config))
    calls = {b.id: b for e in history for b in e.blocks if isinstance(b, ToolCallBlock)}
    assert pruned
    assert {calls[c].name for c in pruned} <= {"read_file", "write_file"}
    order = list(calls)
    for cid in pruned:
        params = calls[cid].parameters
        assert isinstance(params, dict)
        later = [
            c
            for c in order[order.index(cid) + 1 :]
            if extract_path(calls[c].parameters) == extract_path(params)
            and (calls[c].name == "write_file" or calls[c].parameters == params)
        ]
        assert later, cid  # a whole write of the file, or the same whole read again
