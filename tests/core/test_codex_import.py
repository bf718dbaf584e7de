"""The Codex rollout importer (formats/importers/codex_rollout.py) on the real rollouts in
shared/data/transcripts/codex and on records built as the CLI writes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hdcontext.core.content import (
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from hdcontext.core.validity import problems
from hdcontext.formats.conversation import FormatError, entry_role
from hdcontext.formats.importers import detect_format, load

from .codex_records import (
    ROOT,
    call,
    chunk,
    context,
    entries,
    envelope,
    event,
    headed,
    item,
    jsonl,
    message,
    meta,
    output,
    patch,
    patch_output,
    reasoning,
    rollout,
    turn,
)

CODEX = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "codex"
ROLLOUTS = sorted(CODEX.rglob("rollout-*.jsonl")) if CODEX.is_dir() else []
STUB = "rollout-2025-09-26T19-45-48-01998661-4e27-7361-8e06-bfcb0e30048d.jsonl"
IMPORTED = [p for p in ROLLOUTS if p.name != STUB]
needs_rollouts = pytest.mark.skipif(not ROLLOUTS, reason=f"no rollouts at {CODEX}")


def _records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _after_compaction(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The response items a conversation is made of: those after the last compacted record,
    that record's replacement history first (as Codex rebuilds it)."""
    items: list[dict[str, Any]] = []
    for record in records:
        if record["type"] == "compacted":
            items = list(record["payload"]["replacement_history"])
        elif record["type"] == "response_item":
            items.append(record["payload"])
    return items


def _blocks(conversation_entries: tuple[IContent, ...], kind: type[Any]) -> list[Any]:
    return [b for e in conversation_entries for b in e.blocks if isinstance(b, kind)]


# -- the real rollouts ------------------------------------------------------------------------


@needs_rollouts
@pytest.mark.parametrize("path", IMPORTED, ids=[p.name[8:27] for p in IMPORTED])
def test_every_call_is_paired_with_its_output_and_every_reasoning_kept_byte_for_byte(
    path: Path,
) -> None:
    conversation, fmt = load(path.read_text(encoding="utf-8"))
    assert fmt == "codex"
    assert problems(conversation.entries) == []
    items = _after_compaction(_records(path))
    calls = [i for i in items if i["type"] in ("function_call", "custom_tool_call")]
    outputs = {i["call_id"]: i["output"] for i in items if i["type"].endswith("_call_output")}
    made = _blocks(conversation.entries, ToolCallBlock)
    assert [c.id for c in made] == [i["call_id"] for i in calls]
    assert [c.name for c in made] == [i["name"] for i in calls]
    for block, raw in zip(made, calls, strict=True):
        if raw["type"] == "function_call":
            assert block.parameters == json.loads(raw["arguments"])
        else:
            assert block.parameters == {"input": raw["input"]}
    answers = {r.call_id: r for r in _blocks(conversation.entries, ToolResponseBlock)}
    assert set(answers) == {c.id for c in made}
    for call_id, text in outputs.items():
        answer = answers[call_id]
        assert (answer.result if answer.error is None else answer.error) == text
    reasoning_items = [i for i in items if i["type"] == "reasoning"]
    thoughts = [
        b
        for b in _blocks(conversation.entries, ThinkingBlock)
        if (b.model_extra or {}).get("openaiType") == "reasoning"
    ]
    assert len(thoughts) == len(reasoning_items)
    for block, raw in zip(thoughts, reasoning_items, strict=True):
        extras = block.model_extra or {}
        assert extras["encryptedContent"] == raw["encrypted_content"]
        assert json.dumps(extras["summary"]) == json.dumps(raw["summary"])
        assert block.thought == "\n\n".join(s["text"] for s in raw["summary"])


