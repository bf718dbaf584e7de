"""Claude Code session logs (JSONL) to IContent.

A Claude Code log is one JSON record a line. Only the main thread's ``user`` and
``assistant`` records carry conversation: sub-agent records (``isSidechain``) and command
noise (``isMeta``) are skipped, and so are summaries, snapshots and progress records. One model
message is often written as several records with the same ``message.id``; they are joined into
one ``ai`` entry. Tool results come back in ``user`` records; consecutive ones become one
``tool`` entry, each response named after the call it answers. A result's images are left out
(their text is kept): the file they came from can be read again.

Claude Code's shell keeps its working directory between calls, and every record says where it
was (``cwd``). An ``ai`` entry keeps it as ``metadata.cwd``, which the shell-command
recognition uses as the directory its calls ran in; the first record's ``cwd`` is the
conversation's workspace root.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ...core.content import Block, IContent, Metadata, TextBlock, ToolResponseBlock
from ..conversation import Conversation, FormatError
from .anthropic_messages import assistant_blocks, media_block
from .blocks import iso_ms


def _result_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        ]
        return "\n".join(parts)
    return "" if content is None else json.dumps(content)


class _Builder:
    def __init__(self) -> None:
        self.entries: list[IContent] = []
        self.tool_names: dict[str, str] = {}
        self._open_message: str | None = None  # message.id of the ai entry being joined

    def _meta(self, record: Mapping[str, Any], speaker: str) -> Metadata:
        fields: dict[str, Any] = {"timestamp": iso_ms(record.get("timestamp"))}
        fields["id"] = record.get("uuid")
        cwd = record.get("cwd")
        if speaker == "ai" and isinstance(cwd, str) and cwd:
            fields["cwd"] = cwd
        return Metadata.model_validate(fields)

    def _push(self, speaker: str, blocks: list[Block], record: Mapping[str, Any]) -> None:
        self.entries.append(
            IContent.model_validate(
                {"speaker": speaker, "blocks": blocks, "metadata": self._meta(record, speaker)}
            )
        )

    def assistant(self, record: Mapping[str, Any]) -> None:
        message = record.get("message") or {}
        blocks = assistant_blocks(list(message.get("content") or []), self.tool_names)
        if not blocks:
            return
        message_id = message.get("id")
        last = self.entries[-1] if self.entries else None
        if (
            last is not None
            and last.speaker == "ai"
            and message_id
            and message_id == self._open_message
        ):
            self.entries[-1] = last.with_blocks((*last.blocks, *blocks))
        else:
            self._push("ai", blocks, record)
            self._open_message = message_id

    def user(self, record: Mapping[str, Any]) -> None:
        content = (record.get("message") or {}).get("content")
        if isinstance(content, str):
            self._open_message = None
            self._push("human", [TextBlock(text=content)], record)
            return
        responses: list[Block] = []
        others: list[Block] = []
        for raw in content or []:
            kind = raw.get("type")
            if kind == "tool_result":
                call_id = str(raw.get("tool_use_id"))
                text = _result_text(raw.get("content"))
                error = (text or "error") if raw.get("is_error") else None
                responses.append(
                    ToolResponseBlock(
                        call_id=call_id,
                        tool_name=self.tool_names.get(call_id, "unknown"),
                        result=None if error else text,
                        error=error,
                    )
                )
            elif kind == "text":
                others.append(TextBlock(text=str(raw.get("text", ""))))
            elif kind == "image":
                media = media_block(raw)
                if media is not None:
                    others.append(media)
        if responses:
            last = self.entries[-1] if self.entries else None
            if last is not None and last.speaker == "tool":
                self.entries[-1] = last.with_blocks((*last.blocks, *responses))
            else:
                self._push("tool", responses, record)
        if others:
            self._open_message = None
            self._push("human", others, record)


def from_records(records: Iterable[Mapping[str, Any]]) -> list[IContent]:
    builder = _Builder()
    for record in records:
        if record.get("isSidechain") or record.get("isMeta"):
            continue
        kind = record.get("type")
        if kind == "assistant":
            builder.assistant(record)
        elif kind == "user":
            builder.user(record)
    return builder.entries


def from_jsonl(text: str) -> list[IContent]:
    return from_records(_records(text))


def load(text: str) -> Conversation:
    """A Claude Code log; its workspace root is the first main-thread record's ``cwd``."""
    records = list(_records(text))
    root = next(
        (
            r["cwd"]
            for r in records
            if not r.get("isSidechain") and isinstance(r.get("cwd"), str) and r["cwd"]
        ),
        None,
    )
    return Conversation(tuple(from_records(records)), workspace_root=root)


def _records(text: str) -> Iterable[Mapping[str, Any]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            raise FormatError(f"line {number} is not JSON: {exc}") from None
        if isinstance(record, Mapping):
            yield record
