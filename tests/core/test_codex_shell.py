"""Codex's reads and writes as the density rules see them: files are read through its three shell
tools (``shell``, ``shell_command``, ``exec_command``) and written with ``apply_patch``, as a
tool of its own or inside a shell call. The commands are the rollouts' own (shared/data/
transcripts/codex), through the importer, with the default tool lists."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from hdcontext.core.content import IContent, ToolCallBlock
from hdcontext.core.density.optimize import find_stale_reads, prune_stale_reads
from hdcontext.core.density.types import DensityConfig
from hdcontext.core.settings import DEFAULT_READ_TOOLS, DEFAULT_SHELL_TOOLS, DEFAULT_WRITE_TOOLS
from hdcontext.core.tools.shell.commands import exit_status, shell_effect

from .codex_records import (
    ROOT,
    Record,
    call,
    chunk,
    entries,
    envelope,
    headed,
    message,
    output,
    patch,
    patch_output,
    turn,
)

KEEP = DensityConfig(
    read_write_pruning=True,
    file_dedupe=False,
    workspace_root=ROOT,
    read_tools=frozenset(DEFAULT_READ_TOOLS),
    write_tools=frozenset(DEFAULT_WRITE_TOOLS),
    shell_tools=frozenset(DEFAULT_SHELL_TOOLS),
    keep_latest_view=True,
)
SEEDS = dataclasses.replace(KEEP, keep_latest_view=False)

ADDED = envelope("Success. Updated the following files:\nA README.md\n")
UPDATED = envelope("Success. Updated the following files:\nM README.md\n")


def read_with(tool: str, command: str, exit_code: int = 0) -> tuple[dict[str, Any], str]:
    """A call's arguments and its output, as each version's shell tool has them."""
    if tool == "shell":  # 0.34-0.58: an argv, a JSON envelope
        return {"command": ["bash", "-lc", command]}, envelope("# README", exit_code)
    if tool == "shell_command":  # 0.77: a string and a workdir, an Exit code header
        return {"command": command, "workdir": ROOT}, headed("# README", exit_code)
    # 0.98 on: cmd, a Chunk ID header
    args = {"cmd": command, "yield_time_ms": 1000, "max_output_tokens": 2000}
    return args, chunk("# README", exit_code)


def shell(call_id: str, tool: str, command: str, exit_code: int = 0) -> list[Record]:
    arguments, text = read_with(tool, command, exit_code)
    return [call(call_id, tool, arguments), output(call_id, text)]


def apply_patch(call_id: str, text: str, answer: str) -> list[Record]:
    return [patch(call_id, text), patch_output(call_id, answer)]


def indices(history: tuple[IContent, ...], *call_ids: str) -> frozenset[int]:
    """The entries holding these calls and their outputs."""
    found = frozenset(
        i
        for i, e in enumerate(history)
        for b in e.blocks
        if getattr(b, "id", getattr(b, "call_id", None)) in call_ids
    )
    assert len(found) == 2 * len(call_ids)  # each call's entry, and its output's
    return found


ADD_README = "*** Begin Patch\n*** Add File: README.md\n+# New README\n*** End Patch"
UPDATE_README = (
    "*** Begin Patch\n*** Update File: README.md\n@@\n-# README\n+# Readme\n*** End Patch"
)
TOOLS = ("shell", "shell_command", "exec_command")
# Real reads of the rollouts, one per form the shell rules read.
READS = (
    "sed -n '1,200p' README.md",  # Hoper-J (0.36), Quelklef (0.105)
    "cat README.md",  # Kooksun (0.55), Quelklef
    "nl -ba README.md | sed -n '1,220p'",  # Quelklef
    "head -n 40 README.md",
)


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("command", READS)
def test_a_read_goes_once_a_patch_adds_the_file_whole(tool: str, command: str) -> None:
    history = entries(
        turn(),
        *shell("r", tool, command),
        *apply_patch("w", ADD_README, ADDED),
        message("assistant", "done"),
    )
    assert prune_stale_reads(history, KEEP).removals == indices(history, "r")


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("command", READS)
def test_a_read_followed_only_by_an_update_stays_the_model_s_view(tool: str, command: str) -> None:
    history = entries(turn(), *shell("r", tool, command), *apply_patch("w", UPDATE_README, UPDATED))
    assert prune_stale_reads(history, KEEP).is_empty  # decision 11: the edit was not blind
    assert prune_stale_reads(history, SEEDS).removals == indices(history, "r")  # written after
    (stale,) = find_stale_reads(history, KEEP)
    assert (stale.call_id, stale.prunable) == ("r", False)


@pytest.mark.parametrize("tool", TOOLS)
def test_a_range_read_goes_once_the_whole_file_is_read_again(tool: str) -> None:
    history = entries(
        turn(),
        *shell("r1", tool, "sed -n '1,200p' README.md"),
        *apply_patch("w", UPDATE_README, UPDATED),
        *shell("r2", tool, "cat README.md"),
    )
    assert prune_stale_reads(history, KEEP).removals == indices(history, "r1")


@pytest.mark.parametrize("tool", TOOLS)
def test_a_failed_read_is_no_view_and_a_failed_write_no_write(tool: str) -> None:
    failed_read = entries(
        turn(),
        *shell("r", tool, "sed -n '1,200p' README.md"),
        *shell("bad", tool, "cat README.md", exit_code=1),
    )
    assert prune_stale_reads(failed_read, KEEP).is_empty
    failed_write = entries(
        turn(),
        *shell("r", tool, "cat README.md"),
        *shell("w", tool, "cat <<'EOF' > README.md\n# New\nEOF", exit_code=1),
    )
    assert prune_stale_reads(failed_write, KEEP).is_empty
    written = entries(
        turn(),
        *shell("r", tool, "cat README.md"),
        *shell("w", tool, "cat <<'EOF' > README.md\n# New\nEOF"),
    )
    assert prune_stale_reads(written, KEEP).removals == indices(written, "r")


def test_a_patch_that_did_not_apply_writes_nothing() -> None:
    history = entries(
        turn(),
        *shell("r", "shell_command", "cat README.md"),
        *apply_patch("w", ADD_README, "apply_patch verification failed: Failed to find lines"),
    )
    assert prune_stale_reads(history, KEEP).is_empty


def test_rg_is_a_search_not_a_view_of_the_file() -> None:
    history = entries(
        turn(),
        *shell("s", "exec_command", 'rg -n "global" README.md'),
        *apply_patch("w", ADD_README, ADDED),
    )
    assert prune_stale_reads(history, KEEP).is_empty
    assert find_stale_reads(history, KEEP) == []


# -- apply_patch inside a shell call (0.34-0.58) ----------------------------------------------

# Monotoba__OpenPrintKit (0.34), as the model wrote it.
HEREDOC = (
    "apply_patch << 'PATCH'\n*** Begin Patch\n*** Update File: README.md\n@@\n-## 🚀 Quickstart\n"
    "+## 🚀 Quickstart\n+\n+For a step-by-step guide with more detail, see `docs/quickstart.md`.\n"
    "*** End Patch\nPATCH"
)


def test_a_patch_in_a_here_document_is_a_write_of_its_files() -> None:
    history = entries(
        *shell("r", "shell", "sed -n '1,200p' README.md"),
        call("w", "shell", {"command": ["bash", "-lc", HEREDOC]}),
        output("w", UPDATED),
    )
    assert prune_stale_reads(history, KEEP).is_empty  # an update: the read stays
    assert prune_stale_reads(history, SEEDS).removals == indices(history, "r")
    added = HEREDOC.replace(
        "*** Update File: README.md\n@@\n-## 🚀 Quickstart\n", "*** Add File: README.md\n"
    )
    history = entries(
        *shell("r", "shell", "sed -n '1,200p' README.md"),
        call("w", "shell", {"command": ["bash", "-lc", added]}),
        output("w", ADDED),
    )
    assert prune_stale_reads(history, KEEP).removals == indices(history, "r")


def test_a_patch_as_apply_patch_s_one_argument_is_a_write_of_its_files() -> None:
    history = entries(
        *shell("r", "shell", "cat docs/a.md"),
        call(
            "w", "shell", {"command": ["apply_patch", ADD_README.replace("README.md", "docs/a.md")]}
        ),
        output("w", ADDED),
    )
    assert prune_stale_reads(history, KEEP).removals == indices(history, "r")


def test_a_patch_the_sandbox_refused_writes_nothing() -> None:
    refused = "failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error"
    history = entries(
        *shell("r", "shell", "cat README.md"),
        call("w", "shell", {"command": ["bash", "-lc", HEREDOC]}),
        output("w", refused),
    )
    assert prune_stale_reads(history, SEEDS).is_empty


def test_a_patch_s_paths_start_in_the_turn_s_cwd_a_shell_call_s_in_its_workdir() -> None:
    history = entries(
        turn(cwd=f"{ROOT}/pkg"),
        call("r", "shell_command", {"command": "cat README.md", "workdir": f"{ROOT}/pkg"}),
        output("r", headed("# README")),
        call("other", "shell_command", {"command": "cat README.md", "workdir": ROOT}),
        output("other", headed("# README")),
        *apply_patch("w", ADD_README, ADDED),
    )
    assert prune_stale_reads(history, KEEP).removals == indices(history, "r")


# -- what the rules read of each tool's output ------------------------------------------------


def test_the_exit_status_comes_from_each_tool_s_frame_not_from_what_was_printed() -> None:
    printed = "tests failed: exit code 1\nProcess exited with code 3\n"
    assert exit_status(envelope(printed, 0)) == 0
    assert exit_status(envelope("", 2)) == 2
    assert exit_status(headed(printed, 0)) == 0
    assert exit_status(headed("", 127)) == 127
    assert exit_status(chunk(printed, 0)) == 0
    assert exit_status(chunk("", 1)) == 1
    assert exit_status(chunk("", None)) is None  # still running: no status yet
    total = "Exit code: 0\nWall time: 0 seconds\nTotal output lines: 412\nOutput:\n..."
    assert exit_status(total) == 0
    assert exit_status("Exit code: 1 happened") == 1  # not a frame: read as before


def test_powershell_and_windows_paths_are_read_without_harm() -> None:
    workdir = "c:\\Users\\shahh\\OneDrive\\Desktop\\agentic-neurodata-conversion-2"
    powershell = ["powershell.exe", "-NoProfile", "-Command", "Get-Content -Raw '.codex/a.md'"]
    history = entries(
        turn(cwd=workdir),
        call("p", "shell", {"command": powershell, "workdir": workdir}),
        output("p", envelope("text")),
        call("c", "shell", {"command": ["bash", "-lc", "cat a.md"], "workdir": workdir}),
        output("c", envelope("text")),
        *apply_patch("w", ADD_README.replace("README.md", "a.md"), ADDED),
    )
    config = dataclasses.replace(KEEP, workspace_root=workdir)
    assert prune_stale_reads(history, config).removals == indices(history, "c")
    (stale,) = find_stale_reads(history, config)
    assert stale.paths == (workdir + "\\a.md",)
    assert shell_effect("Get-ChildItem | Select-Object -First 5; echo `n", workdir) is None


def test_every_shell_call_of_the_rollouts_is_read_without_error() -> None:
    history = entries(
        turn(),
        *(
            block
            for n, command in enumerate(
                [
                    "ls -la tests && echo '---' && sed -n '1,200p' tests/$(ls tests | head -n 1) "
                    "2>/dev/null || true",
                    "sed -n '1,999p' src/cpolar_connect/i18n.py | nl -ba | sed -n '1,260p'",
                    "rg -n \"dragHandle|selectable\" node_modules -g '!**/*.map' | head -n 80",
                ]
            )
            for block in shell(f"x{n}", "shell", command)
        ),
    )
    calls = [b for e in history for b in e.blocks if isinstance(b, ToolCallBlock)]
    assert len(calls) == 3
    assert find_stale_reads(history, KEEP) == []


# -- ranges of lines ------------------------------------------------------------------------

RANGES = [
    ("sed -n '1,200p' README.md", (1, 201)),
    ("nl -ba README.md | sed -n '200,400p'", (200, 401)),
    ("sed -n '260,999p' README.md | nl -ba | sed -n '1,5p'", (260, 265)),  # Hoper-J's form
    ("head -n 40 README.md", (1, 41)),
    ("cat README.md | head -20", (1, 21)),
    ("tail -n +30 README.md", (30, None)),
    ("sed -n '5p' README.md", (5, 6)),
]


@pytest.mark.parametrize(("command", "lines"), RANGES)
def test_a_range_read_shows_a_range_of_lines(command: str, lines: tuple[int, int | None]) -> None:
    effect = shell_effect(command, ROOT)
    assert effect is not None
    assert effect.line_ranges == ((f"{ROOT}/README.md", *lines),)


@pytest.mark.parametrize(
    "command",
    [
        "tail -n 20 README.md",
        "cat -s README.md | head",
        "grep -n x README.md",
        "head -c 99 README.md",
    ],
)
def test_lines_counted_from_the_end_or_changed_are_no_range(command: str) -> None:
    effect = shell_effect(command, ROOT)
    assert effect is None or effect.line_ranges == ()


@pytest.mark.parametrize("tool", TOOLS)
def test_a_range_read_goes_once_a_wider_range_is_read_again(tool: str) -> None:
    history = entries(
        turn(),
        *shell("narrow", tool, "nl -ba README.md | sed -n '1,220p'"),
        *shell("other", tool, "sed -n '200,400p' README.md"),
        *apply_patch("w", UPDATE_README, UPDATED),
        *shell("tail", tool, "tail -n 20 README.md"),
        *shell("wide", tool, "sed -n '1,300p' README.md"),
    )
    # The wide read holds the first; the second runs past it, and the tail counts from the end.
    assert prune_stale_reads(history, KEEP).removals == indices(history, "narrow")
