"""Duplicate ``@file`` inclusion dedup (REQ-HD-006)."""

from __future__ import annotations

from hdcontext.core.content import TextBlock
from hdcontext.core.density.inclusions import Inclusion, find_inclusions, omitted_note
from hdcontext.core.density.optimize import dedupe_file_inclusions

from .builders import ai_call, ai_text, human, inclusion, tool_result

NOTE_A = "[@src/a.py: earlier inclusion omitted, the file is included again later]"


def test_req_hd_006_1_finds_segments_between_whole_line_markers() -> None:
    text = "look\n--- src/a.py ---\nx = 1\n--- End of content ---\nthanks"
    start = text.index("---")
    end = text.index("thanks") - 1
    assert find_inclusions(text) == [Inclusion("src/a.py", start, end)]
    assert find_inclusions("a --- src/a.py --- b\n--- End of content --- x") == []


def test_req_hd_006_2_latest_inclusion_kept_earlier_replaced() -> None:
    first = human("please review\n" + inclusion("src/a.py", "old\nbody") + "\nand tell me")
    last = human("again\n" + inclusion("src/a.py", "new body"))
    history = [first, ai_text("ok"), last]
    edits = dedupe_file_inclusions(history, "/w")
    assert edits.removals == frozenset()
    assert edits.replacements == {0: human(f"please review\n{NOTE_A}\nand tell me")}
    assert edits.count == 1


def test_req_hd_006_2_every_earlier_inclusion_goes() -> None:
    history = [
        human(inclusion("src/a.py", "v1") + "\n" + inclusion("src/a.py", "v2")),
        human("x\n" + inclusion("src/a.py", "v3")),
        human(inclusion("src/a.py", "v4") + "\n" + inclusion("src/a.py", "v5")),
    ]
    edits = dedupe_file_inclusions(history, "/w")
    # The latest message keeps both of its own copies: only earlier messages lose theirs.
    assert edits.replacements == {0: human(f"{NOTE_A}\n{NOTE_A}"), 1: human(f"x\n{NOTE_A}")}


def test_req_hd_006_2_paths_compare_resolved() -> None:
    history = [
        human(inclusion("./src/a.py", "v1")),
        human(inclusion("/w/src/a.py", "v2")),
        human(inclusion("src/b.py", "b")),
    ]
    edits = dedupe_file_inclusions(history, "/w")
    assert edits.replacements == {0: human(omitted_note("./src/a.py"))}


def test_req_hd_006_2_different_files_are_kept() -> None:
    history = [human(inclusion("src/a.py", "a")), human(inclusion("src/A.py", "A"))]
    assert dedupe_file_inclusions(history, "/w").is_empty


def test_req_hd_006_3_rest_of_the_message_is_kept_exactly() -> None:
    text = "intro\r\n" + "--- src/a.py ---\r\nbody\r\n--- End of content ---\r\n" + "outro\n\n"
    other_block = "a second block"
    history = [human(text, other_block), human(inclusion("src/a.py", "new"))]
    edits = dedupe_file_inclusions(history, "/w")
    replaced = edits.replacements[0]
    assert replaced.blocks[0] == TextBlock(text=f"intro\r\n{NOTE_A}\r\noutro\n\n")
    assert replaced.blocks[1] is history[0].blocks[1]
    assert edits.removals == frozenset()


def test_req_hd_006_3_only_human_messages_are_touched() -> None:
    history = [
        ai_text(inclusion("src/a.py", "said by ai")),
        ai_call("r1", "read_file", {"file_path": "src/a.py"}),
        tool_result("r1", "read_file", inclusion("src/a.py", "tool output")),
        human(inclusion("src/a.py", "latest")),
    ]
    assert dedupe_file_inclusions(history, "/w").is_empty


def test_req_hd_006_5_unclosed_opening_leaves_the_block_alone() -> None:
    broken = human("--- src/a.py ---\nbody without end")
    history = [broken, human(inclusion("src/a.py", "new"))]
    assert find_inclusions(broken.blocks[0].text) is None  # type: ignore[union-attr]
    assert dedupe_file_inclusions(history, "/w").is_empty


def test_req_hd_006_5_any_bad_pairing_leaves_the_whole_block_alone() -> None:
    variants = [
        # a good segment followed by a stray closing
        inclusion("src/a.py", "v1") + "\n--- End of content ---",
        # an opening inside an open segment
        "--- src/a.py ---\n--- src/b.py ---\nbody\n--- End of content ---",
        # a closing before any opening
        "--- End of content ---\n" + inclusion("src/a.py", "v1"),
        # a good segment, then one never closed
        inclusion("src/a.py", "v1") + "\n--- src/b.py ---\nrest",
    ]
    for text in variants:
        history = [human(text), human(inclusion("src/a.py", "new"), inclusion("src/b.py", "b"))]
        assert find_inclusions(text) is None, text
        assert dedupe_file_inclusions(history, "/w").is_empty, text


def test_req_hd_006_5_a_malformed_block_does_not_spoil_its_neighbours() -> None:
    history = [
        human("--- src/a.py ---\nunclosed", inclusion("src/a.py", "v1")),
        human(inclusion("src/a.py", "v2")),
    ]
    edits = dedupe_file_inclusions(history, "/w")
    assert edits.replacements == {0: human("--- src/a.py ---\nunclosed", NOTE_A)}


def test_req_hd_006_5_a_malformed_latest_copy_is_not_a_later_inclusion() -> None:
    history = [human(inclusion("src/a.py", "v1")), human("--- src/a.py ---\nunclosed")]
    assert dedupe_file_inclusions(history, "/w").is_empty


def test_req_hd_006_5_unknown_header_format_is_left_alone() -> None:
    gemini_style = (
        "--- Content from referenced files ---\nContent from @a.py:\nx\n--- End of content ---"
    )
    history = [human(gemini_style), human(gemini_style)]
    assert find_inclusions(gemini_style) is None
    assert dedupe_file_inclusions(history, "/w").is_empty


def test_req_hd_006_2_the_note_is_not_a_marker_so_a_rerun_finds_nothing() -> None:
    history = [human(inclusion("src/a.py", "v1")), human(inclusion("src/a.py", "v2"))]
    once = dedupe_file_inclusions(history, "/w")
    applied = [once.replacements.get(i, e) for i, e in enumerate(history)]
    assert applied[0] == human(NOTE_A)
    assert find_inclusions(NOTE_A) == []
    assert dedupe_file_inclusions(applied, "/w").is_empty