@needs_rollouts
@pytest.mark.parametrize("path", IMPORTED, ids=[p.name[8:27] for p in IMPORTED])
def test_the_conversation_says_where_and_with_what_model_it_ran(path: Path) -> None:
    records = _records(path)
    conversation, _ = load(path.read_text(encoding="utf-8"))
    assert conversation.workspace_root == records[0]["payload"]["cwd"]
    assert conversation.provider == "openai"
    models = [r["payload"]["model"] for r in records if r["type"] == "turn_context"]
    assert conversation.model == (models[-1] if models else None)
    for entry in conversation.entries:
        if entry.speaker == "ai":
            assert entry.metadata is not None and entry.metadata.model_extra
            assert entry.metadata.model_extra["cwd"]
            assert entry.metadata.timestamp is not None


@needs_rollouts
def test_a_compacted_session_starts_from_its_replacement_history() -> None:
    (path,) = (p for p in IMPORTED if "Quelklef" in str(p))
    records = _records(path)
    (line,) = [n for n, r in enumerate(records, 1) if r["type"] == "compacted"]
    replacement = records[line - 1]["payload"]["replacement_history"]
    conversation, _ = load(path.read_text(encoding="utf-8"))
    first = replacement[0]["content"][0]["text"]
    entry = conversation.entries[0]
    assert entry.speaker == "human" and entry.blocks == (TextBlock(text=first),)
    compaction = [
        b
        for b in _blocks(conversation.entries, ThinkingBlock)
        if (b.model_extra or {}).get("openaiType") == "compaction"
    ]
    assert len(compaction) == 1 and compaction[0].thought == ""
    assert compaction[0].model_extra
    assert compaction[0].model_extra["encryptedContent"] == replacement[-1]["encrypted_content"]
    before = {
        r["payload"]["call_id"]
        for r in records[: line - 1]
        if r["type"] == "response_item" and r["payload"]["type"] == "function_call"
    }
    assert before and not before & {c.id for c in _blocks(conversation.entries, ToolCallBlock)}
    assert any(f"compacted this session on line {line}" in w for w in conversation.warnings)
    # The developer messages the harness sent before everything else are the system prompt,
    # after the base instructions; the ones after the compaction stay where they were.
    assert conversation.system is not None
    assert conversation.system.startswith("You are Codex")
    assert "<permissions instructions>" in conversation.system
    developers = [e for e in conversation.entries if entry_role(e.metadata) == "developer"]
    assert len(developers) == 3


@needs_rollouts
def test_a_resumed_session_replays_its_parent_first() -> None:
    parent, child = sorted(p for p in IMPORTED if "Hoper-J" in str(p))
    records = _records(child)
    assert [r["type"] for r in records[:2]] == ["session_meta", "session_meta"]
    assert records[0]["payload"]["id"] != records[1]["payload"]["id"]
    first, _ = load(parent.read_text(encoding="utf-8"))
    resumed, _ = load(child.read_text(encoding="utf-8"))
    parent_calls = [c.id for c in _blocks(first.entries, ToolCallBlock)]
    resumed_calls = [c.id for c in _blocks(resumed.entries, ToolCallBlock)]
    assert len(parent_calls) == 51
    assert resumed_calls[: len(parent_calls)] == parent_calls
    assert len(resumed_calls) == len(set(resumed_calls)) > len(parent_calls)
    assert resumed.warnings == ()


@needs_rollouts
def test_the_stub_that_holds_only_the_harness_s_context_is_refused_in_one_line() -> None:
    (path,) = (p for p in ROLLOUTS if p.name == STUB)
    with pytest.raises(FormatError) as refused:
        load(path.read_text(encoding="utf-8"))
    assert str(refused.value) == (
        "a Codex rollout with no conversation in it: only the harness's context (1 message), "
        "no user message or reply"
    )


@needs_rollouts
def test_windows_rollouts_keep_their_windows_paths() -> None:
    windows = [p for p in IMPORTED if "Python-AI" in str(p)]
    for path in windows:
        conversation, _ = load(path.read_text(encoding="utf-8"))
        assert conversation.workspace_root is not None
        assert conversation.workspace_root[1:3] == ":\\"


# -- records as the CLI writes them -----------------------------------------------------------


