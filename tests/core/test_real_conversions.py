"""Importers and exporters on every real agent file in shared/data/transcripts.

Every file is either imported, each of its threads as a provider-valid conversation that all
three provider formats carry validly (``core.validity`` on the exported payloads), or refused
with a one-line reason; none holds messages and comes out empty.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hdcontext.core.content import (
    Block,
    IContent,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from hdcontext.core.validity import NO_RESULT, problems
from hdcontext.formats.conversation import FormatError
from hdcontext.formats.exporters import export
from hdcontext.formats.importers import detect_format, load, load_threads

TRANSCRIPTS = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts"
SUFFIXES = (".jsonl", ".traj", ".json")
FILES = sorted(p for p in TRANSCRIPTS.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
MINI = [f for f in FILES if f.name.endswith(".traj.json")]
SWE = [f for f in FILES if f.suffix == ".traj"]
FORMAT_OF_FOLDER = {
    "claude-code": "claude-code",
    "claude-code-log": "claude-code",
    "codex": "codex",
    "mini-swe-agent": "mini-swe-agent",
    "swe-agent": "swe-agent",
    "gemini": "gemini-cli",
}
# A Gemini CLI ``/chat save`` checkpoint is the raw Gemini contents the CLI sent.
FORMAT_OF_PREFIX = {"checkpoint-": "gemini"}
# Files that name no folder of their own anywhere, and so give no workspace root.
NO_ROOT = {"session-2026-04-25T08-41-3494a697.jsonl"}  # a database's tools only, no path
# The files that hold no conversation at all, and why the importer says it refuses them.
_NO_CLAUDE_CODE = "a Claude Code log with no conversation in it: no user or assistant records "
REFUSED = {
    "4e27c414-a885-46a0-b5c8-d58e1417377d.jsonl": _NO_CLAUDE_CODE + "(1 summary record)",
    "a95fea4a-b88a-4e49-ac07-4cc323d8700c.jsonl": _NO_CLAUDE_CODE
    + "(4 file-history-snapshot records)",
    # A Codex session opened and left: its one message is the harness's environment context.
    "rollout-2025-09-26T19-45-48-01998661-4e27-7361-8e06-bfcb0e30048d.jsonl": (
        "a Codex rollout with no conversation in it: only the harness's context (1 message), "
        "no user message or reply"
    ),
}

pytestmark = pytest.mark.skipif(not FILES, reason=f"no transcripts at {TRANSCRIPTS}")


def ids(files: list[Path]) -> list[str]:
    return [str(f.relative_to(TRANSCRIPTS)) for f in files]


def format_of(path: Path) -> str:
    prefixed = (f for prefix, f in FORMAT_OF_PREFIX.items() if path.name.startswith(prefix))
    return next(prefixed, FORMAT_OF_FOLDER[path.relative_to(TRANSCRIPTS).parts[0]])


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_the_corpus_has_every_kind_of_file() -> None:
    folders = {f.relative_to(TRANSCRIPTS).parts[0] for f in FILES}
    assert folders == set(FORMAT_OF_FOLDER)
    assert any("subagents" in f.parts for f in FILES)


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_every_file_is_imported_provider_valid_or_refused_with_a_reason(path: Path) -> None:
    if path.name in REFUSED:
        with pytest.raises(FormatError) as refused:
            load_threads(read(path))
        assert str(refused.value) == REFUSED[path.name]
        return
    threads, fmt = load_threads(read(path))
    assert fmt == format_of(path)
    for name, conversation in threads:
        assert conversation.entries, name
        assert problems(conversation.entries) == [], name
        for target in ("openai", "anthropic", "gemini", "icontent"):
            assert export(conversation, target).problems == (), (name, target)


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_the_default_thread_is_the_main_one_or_the_only_one(path: Path) -> None:
    if path.name in REFUSED:
        return
    conversation, _ = load(read(path))
    threads, _ = load_threads(read(path))
    assert conversation.entries == threads[0][1].entries
    if path.name.startswith("agent-"):
        assert [name for name, _ in threads] != ["main"]  # a sub-agent's own thread
    assert (conversation.workspace_root is None) == (path.name in NO_ROOT)


@pytest.mark.parametrize("path", SWE, ids=ids(SWE))
def test_swe_agent_trajectories_keep_the_model_s_messages(path: Path) -> None:
    data = json.loads(read(path))
    conversation, fmt = load(read(path))
    assert fmt == "swe-agent"
    history = data["history"]
    assert conversation.system == history[0]["content"]
    model = [m for m in history if m["role"] == "assistant"]
    assert sum(e.speaker == "ai" for e in conversation.entries) == len(model)
    calls = [b for e in conversation.entries for b in e.blocks if isinstance(b, ToolCallBlock)]
    assert len(calls) >= len(model) - 1  # every answered action is a call
    assert conversation.workspace_root is not None
    assert conversation.workspace_root.startswith("/")


@pytest.mark.parametrize("path", MINI, ids=ids(MINI))
def test_mini_swe_agent_import_keeps_every_message(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation, _ = load(path.read_text(encoding="utf-8"))
    messages = data["messages"]
    assert conversation.system == messages[0]["content"]
    assert conversation.workspace_root == "/testbed"
    by_role = {r: [m for m in messages if m["role"] == r] for r in ("assistant", "tool", "user")}
    entries = conversation.entries
    assert sum(e.speaker == "ai" for e in entries) == len(by_role["assistant"])
    assert sum(e.speaker == "human" for e in entries) == len(by_role["user"])
    responses = [b for e in entries for b in e.blocks if isinstance(b, ToolResponseBlock)]
    # The submit command ends the run: its output never went back to the model, so the
    # importer answers it with an error that says so.
    *answered, last = responses
    assert [r.result for r in answered] == [m["content"] for m in by_role["tool"]]
    assert last.error == NO_RESULT
    assert last.call_id == by_role["assistant"][-1]["tool_calls"][0]["id"]
    assert conversation.warnings == (
        f"gave 1 unanswered tool call(s) an error result ({NO_RESULT})",
    )
    assert all(e.timestamp is not None for e in entries[:-1] if e.speaker != "human")


@pytest.mark.parametrize("path", MINI, ids=ids(MINI))
def test_mini_swe_agent_exports_back_to_its_openai_messages(path: Path) -> None:
    """The trajectory's messages, without mini-swe-agent's own fields, are what OpenAI gets."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation, _ = load(path.read_text(encoding="utf-8"))
    exported = export(conversation, "openai")
    assert exported.dropped == {"tool error flag": 1}  # the unanswered submit's
    *messages, answer = exported.payload  # type: ignore[misc]
    assert messages == [_openai_core(m) for m in data["messages"] if m["role"] != "exit"]
    assert answer["role"] == "tool" and answer["content"] == NO_RESULT


