"""Gemini CLI chat recordings (``chats/session-*.json`` and ``.jsonl``) to IContent.

The real recordings in shared/data/transcripts/gemini, each checked against its own raw data,
and the rules the real files do not all show (written as the CLI 0.61 writes them: a rewritten
history, results recorded twice, signatures on parts, ``/rewind``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hdcontext.core.content import (
    IContent,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from hdcontext.core.validity import problems
from hdcontext.formats.conversation import FormatError
from hdcontext.formats.exporters import export
from hdcontext.formats.importers import detect_format, load
from hdcontext.formats.importers.blocks import iso_ms

GEMINI = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "gemini"
RECORDINGS = sorted(GEMINI.rglob("chats/session-*.json*")) if GEMINI.is_dir() else []
JSONL = [p for p in RECORDINGS if p.suffix == ".jsonl"]
ROOTS = {"brexp__infra": "/home/eumathss", "agunginsani__expenses-tracker": "/Users/agunginsani"}

needs_recordings = pytest.mark.skipif(not RECORDINGS, reason=f"no recordings under {GEMINI}")


def _messages(path: Path) -> list[dict[str, Any]]:
    """The recording's messages, read here the simple way: the last line of each id, in the
    order ids first appear (the real files have no ``$set`` of messages, no rewind)."""
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        messages: list[dict[str, Any]] = json.loads(text)["messages"]
        return messages
    by_id: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        record = json.loads(line)
        if "id" in record:
            by_id[record["id"]] = record
    return list(by_id.values())


def _blocks(entries: tuple[IContent, ...], kind: type[Any]) -> list[Any]:
    return [b for e in entries for b in e.blocks if isinstance(b, kind)]


# -- the real recordings ----------------------------------------------------------------------


@needs_recordings
def test_the_corpus_holds_seven_json_recordings_and_one_jsonl() -> None:
    assert len(RECORDINGS) == 8 and len(JSONL) == 1


@needs_recordings
@pytest.mark.parametrize("path", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_each_recording_imports_its_messages_and_every_call_with_its_result(path: Path) -> None:
    messages = _messages(path)
    conversation, fmt = load(path.read_text(encoding="utf-8"))
    assert fmt == "gemini-cli"
    assert conversation.warnings == ()
    entries = conversation.entries
    assert problems(entries) == []
    model = [m for m in messages if m["type"] == "gemini" and (m["content"] or m.get("toolCalls"))]
    calls = [c for m in model for c in m.get("toolCalls") or []]
    speakers = [e.speaker for e in entries]
    assert speakers.count("human") == sum(m["type"] == "user" for m in messages)
    assert speakers.count("ai") == len(model)
    assert speakers.count("tool") == sum(bool(m.get("toolCalls")) for m in model)
    # Each ai entry is its message: same id, same time, its text, then its calls.
    ai = [e for e in entries if e.speaker == "ai"]
    for entry, message in zip(ai, model, strict=True):
        assert entry.metadata is not None
        assert entry.metadata.id == message["id"]
        assert entry.timestamp == iso_ms(message["timestamp"])
        texts = [b.text for b in entry.blocks if isinstance(b, TextBlock)]
        assert texts == ([message["content"]] if message["content"] else [])
        assert [(b.id, b.name, b.parameters) for b in _blocks((entry,), ToolCallBlock)] == [
            (c["id"], c["name"], c["args"]) for c in message.get("toolCalls") or []
        ]
    # Each call's result, output or error (a cancelled call's too), is what the record holds.
    answers = {b.call_id: b for b in _blocks(entries, ToolResponseBlock)}
    assert len(answers) == len(calls)
    for call in calls:
        (part,) = call["result"]
        response = part["functionResponse"]["response"]
        answer = answers[call["id"]]
        assert answer.tool_name == call["name"]
        assert (answer.result, answer.error) == (
            response.get("output", None if "error" in response else ""),
            response.get("error"),
        )
        if call["status"] == "cancelled":
            assert answer.error is not None
            assert answer.error.startswith("[Operation Cancelled] Reason: ")


@needs_recordings
@pytest.mark.parametrize("path", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_thought_summaries_and_info_messages_are_not_conversation(path: Path) -> None:
    messages = _messages(path)
    conversation, _ = load(path.read_text(encoding="utf-8"))
    assert _blocks(conversation.entries, ThinkingBlock) == []
    texts = {b.text for b in _blocks(conversation.entries, TextBlock)}
    for message in messages:
        if message["type"] == "info":
            assert message["content"] not in texts
        for thought in message.get("thoughts") or []:
            assert all(thought["description"] not in t for t in texts)


@needs_recordings
@pytest.mark.parametrize("path", RECORDINGS, ids=[p.name for p in RECORDINGS])
def test_the_workspace_root_is_the_project_whose_hash_the_recording_names(path: Path) -> None:
    conversation, _ = load(path.read_text(encoding="utf-8"))
    repo = path.relative_to(GEMINI).parts[0]
    assert conversation.workspace_root == ROOTS.get(repo)  # the jsonl names no path at all


@needs_recordings
@pytest.mark.parametrize("path", JSONL, ids=[p.name for p in JSONL])
def test_in_the_jsonl_the_last_line_of_an_id_wins_in_the_place_of_its_first(path: Path) -> None:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rewritten = [r["id"] for r in lines if "id" in r and r.get("toolCalls")]
    first_lines = {r["id"]: n for n, r in reversed(list(enumerate(lines))) if "id" in r}
    assert rewritten
    for mid in rewritten:  # written first without its calls, then again with them
        first, last = (r for r in lines if r.get("id") == mid)
        assert "toolCalls" not in first and "toolCalls" in last
    conversation, _ = load(path.read_text(encoding="utf-8"))
    ai = [e for e in conversation.entries if e.speaker == "ai"]
    order = sorted(first_lines, key=first_lines.__getitem__)
    gemini = [i for i in order if any(r.get("id") == i and r["type"] == "gemini" for r in lines)]
    assert [e.metadata.id for e in ai if e.metadata is not None] == gemini
    for entry in ai:
        assert entry.metadata is not None
        has_calls = bool(_blocks((entry,), ToolCallBlock))
        assert has_calls == (entry.metadata.id in rewritten)


@needs_recordings
def test_both_forms_are_detected_as_gemini_cli() -> None:
    for path in RECORDINGS:
        assert detect_format(path.read_text(encoding="utf-8")) == "gemini-cli"


# -- the rules, as the CLI 0.61 writes them ----------------------------------------------------

HEADER = {
    "sessionId": "s-1",
    "projectHash": "0" * 64,
    "startTime": "2026-12-07T15:14:34.553Z",
    "lastUpdated": "2026-12-07T15:14:34.553Z",
    "kind": "main",
}
SIGNATURE = "RkFLRVNJR3xzMC1mYzAtcmVhZHwV46pq+/=="


def _jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def _user(mid: str, text: str, at: str = "2026-12-07T15:14:35.000Z") -> dict[str, Any]:
    return {"id": mid, "timestamp": at, "type": "user", "content": [{"text": text}]}


def _answer(cid: str, name: str, output: str) -> dict[str, Any]:
    return {"functionResponse": {"id": cid, "name": name, "response": {"output": output}}}


def _call(cid: str, name: str, args: dict[str, Any], output: str) -> dict[str, Any]:
    return {
        "id": cid,
        "name": name,
        "args": args,
        "result": [_answer(cid, name, output)],
        "status": "success",
        "timestamp": "2026-12-07T15:14:36.500Z",
        "description": "a tool's whole manual " * 20,
        "resultDisplay": output,
    }


def _gemini(mid: str, content: Any, *calls: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": mid,
        "timestamp": "2026-12-07T15:14:36.000Z",
        "type": "gemini",
        "content": content,
        "thoughts": [{"subject": "Planning", "description": "secret plan", "timestamp": "t"}],
        "tokens": {"input": 1, "output": 1, "cached": 0, "thoughts": 1, "tool": 0, "total": 3},
        "model": "gemini-2.5-pro",
    }
    if calls:
        record["toolCalls"] = list(calls)
    return record


READ = _call("read_file_1_0", "read_file", {"file_path": "/ws/a.py"}, "print(1)\n")


def test_a_result_recorded_twice_is_imported_once() -> None:
    """0.61 writes the model's message, writes it again with its finished calls, then writes
    the results again as a user message: one call, one result."""
    text = _jsonl(
        HEADER,
        {"$set": {"messages": [_user("ctx", "<session_context>\nThis is the Gemini CLI.")]}},
        _user("u1", "read a.py"),
        {"$set": {"lastUpdated": "2026-12-07T15:14:35.001Z"}},
        _gemini("g1", "I'll read it."),
        _gemini("g1", "I'll read it.", READ),
        {"id": "u2", "timestamp": "t", "type": "user", "content": READ["result"]},
        _gemini("g2", "Done."),
    )
    conversation, fmt = load(text)
    assert fmt == "gemini-cli"
    assert [e.speaker for e in conversation.entries] == ["human", "human", "ai", "tool", "ai"]
    assert conversation.warnings == () and problems(conversation.entries) == []
    (answer,) = _blocks(conversation.entries, ToolResponseBlock)
    assert (answer.call_id, answer.result) == ("read_file_1_0", "print(1)\n")
    tool = conversation.entries[3]
    assert tool.metadata is not None
    assert (tool.metadata.id, tool.timestamp) == ("g1_response", iso_ms(READ["timestamp"]))


def test_a_rewritten_history_replaces_the_messages_and_keeps_its_signatures() -> None:
    """When the CLI masks old output or compresses, it writes its history again as ``$set``
    of ``messages``, each content as the parts it sends: signatures ride on them."""
    masked = "<tool_output_masked>\n{…}\n</tool_output_masked>"
    rewritten = [
        _user("u1", "read a.py"),
        {
            **_gemini(
                "g1",
                [
                    {"text": "**Planning** secret plan", "thought": True},
                    {"text": "I'll read it.", "thoughtSignature": SIGNATURE + "0"},
                    {
                        "functionCall": {"id": READ["id"], "name": "read_file", "args": {}},
                        "thoughtSignature": SIGNATURE,
                    },
                ],
            ),
        },
        {
            "id": "u2",
            "timestamp": "t",
            "type": "user",
            "content": [_answer(READ["id"], "read_file", masked)],
        },
    ]
    text = _jsonl(
        HEADER,
        _user("u1", "read a.py"),
        _gemini("g1", "I'll read it.", READ),
        {"$set": {"messages": rewritten, "lastUpdated": "x"}},
        _gemini("g2", "Done."),
    )
    conversation, _ = load(text)
    assert [e.speaker for e in conversation.entries] == ["human", "ai", "tool", "ai"]
    assert _blocks(conversation.entries, ThinkingBlock) == []  # the thought part left out
    (answer,) = _blocks(conversation.entries, ToolResponseBlock)
    assert answer.result == masked
    contents = export(conversation, "gemini").payload["contents"]  # type: ignore[index]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"text": "I'll read it.", "thoughtSignature": SIGNATURE + "0"},
            {
                "functionCall": {"name": "read_file", "id": READ["id"], "args": {}},
                "thoughtSignature": SIGNATURE,
            },
        ],
    }


def test_rewind_drops_the_message_and_everything_after_it() -> None:
    text = _jsonl(
        HEADER,
        _user("u1", "first"),
        _gemini("g1", "one"),
        _user("u2", "second"),
        _gemini("g2", "two"),
        {"$rewindTo": "u2"},
        _user("u3", "again"),
        _gemini("g3", "three"),
    )
    conversation, _ = load(text)
    assert [b.text for b in _blocks(conversation.entries, TextBlock)] == [
        "first",
        "one",
        "again",
        "three",
    ]


def test_the_json_form_and_a_header_holding_messages() -> None:
    whole = {**HEADER, "messages": [_user("u1", "hi"), _gemini("g1", "hello")]}
    for text in (json.dumps(whole, indent=2), _jsonl(whole)):
        conversation, fmt = load(text)
        assert fmt == "gemini-cli"
        assert [e.speaker for e in conversation.entries] == ["human", "ai"]


def test_a_call_whose_result_was_never_recorded_gets_the_error_result_that_says_so() -> None:
    pending = {**READ, "result": None, "status": "executing"}
    conversation, _ = load(_jsonl(HEADER, _user("u1", "go"), _gemini("g1", "", pending)))
    (answer,) = _blocks(conversation.entries, ToolResponseBlock)
    assert answer.error is not None and "no result was recorded" in answer.error
    assert problems(conversation.entries) == []


def test_records_of_no_known_kind_are_skipped_with_a_warning_naming_where_not_what() -> None:
    text = _jsonl(
        HEADER,
        _user("u1", "go"),
        {"what": "secret-unknown-record"},
        {"id": "m", "type": "secret-kind", "content": "secret text"},
        _gemini("g1", "ok", READ, {"name": 7, "args": {"x": "secret args"}}),
    )
    text += '{"id": "cut", "type": "gemini", "content": "secret cut\n'
    conversation, _ = load(text)
    assert [e.speaker for e in conversation.entries] == ["human", "ai", "tool"]
    assert conversation.warnings == (
        "skipped 1 of 6 lines (3.5% of the file's bytes) that are not JSON records: line 6 "
        "(the first: line 6 is not JSON (Unterminated string starting at: line 1 column 44 "
        "(char 43)))",
        "skipped 2 record(s) that are not Gemini CLI messages or metadata: line 3, line 4",
        "skipped the tool calls without a name in 1 message(s): line 5",
    )
    assert not any("secret" in w for w in conversation.warnings)
    assert conversation.incomplete is not None
    with pytest.raises(FormatError, match=r"^line 3 is not a Gemini CLI record of a known kind$"):
        load(text.rsplit("\n", 2)[0] + "\n", strict=True)


def test_a_recording_without_conversation_is_refused_in_one_line() -> None:
    text = _jsonl(HEADER, {"id": "i", "timestamp": "t", "type": "info", "content": "hi"})
    with pytest.raises(FormatError) as refused:
        load(text)
    assert str(refused.value) == (
        "a Gemini CLI chat recording with no conversation in it (only info messages)"
    )
    with pytest.raises(FormatError, match=r"no conversation in it \(no messages\)"):
        load(_jsonl(HEADER))


def test_the_root_from_the_preamble_when_no_path_hashes_to_the_project() -> None:
    preamble = (
        "<session_context>\nThis is the Gemini CLI.\n- **Workspace Directories:**\n"
        "  - /home/dev/proj\n- **Directory Structure:**\n"
    )
    conversation, _ = load(_jsonl(HEADER, _user("c", preamble), _gemini("g", "hi")))
    assert conversation.workspace_root == "/home/dev/proj"


# -- bad input never crashes ------------------------------------------------------------------

_KEYS = st.sampled_from(
    [
        *("id", "name", "args", "result", "functionResponse", "functionCall", "response"),
        *("output", "error", "text", "thought", "thoughtSignature", "inlineData", "content"),
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=5) | st.just("read_file"),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=12,
)
_MESSAGE = st.fixed_dictionaries(
    {"id": st.sampled_from(["a", "b", "c"]), "type": st.sampled_from(["user", "gemini", "info"])},
    optional={"content": _JSON, "toolCalls": _JSON, "timestamp": _JSON, "thoughts": _JSON},
)
_RECORD = st.one_of(
    _MESSAGE,
    st.fixed_dictionaries({"$set": st.fixed_dictionaries({}, optional={"messages": _JSON})}),
    st.fixed_dictionaries({"$rewindTo": st.sampled_from(["a", "b", "z"])}),
    _JSON,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_RECORD, max_size=6), st.booleans())
@example(  # a result whose call the recording does not hold: left out, as the CLI would
    [{"id": "a", "type": "user"}, {"id": "a", "type": "user", "content": {"functionResponse": {}}}],
    False,
)
def test_any_shape_of_record_imports_or_is_refused_never_crashes(
    records: list[Any], whole: bool
) -> None:
    header = {"sessionId": "s", "projectHash": "0" * 64}
    if whole:
        text = json.dumps({**header, "messages": records})
    else:
        text = _jsonl(header, *({"value": r} if not isinstance(r, dict) else r for r in records))
    try:
        conversation, _ = load(text)
    except FormatError:
        return
    assert problems(conversation.entries) == []