def test_the_model_s_items_make_one_ai_entry_and_their_outputs_one_tool_entry() -> None:
    got = entries(
        turn(),
        message("user", "read both"),
        reasoning(),
        message("assistant", "Reading.", phase="commentary"),
        call("c1", "shell", {"command": ["bash", "-lc", "cat a.py"]}),
        call("c2", "shell", {"command": ["bash", "-lc", "cat b.py"]}),
        output("c1", envelope("A")),
        output("c2", envelope("B")),
        event("agent_message", message="Reading."),
        message("assistant", "Done.", phase="final_answer"),
    )
    assert [e.speaker for e in got] == ["human", "human", "ai", "tool", "ai"]
    thinking, text, *calls = got[2].blocks
    assert isinstance(thinking, ThinkingBlock) and thinking.thought == "**Reading the file**"
    assert text == TextBlock.model_validate({"text": "Reading.", "phase": "commentary"})
    assert [c.id for c in calls if isinstance(c, ToolCallBlock)] == ["c1", "c2"]
    assert [r.call_id for r in got[3].blocks if isinstance(r, ToolResponseBlock)] == ["c1", "c2"]
    assert got[2].metadata is not None and got[2].metadata.model_extra == {
        "cwd": ROOT,
        "model": "gpt-5-codex",
    }


def test_event_messages_are_not_the_conversation() -> None:
    got = entries(
        event("user_message", message="hello"),
        message("user", "hello"),
        event("agent_reasoning", text="thinking"),
        message("assistant", "hi"),
        event("token_count", info=None),
    )
    assert [e.speaker for e in got] == ["human", "human", "ai"]


def test_a_refusal_in_place_of_a_command_s_output_is_an_error() -> None:
    refusals = {
        "shell": "failed in sandbox LinuxSeccomp with execution error: sandbox denied exec error",
        "shell_command": "exec command rejected by user",
        "apply_patch": "apply_patch verification failed: Failed to find expected lines",
    }
    got = entries(
        call("s", "shell", {"command": ["bash", "-lc", "sed -i s/a/b/ a.py"]}),
        output("s", refusals["shell"]),
        call("c", "shell_command", {"command": "sed -i s/a/b/ a.py"}),
        output("c", refusals["shell_command"]),
        patch("p", "*** Begin Patch\n*** Delete File: a.py\n*** End Patch"),
        patch_output("p", refusals["apply_patch"]),
        call("ok", "shell_command", {"command": "false"}),
        output("ok", headed("", exit_code=1)),
        call("plan", "update_plan", {"plan": []}),
        output("plan", "Plan updated"),
    )
    answers = {r.call_id: r for r in _blocks(got, ToolResponseBlock)}
    for call_id, tool in (("s", "shell"), ("c", "shell_command"), ("p", "apply_patch")):
        assert (answers[call_id].result, answers[call_id].error) == (None, refusals[tool])
    assert answers["ok"].error is None  # it ran, and its exit status says how it went
    assert answers["plan"] == ToolResponseBlock(
        call_id="plan", tool_name="update_plan", result="Plan updated"
    )


def test_custom_local_shell_and_web_search_items_keep_what_rebuilds_them() -> None:
    action = {"type": "exec", "command": ["bash", "-lc", "ls"], "working_directory": "/w"}
    search = {"type": "search", "query": "react flow drag"}
    got = entries(
        patch("p", "*** Begin Patch\n*** Add File: a.py\n+x\n*** End Patch"),
        patch_output("p", envelope("Success. Updated the following files:\nA a.py\n")),
        item({"type": "local_shell_call", "call_id": "l", "status": "completed", "action": action}),
        output("l", envelope("a.py")),
        item({"type": "web_search_call", "status": "completed", "action": search}),
        message("assistant", "ok"),
    )
    custom, local = _blocks(got, ToolCallBlock)
    assert custom.parameters == {"input": "*** Begin Patch\n*** Add File: a.py\n+x\n*** End Patch"}
    assert (custom.model_extra or {})["openaiType"] == "custom_tool_call"
    assert (local.name, local.parameters) == ("local_shell", action)
    (web,) = _blocks(got, ThinkingBlock)
    assert web.thought == "" and (web.model_extra or {})["action"] == search


