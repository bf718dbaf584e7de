"""A log cut short inside a multi-byte character is read up to the damage (issue 43, item 9).

An agent writes its log line by line; a crash mid-write can stop it inside a character. The
file is then not UTF-8 at its very end, and was refused whole. Now the cut character goes, its
line is cut JSON like any line a crash leaves, and everything before it imports.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hdcontext.cli.main import main
from hdcontext.formats.conversation import FormatError
from hdcontext.formats.importers import load
from hdcontext.formats.importers.jsonl import decode

TRANSCRIPTS = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts"
CLAUDE_LOG = TRANSCRIPTS / "claude-code" / "claude-code-log-sample-12a546d1.jsonl"
SMALL_LOG = (
    TRANSCRIPTS
    / "claude-code-log"
    / "-src-experiments-claude_p"
    / "29ccd257-68b1-427f-ae5f-6524b7cb6f20.jsonl"
)
GEMINI_LOG = next((TRANSCRIPTS / "gemini").rglob("chats/session-*.jsonl"), None)
needs_logs = pytest.mark.skipif(
    not (CLAUDE_LOG.exists() and SMALL_LOG.exists() and GEMINI_LOG is not None),
    reason=f"no transcripts at {TRANSCRIPTS}",
)


def _gemini_log() -> bytes:
    """The real Gemini CLI log, its backticks written as ’: it has no character beyond ASCII
    to cut inside, and they stand only inside its JSON strings."""
    assert GEMINI_LOG is not None
    return GEMINI_LOG.read_bytes().replace(b"`", "’".encode())


def _inside_characters(data: bytes) -> list[int]:
    """Every offset that falls inside a multi-byte character: a cut there splits it."""
    return [i for i in range(1, len(data)) if 0x80 <= data[i] < 0xC0]


# -- decode -----------------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["é", "€", "😀"])
def test_a_character_cut_at_the_end_is_left_out(char: str) -> None:
    whole = f'{{"a": "x{char}"}}\n{{"b": "{char}'.encode()
    for cut in range(1, len(char.encode())):
        data = whole[: len(whole) - len(char.encode()) + cut]
        assert decode(data) == f'{{"a": "x{char}"}}\n{{"b": "'


def test_bytes_that_are_not_utf8_elsewhere_still_refuse_the_file() -> None:
    with pytest.raises(UnicodeDecodeError):
        decode(b'{"a": "\xff"}\n{"b": 1}\n')
    with pytest.raises(UnicodeDecodeError):
        decode(b'{"a": "\xe2\x82"}\n')  # cut inside, but the file goes on after it
    assert decode("whole ✓".encode()) == "whole ✓"


# -- the command on a real log ----------------------------------------------------------------


@needs_logs
def test_a_real_claude_code_log_cut_mid_character_imports_up_to_its_last_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = CLAUDE_LOG.read_bytes()
    cut = next(i for i in _inside_characters(data) if i > len(data) // 2)
    damaged = tmp_path / CLAUDE_LOG.name
    damaged.write_bytes(data[:cut])
    last_line = data[:cut].count(b"\n") + 1
    assert main(["compact", str(damaged), "--json"]) == 0
    out, err = capsys.readouterr()
    assert out
    assert err.splitlines()[0].startswith(
        f"hdcontext: {CLAUDE_LOG.name}: skipped 1 of {last_line} lines ("
    )
    assert (
        f"that are not JSON records: line {last_line} (the first: line {last_line} is not JSON ("
        in err
    )
    assert "not UTF-8" not in err
    assert main(["compact", str(damaged), "--strict"]) == 2
    _, err = capsys.readouterr()
    assert f"line {last_line} is not JSON" in err and err.count("\n") == 1


@needs_logs
def test_a_real_gemini_cli_log_cut_mid_character_imports_up_to_its_last_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _gemini_log()
    cut = _inside_characters(data)[-1]
    damaged = tmp_path / "session.jsonl"
    damaged.write_bytes(data[:cut])
    last_line = data[:cut].count(b"\n") + 1
    assert main(["compact", str(damaged), "--json"]) == 0
    out, err = capsys.readouterr()
    assert err.startswith(f"hdcontext: session.jsonl: skipped 1 of {last_line} lines (")
    assert f"line {last_line} is not JSON" in err and err.count("\n") == 1
    assert json.loads(out)["history"]
    read, _ = load(decode(data[:cut]))
    whole, _ = load(data.decode())
    # The model's last answer was on the cut line, and the user's last words after it.
    assert read.entries == whole.entries[:-2]
    assert [e.speaker for e in whole.entries[-2:]] == ["ai", "human"]


# -- any prefix -------------------------------------------------------------------------------


def _entries_or_refusal(text: str) -> object:
    try:
        conversation, _ = load(text)
    except FormatError:
        return "refused"
    return conversation.entries


def _check_prefix(data: bytes, cut: int) -> None:
    """The prefix imports exactly what its whole lines import, and says which line it lost
    (nothing when the cut fell between lines, or just before a newline)."""
    prefix = data[:cut]
    whole_lines = prefix[: prefix.rfind(b"\n") + 1]
    cut_line = prefix[len(whole_lines) :]
    try:
        json.loads(cut_line)
    except ValueError:
        pass
    else:
        return  # the cut took only the newline: nothing was lost
    read = _entries_or_refusal(decode(prefix))
    assert read == _entries_or_refusal(whole_lines.decode())
    if cut_line.strip() and read != "refused":
        conversation, _ = load(decode(prefix))
        line = whole_lines.count(b"\n") + 1
        assert f"line {line} is not JSON" in conversation.warnings[0]


@needs_logs
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_any_prefix_of_a_real_log_imports_the_lines_before_the_cut(data: st.DataObject) -> None:
    log = data.draw(st.sampled_from([SMALL_LOG.read_bytes(), _gemini_log()]), label="log")
    inside = _inside_characters(log)
    cut = data.draw(
        st.one_of(st.sampled_from(inside), st.integers(min_value=0, max_value=len(log))),
        label="cut",
    )
    _check_prefix(log, cut)
