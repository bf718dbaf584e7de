"""Shell reads and writes in READ → WRITE pruning: they take part like read and write tools."""

from __future__ import annotations

import json
from typing import Any

from pydantic import JsonValue

from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.content import IContent, Metadata, ToolCallBlock
from hdcontext.core.density.edits import PassEdits
from hdcontext.core.density.optimize import find_stale_reads, prune_stale_reads
from hdcontext.core.density.types import DensityConfig, FileWrite
from hdcontext.core.session.session import Session
from hdcontext.formats.importers import mini_swe_agent

from .builders import ai_call, tool_result
from .seeds import seeds

SHELL = frozenset({"bash", "run_shell_command"})


def config(
    root: str = "/w", external: tuple[FileWrite, ...] = (), shell: frozenset[str] = SHELL
) -> DensityConfig:
    return DensityConfig(
        workspace_root=root,
        read_tools=frozenset({"read_file"}),
        write_tools=frozenset({"write_file"}),
        shell_tools=shell,
        external_writes=external,
    )


def sh(
    call_id: str,
    command: str,
    output: JsonValue = "<returncode>0</returncode>\n<output>\n</output>",
    error: str | None = None,
    tool: str = "bash",
    ts: int | None = None,
    **params: Any,
) -> list[IContent]:
    parameters: JsonValue = {"command": command, **params}
    return [ai_call(call_id, tool, parameters, ts=ts), tool_result(call_id, tool, output, error)]


def removed(*indices: int) -> PassEdits:
    return PassEdits(frozenset(indices), {})


def test_a_cat_then_a_sed_i_on_the_same_file_prunes_the_cat() -> None:
    history = [*sh("r", "cat src/a.py"), *sh("w", "sed -i 's/x/y/' src/a.py")]
    assert prune_stale_reads(history, config()) == removed(0, 1)


def test_without_shell_tools_configured_nothing_is_recognised() -> None:
    history = [*sh("r", "cat src/a.py"), *sh("w", "sed -i 's/x/y/' src/a.py")]
    assert prune_stale_reads(history, config(shell=frozenset())).is_empty


def test_a_shell_write_makes_a_read_file_stale() -> None:
    history = [
        ai_call("r", "read_file", {"file_path": "/w/a.py"}),
        tool_result("r", "read_file", "A"),
        *sh("w", "cat > a.py << 'EOF'\nnew\nEOF"),
    ]
    assert prune_stale_reads(history, config()) == removed(0, 1)


def test_a_write_tool_makes_a_shell_read_stale() -> None:
    history = [
        *sh("r", "nl -ba a.py | sed -n '1,20p'"),
        ai_call("w", "write_file", {"file_path": "/w/a.py"}),
        tool_result("w", "write_file", "ok"),
    ]
    assert prune_stale_reads(history, config()) == removed(0, 1)


def test_a_disk_write_makes_a_shell_read_stale() -> None:
    history = sh("r", "head -n 5 a.py", ts=100)
    assert prune_stale_reads(history, config(external=(FileWrite("/w/a.py", 200),))) == removed(
        0, 1
    )


def test_a_shell_read_after_the_write_is_kept() -> None:
    history = [*sh("w", "sed -i s/a/b/ a.py"), *sh("r", "cat a.py")]
    assert prune_stale_reads(history, config()).is_empty


def test_a_shell_write_that_failed_does_not_count() -> None:
    failing = [
        *sh("r", "cat a.py"),
        *sh(
            "w", "sed -i s/a/b/ a.py", "<returncode>1</returncode>\n<output>\nsed: error\n</output>"
        ),
    ]
    errored = [*sh("r", "cat a.py"), *sh("w", "sed -i s/a/b/ a.py", error="command failed")]
    gemini_style = [
        *sh("r", "cat a.py", tool="run_shell_command"),
        *sh("w", "sed -i s/a/b/ a.py", "Exit Code: 2", tool="run_shell_command"),
    ]
    unanswered = [*sh("r", "cat a.py"), ai_call("w", "bash", {"command": "sed -i s/a/b/ a.py"})]
    for history in (failing, errored, gemini_style, unanswered):
        assert prune_stale_reads(history, config()).is_empty


def test_a_shell_read_that_did_more_than_read_is_kept_but_reported() -> None:
    history = [*sh("r", "cat a.py && python a.py"), *sh("w", "sed -i s/a/b/ a.py")]
    assert prune_stale_reads(history, config()).is_empty
    (found,) = find_stale_reads(history, config())
    assert (found.call_id, found.stale, found.prunable) == ("r", ("/w/a.py",), False)


def test_a_shell_read_of_several_files_goes_only_when_all_are_stale() -> None:
    history = [*sh("r", "cat a.py b.py"), *sh("w", "sed -i s/a/b/ a.py")]
    assert prune_stale_reads(history, config()).is_empty
    (found,) = find_stale_reads(history, config())
    assert found.paths == ("/w/a.py", "/w/b.py") and found.stale == ("/w/a.py",)
    history += sh("w2", "echo > b.py")
    assert prune_stale_reads(history, config()) == removed(0, 1)


def test_cd_prefixes_and_absolute_paths_meet_on_the_same_file() -> None:
    history = [
        *sh("r", "cd /testbed && cat src/a.py"),
        *sh("w", "sed -i s/a/b/ /testbed/src/a.py"),
    ]
    assert prune_stale_reads(history, config(root="/elsewhere")) == removed(0, 1)


