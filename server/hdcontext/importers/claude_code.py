"""Claude Code session logs (JSONL) to IContent.

A Claude Code log is one JSON record a line. Only the main thread's ``user`` and
``assistant`` records carry conversation: sub-agent records (``isSidechain``) and command
noise (``isMeta``) are skipped, and so are summaries, snapshots and progress records. One model
message is often written as several records with the same ``message.id``; they are joined into
one ``ai`` entry. Tool results come back in ``user`` records; consecutive ones become one
``tool`` entry, each response named after the call it answers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from ..content import (
    Block,
    IContent,
    MediaBlock,
    Metadata,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)


def _ms(stamp: object) -> int | None:
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


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


def _media(block: Mapping[str, Any]) -> MediaBlock | None:
    source = block.get("source")
    if not isinstance(source, Mapping):
        return None
    if source.get("type") == "base64":
        return MediaBlock(
            mime_type=str(source.get("media_type", "application/octet-stream")),
            data=str(source.get("data", "")),
            encoding="base64",
        )
    if source.get("type") == "url":
        return MediaBlock(
            mime_type=str(source.get("media_type", "application/octet-stream")),
            data=str(source.get("url", "")),
            encoding="url",
        )
    return None


class _Builder:
    def __init__(self) -> None:
        self.entries: list[IContent] = []
        self.tool_names: dict[str, str] = {}
        self._open_message: str | None = None  # message.id of the ai entry being joined

    def _meta(self, record: Mapping[str, Any]) -> Metadata:
        return Metadata(timestamp=_ms(record.get("timestamp")), id=record.get("uuid"))

    def _push(self, speaker: str, blocks: list[Block], record: Mapping[str, Any]) -> None:
        self.entries.append(
            IContent.model_validate(
                {"speaker": speaker, "blocks": blocks, "metadata": self._meta(record)}
            )
        )

    def assistant(self, record: Mapping[str, Any]) -> None:
        message = record.get("message") or {}
        blocks: list[Block] = []
        for raw in message.get("content") or []:
            kind = raw.get("type")
            if kind == "text":
                blocks.append(TextBlock(text=str(raw.get("text", ""))))
            elif kind == "thinking":
                blocks.append(ThinkingBlock(thought=str(raw.get("thinking", ""))))
            elif kind == "tool_use":
                call_id, name = str(raw.get("id")), str(raw.get("name"))
                self.tool_names[call_id] = name
                blocks.append(ToolCallBlock(id=call_id, name=name, parameters=raw.get("input")))
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
                media = _media(raw)
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
    return from_records(json.loads(line) for line in text.splitlines() if line.strip())
