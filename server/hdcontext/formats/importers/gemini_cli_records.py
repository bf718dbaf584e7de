"""A Gemini CLI chat recording read back as the CLI reads it: its metadata and its messages.

Two forms, both under ``~/.gemini/tmp/<project>/chats/``:

* ``session-*.json`` (the CLI until early 2026): one object, ``{sessionId, projectHash,
  startTime, lastUpdated, messages[]}`` (``kind``, ``summary`` in later ones);
* ``session-*.jsonl`` (since): a log the CLI only appends to, and replays when it resumes a
  session (``loadConversationRecord``). Its first line is the metadata; a line with a string
  ``id`` is a message; ``{"$set": {…}}`` updates the metadata. The CLI writes a message again
  under the same id each time it grows (its tool calls finish, its token counts arrive): the
  last line for an id wins, in the place of the id's first line. A ``$set`` of ``messages``
  replaces the whole list (the CLI rewrites its history so when it compresses it or masks old
  tool output), and ``{"$rewindTo": id}`` (``/rewind``) drops that message and every one after
  it, or all of them when the id is not there.

Replaying the log is what makes the messages the CLI would resume with, so that is what is
done here, line by line, the same way. A line that is not JSON is skipped, with one warning for
the file (``jsonl.py``); a record of none of these kinds, or a message without a type, is
skipped and counted in one warning that names where, never what it held.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..conversation import FormatError
from .jsonl import SHOWN_LINES, Skipped, read_lines

MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})
"""The ``type`` of a recorded message: ``user`` and ``gemini`` are conversation, the others
what the CLI showed on screen."""


@dataclass(frozen=True)
class Message:
    """One recorded message, and where it was read (``line 12``, ``messages[3]``), for
    warnings."""

    where: str
    record: Mapping[str, Any]


@dataclass(frozen=True)
class Recording:
    metadata: Mapping[str, Any]
    messages: tuple[Message, ...]
    skipped: Skipped | None = None
    """The lines that were not JSON records (the JSONL form only)."""
    warnings: tuple[str, ...] = field(default=())


def is_header(record: Mapping[str, Any]) -> bool:
    """The metadata a recording opens with (the CLI's own test for it)."""
    return isinstance(record.get("sessionId"), str) and isinstance(record.get("projectHash"), str)


def read_recording(text: str, strict: bool = False) -> Recording:
    """The messages and metadata of a recording in either form; FormatError when it is not
    one (no metadata with a session id and project hash), or, with ``strict``, at its first
    line that is not a record of a known kind."""
    replay = _Replay(strict)
    try:
        whole: object = json.loads(text)
    except ValueError:
        whole = None
    if isinstance(whole, Mapping):
        replay.record(whole, "the file", "")
        skipped = None
    else:
        lines = read_lines(text, strict)
        for number, record in lines.records:
            replay.record(record, f"line {number}", f"line {number} ")
        skipped = lines.skipped
    if not is_header(replay.metadata):
        raise FormatError("a Gemini CLI chat recording opens with its sessionId and projectHash")
    return Recording(
        replay.metadata,
        tuple(replay.messages.values()),
        skipped,
        replay.warnings(),
    )


class _Replay:
    """The CLI's replay of a recording, one record at a time."""

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.metadata: dict[str, Any] = {}
        self.messages: dict[str, Message] = {}
        self.unknown: list[str] = []

    def record(self, record: Mapping[str, Any], where: str, prefix: str) -> None:
        rewind = record.get("$rewindTo")
        update = record.get("$set")
        if isinstance(rewind, str):
            self._rewind(rewind)
        elif isinstance(record.get("id"), str):
            self._message(record, where)
        elif isinstance(update, Mapping):
            self.metadata.update(update)
            if isinstance(update.get("messages"), list):
                self.messages.clear()
                self._messages(update["messages"], prefix)
        elif is_header(record):
            self.metadata.update({k: v for k, v in record.items() if k != "messages"})
            if isinstance(record.get("messages"), list):
                self._messages(record["messages"], prefix)
        else:
            self._unknown(where)

    def _messages(self, messages: list[Any], prefix: str) -> None:
        for k, message in enumerate(messages):
            where = f"{prefix}messages[{k}]".strip()
            if isinstance(message, Mapping) and isinstance(message.get("id"), str):
                self._message(message, where)
            else:
                self._unknown(where)

    def _message(self, record: Mapping[str, Any], where: str) -> None:
        if record.get("type") not in MESSAGE_TYPES:
            self._unknown(where)
            return
        message_id = record["id"]
        if message_id in self.messages:
            self.messages[message_id] = Message(self.messages[message_id].where, record)
        else:
            self.messages[message_id] = Message(where, record)

    def _rewind(self, message_id: str) -> None:
        if message_id not in self.messages:
            self.messages.clear()
            return
        ids = list(self.messages)
        for dropped in ids[ids.index(message_id) :]:
            del self.messages[dropped]

    def _unknown(self, where: str) -> None:
        if self.strict:
            raise FormatError(f"{where} is not a Gemini CLI record of a known kind")
        self.unknown.append(where)

    def warnings(self) -> tuple[str, ...]:
        if not self.unknown:
            return ()
        shown = ", ".join(self.unknown[:SHOWN_LINES])
        more = ", …" if len(self.unknown) > SHOWN_LINES else ""
        return (
            f"skipped {len(self.unknown)} record(s) that are not Gemini CLI messages or "
            f"metadata: {shown}{more}",
        )
