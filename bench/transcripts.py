"""The real sessions the benchmark runs on, and the synthetic growth it adds to them."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hdcontext.core.content import IContent, Metadata, ToolCallBlock, ToolResponseBlock
from hdcontext.formats.conversation import Conversation, FormatError
from hdcontext.formats.importers import MAIN, load_threads

REPO = Path(__file__).resolve().parents[1]
TRANSCRIPTS = (REPO / ".." / "shared" / "data" / "transcripts").resolve()
SUFFIXES = (".jsonl", ".traj", ".traj.json")


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


@dataclass
class Corpus:
    """What ``find`` read: the conversations, and the files it could not use and why."""

    transcripts: list[Transcript] = field(default_factory=list)
    files: int = 0
    duplicates: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "duplicates_skipped": self.duplicates,
            "refused": self.refused,
            "conversations": len(self.transcripts),
        }


def find() -> Corpus:
    """Every agent file under the transcripts folder that the importers read, each thread of
    a Claude Code log as a conversation of its own (format detected). A file that is a byte
    copy of one read already is skipped (``claude-code/`` copies four ``claude-code-log/``
    sessions)."""
    corpus = Corpus()
    seen: set[str] = set()
    for path in sorted(p for p in TRANSCRIPTS.rglob("*") if p.name.endswith(SUFFIXES)):
        relative = str(path.relative_to(TRANSCRIPTS))
        corpus.files += 1
        text = path.read_text(encoding="utf-8")
        digest = hashlib.sha256(text.encode()).hexdigest()
        if digest in seen:
            corpus.duplicates.append(relative)
            continue
        seen.add(digest)
        try:
            threads, fmt = load_threads(text)
        except FormatError as exc:
            corpus.refused[relative] = str(exc)
            continue
        for thread, conversation in threads:
            name = _name(path)
            if thread != MAIN and not name.endswith(thread):
                name += f"[{thread}]"
            corpus.transcripts.append(Transcript(name, fmt, path, conversation))
    return corpus


def _name(path: Path) -> str:
    """Short and unique enough for a table: the file's stem, after the tail of its project
    folder for Claude Code's ``~/.claude/projects`` layout."""
    stem = path.name
    for suffix in SUFFIXES:
        stem = stem.removesuffix(suffix)
    folder = path.parent.name
    if folder == "subagents":
        folder = path.parent.parent.parent.name
    if not folder.startswith("-"):  # not a Claude Code project folder (the path, dashed)
        return stem[:39]
    return f"{folder.split('-')[-1][:14]}/{stem[:24].rstrip('-')}"


def repeated(entries: Sequence[IContent], times: int, tag: str = "") -> list[IContent]:
    """The session ``times`` over, each copy with fresh call ids (and entry ids); ``tag``
    makes every id of this repetition its own (another session's copy)."""
    out: list[IContent] = []
    for k in range(times):
        suffix = f"{tag}~r{k}" if k or tag else ""
        out.extend(_fresh(entry, suffix) if suffix else entry for entry in entries)
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


def model_calls(entries: Sequence[IContent]) -> list[int]:
    """Indices of the entries that answer a model call (every AI entry but a leading one):
    the replays make a call before each."""
    return [i for i, e in enumerate(entries) if e.speaker == "ai" and i > 0]


def corpus(found: Sequence[Transcript], min_calls: int = 3) -> list[Transcript]:
    """The conversations worth replaying: three model calls or more."""
    return [t for t in found if len(model_calls(t.entries)) >= min_calls]