def test_arguments_not_in_compact_form_are_kept_as_written() -> None:
    written = '{"command":["bash","-lc","pytest -q"], "timeout_ms": 120000}'
    got = entries(
        item({"type": "function_call", "name": "shell", "arguments": written, "call_id": "a"}),
        call("b", "shell", {"command": ["bash", "-lc", "ls"]}),
        output("a", envelope("")),
        output("b", envelope("")),
    )
    first, second = _blocks(got, ToolCallBlock)
    assert (first.model_extra or {})["arguments"] == written
    assert "arguments" not in (second.model_extra or {})


def test_an_output_without_its_call_is_left_out_and_counted() -> None:
    conversation = rollout(
        message("user", "go"),
        output("lost", envelope("x")),
        call("c", "shell", {"command": ["ls"]}),
        output("c", envelope("x")),
        output("c", envelope("again")),
    )
    assert [r.call_id for r in _blocks(conversation.entries, ToolResponseBlock)] == ["c"]
    assert any("left out 2 tool output(s)" in w for w in conversation.warnings)


def test_a_malformed_record_is_skipped_with_its_kind_and_line_never_its_content() -> None:
    secret = "hunter2-the-password"
    text = jsonl(
        [
            meta(),
            context(),
            item({"type": "function_call", "name": "shell", "arguments": secret}),
            {"timestamp": "x", "type": "response_item", "payload": secret},
            message("user", "go"),
            message("assistant", "ok"),
        ]
    )
    conversation, _ = load(text + "not json " + secret + "\n")
    assert [e.speaker for e in conversation.entries] == ["human", "human", "ai"]
    warnings = "\n".join(conversation.warnings)
    assert secret not in warnings
    assert "line 3: response_item (a function_call without a call_id)" in warnings
    assert "line 4: response_item without a payload object" in warnings
    assert "skipped 1 of 7 lines" in warnings
    assert conversation.incomplete is not None


def test_a_compacted_record_with_only_a_summary_keeps_what_the_user_typed() -> None:
    conversation = rollout(
        message("user", "first request"),
        call("c", "shell", {"command": ["ls"]}),
        output("c", envelope("x")),
        message("assistant", "done"),
        item({"type": "ghost_snapshot", "ghost_commit": {"id": "abc"}}),
        {"timestamp": "2025-11-06T07:00:00.000Z", "type": "compacted", "payload": {"message": "S"}},
        message("user", "next"),
    )
    texts = [b.text for e in conversation.entries for b in e.blocks if isinstance(b, TextBlock)]
    assert texts == ["first request", "S", "next"]


def test_leading_developer_messages_join_the_system_prompt_later_ones_stay() -> None:
    base = {"text": "You are Codex."}
    conversation = rollout(
        meta(version="0.105.0", base_instructions=base),
        message("developer", "<permissions instructions>sandboxed</permissions instructions>"),
        context(),
        message("user", "hi"),
        message("developer", "<collaboration_mode>plan</collaboration_mode>"),
        message("assistant", "hello"),
    )
    assert conversation.system == (
        "You are Codex.\n\n<permissions instructions>sandboxed</permissions instructions>"
    )
    roles = [entry_role(e.metadata) for e in conversation.entries]
    assert roles == [None, None, "developer", None]


def test_an_image_the_user_attached_is_media() -> None:
    image = {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}
    got = entries(item({"type": "message", "role": "user", "content": [image]}))
    assert got[-1].blocks == (
        MediaBlock(mime_type="image/png", data="iVBORw0KGgo=", encoding="base64"),
    )


def test_a_rollout_is_detected_from_any_of_its_records() -> None:
    assert detect_format(jsonl([meta()])) == "codex"
    assert detect_format(jsonl([event("token_count"), meta(), message("user", "x")])) == "codex"
    with pytest.raises(FormatError, match="no user message or reply \\(1 session_meta record\\)"):
        load(jsonl([meta()]))


def test_an_exec_command_still_running_is_read_as_it_came() -> None:
    got = entries(
        call("e", "exec_command", {"cmd": "npm run dev", "yield_time_ms": 1000}),
        output("e", chunk("ready", exit_code=None)),
    )
    (answer,) = _blocks(got, ToolResponseBlock)
    assert answer.error is None and answer.result == chunk("ready", exit_code=None)
