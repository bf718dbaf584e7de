"""The compression prompt (REQ-HD-010) and its user override."""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path

import pytest

from hdcontext.core.compression.prompts import COMPRESSION_PROMPT
from hdcontext.edges.daemon.prompt_file import load_compression_prompt

EXISTING = ("overall_goal", "key_knowledge", "current_progress", "active_tasks", "open_questions")
NEW = ("task_context", "user_directives", "errors_encountered", "code_references")


def _shipped() -> str:
    return (files("hdcontext.core.compression") / "compression.md").read_text(encoding="utf-8")


def test_req_hd_010_5_compression_md_equals_the_code_prompt() -> None:
    assert _shipped().removesuffix("\n") == COMPRESSION_PROMPT


@pytest.mark.parametrize("text", [COMPRESSION_PROMPT, _shipped()], ids=["code", "file"])
@pytest.mark.parametrize("tag", EXISTING + NEW)
def test_req_hd_010_all_nine_sections_inside_state_snapshot(text: str, tag: str) -> None:
    snapshot = re.search(r"<state_snapshot>(.*)</state_snapshot>", text, re.DOTALL)
    assert snapshot is not None
    body = snapshot.group(1)
    assert body.count(f"<{tag}>") == 1
    assert body.count(f"</{tag}>") == 1
    assert body.index(f"<{tag}>") < body.index(f"</{tag}>")


def test_req_hd_010_sections_in_order_new_after_existing() -> None:
    positions = [COMPRESSION_PROMPT.index(f"<{tag}>") for tag in EXISTING + NEW]
    assert positions == sorted(positions)


def test_req_hd_010_sections_are_guided_by_comments() -> None:
    for tag in EXISTING + NEW:
        body = COMPRESSION_PROMPT.split(f"<{tag}>")[1].split(f"</{tag}>")[0].strip()
        assert body.startswith("<!--") and body.endswith("-->"), tag


def test_req_hd_010_1_to_4_new_sections_say_what_to_capture() -> None:
    def section(tag: str) -> str:
        return COMPRESSION_PROMPT.split(f"<{tag}>")[1].split(f"</{tag}>")[0].lower()

    task = section("task_context")
    for phrase in ("why it exists", "user request", "constraints", "approach", "tried"):
        assert phrase in task
    directives = section("user_directives")
    for phrase in ("feedback", "corrections", "preferences", "exact words"):
        assert phrase in directives
    errors = section("errors_encountered")
    for phrase in ("exact error message", "root cause", "fix"):
        assert phrase in errors
    code = section("code_references")
    for phrase in ("snippets", "file paths", "signatures"):
        assert phrase in code


def test_prompt_framing_fits_both_llm_strategies() -> None:
    assert "part of the history given to you" in COMPRESSION_PROMPT
    assert "MIDDLE" not in COMPRESSION_PROMPT


def test_no_prompt_dir_gives_the_built_in_prompt() -> None:
    assert load_compression_prompt(None) == COMPRESSION_PROMPT


def test_user_prompt_dir_overrides(tmp_path: Path) -> None:
    (tmp_path / "compression.md").write_text("Summarize tersely, in <state_snapshot>.\n", "utf-8")
    assert load_compression_prompt(tmp_path) == "Summarize tersely, in <state_snapshot>.\n"


def test_missing_file_or_dir_falls_back(tmp_path: Path) -> None:
    assert load_compression_prompt(tmp_path) == COMPRESSION_PROMPT
    assert load_compression_prompt(tmp_path / "nope") == COMPRESSION_PROMPT


@pytest.mark.parametrize("content", [b"", b"  \n\t\n", b"\xff\xfe not utf-8 \x80"])
def test_blank_or_undecodable_file_falls_back(tmp_path: Path, content: bytes) -> None:
    (tmp_path / "compression.md").write_bytes(content)
    assert load_compression_prompt(tmp_path) == COMPRESSION_PROMPT


def test_unreadable_path_falls_back(tmp_path: Path) -> None:
    (tmp_path / "compression.md").mkdir()  # a directory where the file should be
    assert load_compression_prompt(tmp_path) == COMPRESSION_PROMPT