def _openai_core(message: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message["role"], "content": message["content"]}
    if message["role"] == "tool":
        out["tool_call_id"] = message["tool_call_id"]
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {
                    "name": c["function"]["name"],
                    "arguments": json.dumps(
                        json.loads(c["function"]["arguments"]), ensure_ascii=False
                    ),
                },
            }
            for c in message["tool_calls"]
        ]
        out["content"] = message["content"] or None
    return out


def _portable(entries: tuple[IContent, ...], fmt: str) -> list[tuple[str, list[Block]]]:
    """The history as ``fmt`` can carry it: exactly the documented losses, nothing more."""
    out: list[tuple[str, list[Block]]] = []
    for entry in entries:
        blocks: list[Block] = []
        for block in entry.blocks:
            if isinstance(block, ThinkingBlock):
                if fmt == "openai":
                    continue  # OpenAI takes no thinking back
                if fmt == "anthropic" and not _anthropic_signed(block):
                    continue  # OpenAI's reasoning: only OpenAI can read it back
                if fmt == "gemini" and not block.thought.strip():
                    continue  # Claude's omitted thinking: a signature and no text
                if fmt == "gemini":
                    block = ThinkingBlock(thought=block.thought)  # Anthropic's signature stays
            if isinstance(block, ToolCallBlock) and fmt != "icontent":
                # Anthropic's caller (who invoked the call) means nothing to the others, and
                # what the Responses API says of a call (a custom tool's, the arguments as
                # written) nothing to any of them.
                caller = (block.model_extra or {}).get("caller") if fmt == "anthropic" else None
                fields = {"id": block.id, "name": block.name, "parameters": block.parameters}
                block = ToolCallBlock.model_validate(
                    fields if caller is None else {**fields, "caller": caller}
                )
            if isinstance(block, TextBlock) and fmt != "icontent" and block.model_extra:
                # An assistant message's phase (commentary, final answer) is the Responses
                # API's alone.
                kept = {k: v for k, v in block.model_extra.items() if k != "phase"}
                block = TextBlock.model_validate({"text": block.text, **kept})
            if isinstance(block, ToolResponseBlock) and fmt == "openai" and block.error:
                text = (
                    block.error if block.result in (None, "") else f"{block.result}\n{block.error}"
                )
                block = ToolResponseBlock(
                    call_id=block.call_id, tool_name=block.tool_name, result=text
                )
            blocks.append(block)
        out.append((entry.speaker, blocks))
    return out


def _anthropic_signed(block: ThinkingBlock) -> bool:
    extras = block.model_extra or {}
    return "signature" in extras or "redactedData" in extras


IMPORTED = [f for f in FILES if f.name not in REFUSED]


@pytest.mark.parametrize("fmt", ["icontent", "openai", "anthropic", "gemini"])
@pytest.mark.parametrize("path", IMPORTED, ids=ids(IMPORTED))
def test_real_sessions_round_trip_through_every_format(path: Path, fmt: str) -> None:
    conversation, _ = load(read(path))
    exported = export(conversation, fmt)
    text = json.dumps(exported.payload)
    back, _ = load(text, fmt)
    # Plain text reads the same as OpenAI and as Anthropic messages: either answer is right.
    assert detect_format(text) in ({fmt, "openai"} if fmt == "anthropic" else {fmt})
    assert back.warnings == ()  # the export needed no repair on the way back
    assert back.system == conversation.system
    assert _portable(back.entries, fmt) == _portable(conversation.entries, fmt)
    assert problems(back.entries) == []
    # Codex's reasoning and its developer messages mid-conversation are OpenAI's own:
    # Anthropic keeps only signed thinking, and has no developer role (nor has Gemini).
    assert set(exported.dropped) <= {
        "thinking",
        "tool error flag",
        "blank thinking",
        "unsigned thinking",
        "system role as user text",
    }
