"""Importers and exporters on the real agent sessions in shared/data/transcripts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.content import Block, IContent, ThinkingBlock, ToolCallBlock, ToolResponseBlock
from hdcontext.formats.exporters import export
from hdcontext.formats.importers import load

TRANSCRIPTS = Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts"
FILES = sorted([*TRANSCRIPTS.glob("*/*.jsonl"), *TRANSCRIPTS.glob("*/*.traj.json")])
MINI = [f for f in FILES if f.name.endswith(".traj.json")]

pytestmark = pytest.mark.skipif(not FILES, reason=f"no transcripts at {TRANSCRIPTS}")


def ids(files: list[Path]) -> list[str]:
    return [f.name.split(".")[0] for f in files]


@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_real_files_are_detected_and_imported(path: Path) -> None:
    conversation, fmt = load(path.read_text(encoding="utf-8"))
    assert fmt == ("mini-swe-agent" if path.name.endswith(".traj.json") else "claude-code")
    assert len(conversation.entries) > 50
    assert conversation.workspace_root is not None
    calls = {b.id for e in conversation.entries for b in e.blocks if isinstance(b, ToolCallBlock)}
    assert len(calls) > 20
    problems = pairing_problems(conversation.entries)
    if fmt == "mini-swe-agent":
        # The submit command ends the run: its output never went back to the model.
        assert [kind for kind, _ in problems] == ["unanswered_call"]
    else:
        assert problems == set()


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
    assert [r.result for r in responses] == [m["content"] for m in by_role["tool"]]
    assert all(e.timestamp is not None for e in entries if e.speaker != "human")


@pytest.mark.parametrize("path", MINI, ids=ids(MINI))
def test_mini_swe_agent_exports_back_to_its_openai_messages(path: Path) -> None:
    """The trajectory's messages, without mini-swe-agent's own fields, are what OpenAI gets."""
    data = json.loads(path.read_text(encoding="utf-8"))
    conversation, _ = load(path.read_text(encoding="utf-8"))
    exported = export(conversation, "openai")
    assert exported.dropped == {}
    assert exported.payload == [_openai_core(m) for m in data["messages"] if m["role"] != "exit"]


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
                if fmt == "gemini":
                    block = ThinkingBlock(thought=block.thought)  # Anthropic's signature stays
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


@pytest.mark.parametrize("fmt", ["icontent", "openai", "anthropic", "gemini"])
@pytest.mark.parametrize("path", FILES, ids=ids(FILES))
def test_real_sessions_round_trip_through_every_format(path: Path, fmt: str) -> None:
    conversation, _ = load(path.read_text(encoding="utf-8"))
    exported = export(conversation, fmt)
    back, back_fmt = load(json.dumps(exported.payload))
    assert back_fmt == fmt
    assert back.system == conversation.system
    assert _portable(back.entries, fmt) == _portable(conversation.entries, fmt)
    assert pairing_problems(back.entries) == pairing_problems(conversation.entries)
    assert set(exported.dropped) <= {"thinking", "tool error flag"}