def test_a_cwd_parameter_resolves_the_shell_paths() -> None:
    history = [
        *sh("r", "cat a.py", tool="run_shell_command", directory="pkg"),
        ai_call("w", "write_file", {"file_path": "/w/pkg/a.py"}),
        tool_result("w", "write_file", "ok"),
    ]
    assert prune_stale_reads(history, config()) == removed(0, 1)


def test_the_entry_cwd_of_a_persistent_shell_resolves_the_shell_paths() -> None:
    read = sh("r", "cat a.py", "x")
    meta = Metadata.model_validate({"cwd": "/w/pkg"})
    history = [
        read[0].model_copy(update={"metadata": meta}),
        read[1],
        ai_call("w", "write_file", {"file_path": "/w/pkg/a.py"}),
        tool_result("w", "write_file", "ok"),
    ]
    assert prune_stale_reads(history, config()) == removed(0, 1)
    assert prune_stale_reads([read[0], *history[1:]], config()).is_empty


def test_after_a_cd_elsewhere_a_relative_write_is_not_trusted() -> None:
    # In a shell that keeps its directory the sed ran in /w/sub: a.py there, not /w/a.py.
    history = [*sh("r", "cat a.py"), *sh("c", "cd sub && ls"), *sh("w", "sed -i s/a/b/ a.py")]
    assert prune_stale_reads(history, config()).is_empty


def test_a_repeated_shell_call_id_is_ambiguous() -> None:
    history = [*sh("r", "cat a.py"), *sh("w", "sed -i s/a/b/ a.py"), *sh("w", "ls")]
    assert prune_stale_reads(history, config()).is_empty


def test_ambiguous_commands_neither_read_nor_write() -> None:
    history = [
        *sh("r1", "cat $F"),
        *sh("r2", "cat *.py"),
        *sh("r3", "cat a.py | python"),
        *sh("w", "sed -i s/a/b/ a.py"),
        *sh("r4", "cat a.py"),
        *sh("w2", "sed -i s/x/y/ $(git ls-files)"),
        *sh("w3", "sed -i s/x/y/ a.py || true"),
    ]
    assert prune_stale_reads(history, config()).is_empty


# -- end to end, on a mini-swe-agent trajectory ------------------------------------------


def _traj_message(role: str, content: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": content, **extra}


def _action(call_id: str, command: str) -> dict[str, Any]:
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }
    return _traj_message("assistant", "THOUGHT", tool_calls=[call])


def _observation(call_id: str, output: str, code: int = 0) -> dict[str, Any]:
    content = f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"
    return _traj_message("tool", content, tool_call_id=call_id)


def trajectory() -> dict[str, Any]:
    return {
        "trajectory_format": "mini-swe-agent-1.1",
        "info": {"config": {"environment": {"cwd": "/testbed"}}},
        "messages": [
            _traj_message("system", "You are a helpful assistant."),
            _traj_message("user", "<pr_description>fix it</pr_description>"),
            _action("c1", "cat src/m.py"),
            _observation("c1", "def f():\n    return 1\n" * 50),
            _action("c2", "sed -i 's/return 1/return 2/' src/m.py"),
            _observation("c2", ""),
            _action("c3", "cd /testbed && sed -n 1,5p src/m.py"),
            _observation("c3", "def f():\n    return 2"),
            _action("c4", "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"),
            _traj_message("exit", "diff --git ..."),
        ],
    }


async def test_mini_swe_agent_cat_followed_by_sed_i_is_pruned_end_to_end() -> None:
    conversation = mini_swe_agent.load(trajectory())
    assert conversation.workspace_root == "/testbed"
    session = seeds(Session("e2e", workspace_root=lambda: conversation.workspace_root or ""))
    session.append(conversation.entries)
    result = await session.compact()

    kept = {b.id for e in result.history for b in e.blocks if isinstance(b, ToolCallBlock)}
    assert kept == {"c2", "c3", "c4"}  # the cat before the sed -i went; the later read stays
    assert result.density is not None
    assert result.density.metadata.read_write_pairs_pruned == 2
    assert result.density.tokens_after < result.density.tokens_before
    assert pairing_problems(result.history) == pairing_problems(conversation.entries)


async def test_keeping_the_latest_view_the_cat_stays_when_only_a_part_was_read_since() -> None:
    conversation = mini_swe_agent.load(trajectory())
    session = Session("e2e", workspace_root=lambda: conversation.workspace_root or "")
    session.append(conversation.entries)
    result = await session.compact()
    kept = {b.id for e in result.history for b in e.blocks if isinstance(b, ToolCallBlock)}
    assert kept == {"c1", "c2", "c3", "c4"}  # sed -n shows lines 1-5: the cat is the only view


async def test_shell_pruning_follows_the_tools_shell_setting() -> None:
    conversation = mini_swe_agent.load(trajectory())
    session = Session("e2e", workspace_root=lambda: "/testbed")
    session.set_override("tools.shell", ["run_shell_command"])  # bash is no longer a shell
    session.append(conversation.entries)
    result = await session.compact()
    kept = {b.id for e in result.history for b in e.blocks if isinstance(b, ToolCallBlock)}
    assert kept == {"c1", "c2", "c3", "c4"}
