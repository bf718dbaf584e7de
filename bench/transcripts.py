"""The real sessions the benchmark runs on, and the synthetic growth it adds to them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hdcontext.core.content import IContent, Metadata, ToolCallBlock, ToolResponseBlock
from hdcontext.formats.conversation import Conversation
from hdcontext.formats.importers import load

REPO = Path(__file__).resolve().parents[1]
TRANSCRIPTS = (REPO / ".." / "shared" / "data" / "transcripts").resolve()


@dataclass(frozen=True)
class Transcript:
    name: str
    fmt: str
    path: Path
    conversation: Conversation

    @property
    def entries(self) -> tuple[IContent, ...]:
        return self.conversation.entries

    @property
    def root(self) -> str:
        return self.conversation.workspace_root or "/"


def find() -> list[Transcript]:
    """The Claude Code and mini-swe-agent sessions, read with the project's own importers
    (format detected)."""
    files = sorted(
        [*TRANSCRIPTS.glob("claude-code/*.jsonl"), *TRANSCRIPTS.glob("mini-swe-agent/*.traj.json")]
    )
    out: list[Transcript] = []
    for path in files:
        conversation, fmt = load(path.read_text(encoding="utf-8"))
        name = path.name.removesuffix(".jsonl").removesuffix(".traj.json")
        out.append(Transcript(name, fmt, path, conversation))
    return out


def repeated(entries: Sequence[IContent], times: int) -> list[IContent]:
    """The session ``times`` over, each copy with fresh call ids (and entry ids)."""
    out: list[IContent] = []
    for k in range(times):
        out.extend(_fresh(entry, f"~r{k}") if k else entry for entry in entries)
    return out


def _fresh(entry: IContent, suffix: str) -> IContent:
    blocks = []
    for block in entry.blocks:
        if isinstance(block, ToolCallBlock):
            block = block.model_copy(update={"id": block.id + suffix})
        elif isinstance(block, ToolResponseBlock):
            block = block.model_copy(update={"call_id": block.call_id + suffix})
        blocks.append(block)
    update: dict[str, Any] = {"blocks": tuple(blocks)}
    if entry.metadata is not None and entry.metadata.id is not None:
        update["metadata"] = entry.metadata.model_copy(update={"id": entry.metadata.id + suffix})
    return entry.model_copy(update=update)


FILE_BODY = "\n".join(f"    line {i}: some code that the agent reads = {i} * 2" for i in range(60))


def turn(k: int, root: str) -> list[dict[str, Any]]:
    """One model turn as wire JSON: a tool call and its response (~700 tokens).

    Turns alternate between reading one of five files and editing the one read just before,
    so half the turns make an earlier read stale: optimize has real work every time.
    """
    path = f"{root.rstrip('/')}/bench/file_{(k // 2) % 5}.py"
    call_id = f"bench-turn-{k}"
    if k % 2 == 0:
        name, params, result = "Read", {"file_path": path}, FILE_BODY
    else:
        name = "Edit"
        params = {"file_path": path, "old_string": "line 1:", "new_string": "line one:"}
        result = "The file has been updated."
    meta = Metadata(id=f"bench-{k}")
    return [
        IContent.model_validate(
            {
                "speaker": "ai",
                "blocks": [
                    {"type": "tool_call", "id": call_id, "name": name, "parameters": params}
                ],
                "metadata": meta,
            }
        ).to_wire(),
        IContent.model_validate(
            {
                "speaker": "tool",
                "blocks": [
                    {"type": "tool_response", "callId": call_id, "toolName": name, "result": result}
                ],
                "metadata": meta,
            }
        ).to_wire(),
    ]
