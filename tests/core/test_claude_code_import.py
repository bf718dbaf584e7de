"""The Claude Code importer on logs as Claude Code writes them: how a log opens, bad lines,
sub-agent threads, parallel calls whose results are written between the records of one
message, and sessions recorded on Windows."""

from __future__ import annotations

import json

import pytest

from hdcontext.core.content import ToolCallBlock, ToolResponseBlock
from hdcontext.core.session.session import Session
from hdcontext.core.validity import problems
from hdcontext.formats.conversation import FormatError
from hdcontext.formats.importers import detect_format, load, load_threads

from .claude_code_records import (
    PERMISSION_MODE,
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
from .seeds import seeds


def layout(text_: str, **kw: str) -> list[tuple[str, list[str]]]:
    conversation, _ = load(text_, **kw)  # type: ignore[arg-type]
    out = []
    for entry in conversation.entries:
        items = []
        for b in entry.blocks:
            if isinstance(b, ToolCallBlock):
                items.append(f"call {b.id}")
            elif isinstance(b, ToolResponseBlock):
                items.append(f"result {b.call_id}")
            else:
                items.append(b.type)
        out.append((entry.speaker, items))
    return out


@pytest.mark.parametrize(
    "opening",
    [[SUMMARY], [SNAPSHOT], [PERMISSION_MODE], [SUMMARY, SUMMARY, SNAPSHOT], []],
    ids=["summary", "file-history-snapshot", "permission-mode", "several", "none"],
)
def test_a_log_is_detected_whatever_records_open_it(opening: list[dict[str, object]]) -> None:
    log = jsonl([*opening, *session()])
    assert detect_format(log) == "claude-code"
    conversation, fmt = load(log)
    assert fmt == "claude-code"
    assert [e.speaker for e in conversation.entries] == ["human", "ai", "tool", "ai", "tool", "ai"]
    assert conversation.workspace_root == "/w/proj"
    assert conversation.warnings == ()


def test_a_log_of_one_record_is_a_log() -> None:
    log = jsonl([assistant("m-1", text("Ready."), sidechain=True, agent="a1")])
    assert detect_format(log) == "claude-code"
    assert layout(log) == [("ai", ["text"])]


def test_bad_lines_are_skipped_with_one_warning_that_counts_and_names_them() -> None:
    records = session()
    cut = '{"type": "assistant", "cut sho'
    log = jsonl([records[0], cut, *records[1:], "[1, 2]"])
    assert detect_format(log) == "claude-code"
    conversation, _ = load(log)
    assert len(conversation.entries) == 6
    share = (len(cut) + 1 + len("[1, 2]") + 1) / len(log.encode())
    lines = f"2 of {len(records) + 2} lines ({share:.1%} of the file's bytes)"
    assert conversation.incomplete == lines
    (warning,) = conversation.warnings
    assert warning.startswith(
        f"skipped {lines} that are not JSON records: lines 2, 8 (the first: line 2 is not JSON ("
    )
    with pytest.raises(FormatError, match=r"^line 2 is not JSON"):
        load(log, strict=True)
    whole, _ = load(jsonl(records))
    assert whole.incomplete is None and whole.warnings == ()


def test_a_log_damaged_throughout_gives_one_warning_with_the_share_it_lost() -> None:
    """As a redaction tool leaves a log: most lines cut short. One warning, not one a line:
    how many, what share of the bytes, the first five line numbers."""
    records = [*session(), *session()]
    lines = [json.dumps(r) for r in records]
    damaged = [line[: len(line) // 3] if n % 4 else line for n, line in enumerate(lines)]
    log = "".join(line + "\n" for line in damaged)
    conversation, _ = load(log)
    bad = [n + 1 for n in range(len(lines)) if n % 4]
    warning, *others = conversation.warnings
    assert not any("not JSON" in w for w in others), others  # the results left without calls
    share = sum(len(damaged[n - 1]) + 1 for n in bad) / len(log.encode())
    assert warning.startswith(
        f"skipped {len(bad)} of {len(lines)} lines ({share:.0%} of the file's bytes) that are "
        f"not JSON records: lines {', '.join(map(str, bad[:5]))}, … (the first: line 2 is not "
        "JSON ("
    )
    assert share > 0.5  # most of what is left of the file is what was lost
    with pytest.raises(FormatError, match=r"^line 2 is not JSON"):
        load(log, strict=True)


def test_a_result_whose_call_was_on_a_lost_line_is_dropped_with_one_warning() -> None:
    records = session()
    cut = json.dumps(records[1])[:60]  # the read's call, cut short by a redaction tool
    log = jsonl([records[0], cut, *records[2:], results("gone")])
    conversation, _ = load(log)
    assert layout(log) == [
        ("human", ["text"]),
        ("ai", ["call e1"]),
        ("tool", ["result e1"]),
        ("ai", ["text"]),
    ]
    assert problems(conversation.entries) == []
    assert conversation.warnings[1:] == (
        "dropped 2 tool result(s) whose call is not in the log, most likely on a line that "
        "could not be read (r1, gone)",
    )
    with pytest.raises(FormatError, match=r"^line 2 is not JSON"):
        load(log, strict=True)
    # Every thread answers for its own results; the warning goes with the thread.
    agent = [
        user("find x", sidechain=True, agent="a"),
        results("gone", sidechain=True, agent="a"),
        assistant("m-a", text("found"), sidechain=True, agent="a"),
    ]
    threads, _ = load_threads(jsonl([*session(), cut, *agent]))
    assert [t for t, _ in threads] == ["main", "a"]
    assert threads[1][1].warnings == (
        "dropped 1 tool result(s) whose call is not in the log, most likely on a line that "
        "could not be read (gone)",
    )


def test_a_result_without_its_call_in_a_whole_log_is_kept_for_the_refusal() -> None:
    """No line was lost: nothing says where the call went, so the importer does not guess."""
    conversation, _ = load(jsonl([*session(), results("elsewhere")]))
    assert conversation.warnings == ()
    assert [(p.kind, p.key) for p in problems(conversation.entries)] == [
        ("orphan_response", "elsewhere")
    ]


def test_a_first_line_that_is_not_json_does_not_hide_the_format() -> None:
    log = jsonl(["garbage", *session()])
    assert detect_format(log) == "claude-code"
    (warning,) = load(log)[0].warnings
    assert warning.startswith("skipped 1 of ")
    assert "lines (" in warning and ": line 1 (the first: line 1 is not JSON (" in warning


def test_text_that_is_not_a_log_is_still_invalid_json() -> None:
    with pytest.raises(FormatError, match="invalid JSON"):
        detect_format("not json\nat all\n")
    with pytest.raises(FormatError, match="invalid JSON"):
        detect_format(jsonl([{"type": "user"}, {"hello": 1}]))  # no record says Claude Code


def agent_thread(agent: str, question: str = "find x") -> list[dict[str, object]]:
    return [
        user(question, sidechain=True, agent=agent),
        assistant(f"m-{agent}", tool_use(f"g-{agent}", "Grep"), sidechain=True, agent=agent),
        results(f"g-{agent}", sidechain=True, agent=agent),
        assistant(f"n-{agent}", text("found"), sidechain=True, agent=agent),
    ]


def test_a_sub_agent_file_is_read_as_that_agent_s_conversation() -> None:
    log = jsonl(agent_thread("a1b2"))
    assert layout(log) == [
        ("human", ["text"]),
        ("ai", ["call g-a1b2"]),
        ("tool", ["result g-a1b2"]),
        ("ai", ["text"]),
    ]
    assert layout(log, thread="a1b2") == layout(log)
    with pytest.raises(FormatError, match=r"no thread 'main' in this log \(threads: a1b2\)"):
        load(log, thread="main")


def test_several_sub_agent_threads_without_a_main_one_need_a_choice() -> None:
    log = jsonl([*agent_thread("a1"), *agent_thread("b2", "find y")])
    with pytest.raises(FormatError) as error:
        load(log)
    assert str(error.value) == (
        "no main thread, and 2 sub-agent threads (a1, b2): choose one with --thread ID, "
        "or --thread all"
    )
    assert layout(log, thread="b2")[0] == ("human", ["text"])
    threads, _ = load_threads(log)
    assert [name for name, _ in threads] == ["a1", "b2"]
    assert all(problems(c.entries) == [] for _, c in threads)


def test_the_main_thread_is_read_and_the_sub_agents_are_named() -> None:
    main = session()
    log = jsonl([*main[:3], *agent_thread("a1"), *main[3:]])
    with pytest.raises(FormatError) as missing:
        load(jsonl(main), thread="a1")
    assert str(missing.value) == (
        "no thread 'a1' in this log (threads: main). Newer Claude Code versions write a "
        "sub-agent's thread to its own file, <session>/subagents/agent-<id>.jsonl: read that one"
    )
    conversation, _ = load(log)
    assert len(conversation.entries) == 6
    assert conversation.warnings == (
        "read the main thread; the file also holds 1 sub-agent thread(s) (a1): "
        "--thread ID reads one",
    )
    threads, _ = load_threads(log)
    assert [(name, len(c.entries)) for name, c in threads] == [("main", 6), ("a1", 4)]


def test_a_thread_of_command_noise_is_an_error_not_an_empty_history() -> None:
    log = jsonl([user("<command-name>/clear</command-name>", isMeta=True)] * 2)
    with pytest.raises(FormatError, match="thread 'main' has 2 user/assistant records, none"):
        load(log)


def test_a_log_without_messages_says_what_it_holds() -> None:
    with pytest.raises(FormatError) as error:
        load(jsonl([SUMMARY, SNAPSHOT, SNAPSHOT]))
    assert str(error.value).endswith("(1 summary record, 2 file-history-snapshot records)")


def test_one_model_message_written_around_its_results_is_one_entry() -> None:
    """Claude Code writes each block of a message as a record, and the results of the first
    parallel calls before the records of the next: it is still one message."""
    log = jsonl(
        [
            user("look"),
            assistant("m-1", text("Looking.")),
            assistant("m-1", tool_use("A")),
            results("A"),
            assistant("m-1", tool_use("B")),
            results("B"),
            assistant("m-1", tool_use("C")),
            results("C"),
            assistant("m-2", text("Done.")),
        ]
    )
    assert layout(log) == [
        ("human", ["text"]),
        ("ai", ["text", "call A", "call B", "call C"]),
        ("tool", ["result A", "result B", "result C"]),
        ("ai", ["text"]),
    ]
    assert load(log)[0].warnings == ()


def test_results_written_after_the_next_message_are_moved_next_to_their_calls() -> None:
    """assistant[A,B] → result A → assistant[C] → results B, C (the issue's sessions)."""
    log = jsonl(
        [
            user("look"),
            assistant("m-1", tool_use("A"), tool_use("B")),
            results("A"),
            assistant("m-2", tool_use("C")),
            results("B", "C"),
        ]
    )
    assert layout(log) == [
        ("human", ["text"]),
        ("ai", ["call A", "call B"]),
        ("tool", ["result A", "result B"]),
        ("ai", ["call C"]),
        ("tool", ["result C"]),
    ]
    conversation, _ = load(log)
    assert conversation.warnings == ("moved 1 tool result(s) next to the call they answer",)
    assert problems(conversation.entries) == []


WINDOWS = "C:\\Users\\dev\\proj"


def test_a_windows_session_keeps_its_root_as_a_windows_path() -> None:
    conversation, _ = load(jsonl(session(cwd=WINDOWS)))
    assert conversation.workspace_root == WINDOWS
    first_ai = conversation.entries[1]
    assert first_ai.metadata is not None
    assert (first_ai.metadata.model_extra or {})["cwd"] == WINDOWS


async def test_a_windows_session_prunes_the_read_its_edit_made_stale() -> None:
    records = session(cwd=WINDOWS)
    records[3] = assistant(
        "m-2",
        tool_use("e1", "Edit", file_path=WINDOWS + "\\a.py", old_string="x"),
        cwd=WINDOWS,
    )
    conversation, _ = load(jsonl(records))
    assert conversation.workspace_root is not None
    store = seeds(Session("win", workspace_root=lambda: conversation.workspace_root or ""))
    store.append(conversation.entries)
    result = await store.compact()
    calls = [b.id for e in result.history for b in e.blocks if isinstance(b, ToolCallBlock)]
    assert calls == ["e1"]  # the relative read of a.py resolved to C:\Users\dev\proj\a.py
