"""Gemini CLI chat recordings (``chats/session-*.json`` and ``.jsonl``) to IContent.

The recording is read back as the CLI replays it (``gemini_cli_records.py``), and each message
is turned into the Gemini contents the CLI rebuilds from it when it resumes the session
(``convertSessionToClientHistory``); those go through the one Gemini contents importer
(``gemini_contents.py``), so calls pair with their results, ids and thought signatures the same
way as in a request body or a ``/chat save`` checkpoint.

* ``user``: its content (a string or parts) is a ``user`` content. The CLI's context preamble
  (``<session_context>…``, recorded since 0.2x) stays: the model read it.
* ``gemini``: its text, then a ``functionCall`` per recorded tool call (``id``, ``name``,
  ``args``), is a ``model`` content; when the content is itself parts holding calls (the CLI
  records its rewritten history so), those parts are the content, as the CLI reads them. The
  call and its result share the record: the results (``result``, a list of
  ``functionResponse`` parts) are the ``user`` content after it. A cancelled or failed call
  keeps the error its result says ("[Operation Cancelled] Reason: …").
* ``info``, ``error``, ``warning``: what the CLI showed on screen, not conversation.

Recent CLIs record every tool result twice: in the call's record and again as a ``user``
message of ``functionResponse`` parts (and a rewritten history may add a third copy). A result
for a call that already has one is the same result written again, and is left out.

**Thoughts are left out.** ``thoughts[]`` holds the model's thought summaries as the CLI showed
them (a subject and a description, no signature), and the CLI never sends thought parts back
to the model; a recorded content's ``thought: true`` parts are left out for the same reason.
The history is what the model is sent again, and thoughts are not in it. A ``thoughtSignature``
the CLI recorded on a call or text part stays on that part, byte for byte, and the Gemini
exporter writes it back there.

Each entry keeps its message's ``id`` and ``timestamp``; the results' entry takes the time the
last of its calls finished. The workspace root is where the CLI says it ran
(``gemini_cli_root.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.content import IContent, Metadata, ToolCallBlock, ToolResponseBlock
from ..conversation import Conversation, FormatError
from .blocks import iso_ms
from .gemini_cli_records import Message, Recording, read_recording
from .gemini_cli_root import hashed_root, preamble_root
from .gemini_contents import from_contents
from .jsonl import SHOWN_LINES


def load(text: str, strict: bool = False) -> Conversation:
    """The conversation of a chat recording in either form."""
    recording = read_recording(text, strict)
    built = _Contents()
    for message in recording.messages:
        built.add(message)
    if not built.contents:
        kinds = sorted({str(m.record.get("type")) for m in recording.messages})
        held = f"only {', '.join(kinds)} messages" if kinds else "no messages"
        raise FormatError(f"a Gemini CLI chat recording with no conversation in it ({held})")
    entries, orphans = _answered_only(from_contents(built.contents, metadata=built.metadata))
    if not entries:
        raise FormatError("a Gemini CLI chat recording with no conversation in it (results only)")
    return Conversation(
        tuple(entries),
        workspace_root=_root(recording, text),
        warnings=(*_skipped_lines(recording), *recording.warnings, *built.warnings(), *orphans),
        incomplete=None if recording.skipped is None else recording.skipped.describe(),
    )


def _answered_only(entries: list[IContent]) -> tuple[list[IContent], tuple[str, ...]]:
    """The entries without the results that answer no call before them (a record of a result
    whose call the recording does not hold: the CLI would send it nowhere either), and a
    warning for each, naming the entry, never content."""
    called: set[str] = set()
    kept: list[IContent] = []
    warnings: list[str] = []
    for index, entry in enumerate(entries):
        called.update(b.id for b in entry.blocks if isinstance(b, ToolCallBlock))
        blocks = [
            b for b in entry.blocks if not isinstance(b, ToolResponseBlock) or b.call_id in called
        ]
        if len(blocks) < len(entry.blocks):
            warnings.append(f"entry {index}: a result that answers no call was left out")
            if not blocks:
                continue
            entry = entry.with_blocks(blocks)
        kept.append(entry)
    return kept, tuple(warnings)


def _skipped_lines(recording: Recording) -> tuple[str, ...]:
    return () if recording.skipped is None else (recording.skipped.warning(),)


def _root(recording: Recording, text: str) -> str | None:
    """The project root whose hash the recording names; else its first workspace directory;
    else the folder its context preamble names."""
    project_hash = recording.metadata.get("projectHash")
    if isinstance(project_hash, str):
        found = hashed_root(project_hash, (text,))
        if found is not None:
            return found
    directories = recording.metadata.get("directories")
    if isinstance(directories, list) and directories and isinstance(directories[0], str):
        return directories[0]
    for message in recording.messages:
        if message.record.get("type") == "user":
            root = preamble_root(_text_of(message.record.get("content")))
            if root is not None:
                return root
    return None


def _text_of(content: object) -> str:
    return "\n".join(str(p.get("text", "")) for p in _parts(content) if "text" in p)


def _parts(content: object) -> list[dict[str, Any]]:
    """A recorded content as Gemini parts (the CLI's ``ensurePartArray``): a string is one
    text part, a part list stays (strings in it become text parts), one part is a list of it."""
    if isinstance(content, str):
        return [{"text": content}] if content.strip() else []
    items = content if isinstance(content, list) else [content]
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            if item.strip():
                out.append({"text": item})
        elif isinstance(item, Mapping):
            out.append(dict(item))
    return out


class _Contents:
    """The Gemini contents of the conversation so far, each with its entry's metadata, and
    the ids of the calls already answered."""

    def __init__(self) -> None:
        self.contents: list[dict[str, Any]] = []
        self.metadata: list[Metadata | None] = []
        self.answered: set[str] = set()
        self.bad_calls: list[str] = []

    def add(self, message: Message) -> None:
        record = message.record
        kind = record.get("type")
        meta = _metadata(record.get("id"), iso_ms(record.get("timestamp")))
        if kind == "user":
            self._push("user", self._new_answers(_parts(record.get("content"))), meta)
        elif kind == "gemini":
            self._model(message, meta)

    def _model(self, message: Message, meta: Metadata) -> None:
        record = message.record
        parts = [p for p in _parts(record.get("content")) if p.get("thought") is not True]
        calls = self._calls(record.get("toolCalls"), message.where)
        if not any("functionCall" in p for p in parts):
            parts.extend({"functionCall": _call_part(call)} for call in calls)
        self._push("model", parts, meta)
        answers = [part for call in calls for part in _result_parts(call)]
        finished = [iso_ms(call.get("timestamp")) for call in calls]
        stamps = [t for t in finished if t is not None]
        at = max(stamps) if stamps else meta.timestamp
        self._push("user", self._new_answers(answers), _metadata(f"{meta.id}_response", at))

    def _calls(self, raw: object, where: str) -> list[Mapping[str, Any]]:
        if raw is None:
            return []
        items = raw if isinstance(raw, list) else [raw]
        calls = [c for c in items if isinstance(c, Mapping) and isinstance(c.get("name"), str)]
        if len(calls) < len(items):
            self.bad_calls.append(where)
        return calls

    def _new_answers(self, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``parts`` without the results of calls already answered (the CLI's second copy)."""
        out: list[dict[str, Any]] = []
        for part in parts:
            response = part.get("functionResponse")
            answer_id = response.get("id") if isinstance(response, Mapping) else None
            if isinstance(answer_id, str) and answer_id:
                if answer_id in self.answered:
                    continue
                self.answered.add(answer_id)
            out.append(part)
        return out

    def _push(self, role: str, parts: list[dict[str, Any]], meta: Metadata) -> None:
        if parts:
            self.contents.append({"role": role, "parts": parts})
            self.metadata.append(meta)

    def warnings(self) -> tuple[str, ...]:
        if not self.bad_calls:
            return ()
        shown = ", ".join(self.bad_calls[:SHOWN_LINES])
        more = ", …" if len(self.bad_calls) > SHOWN_LINES else ""
        return (
            f"skipped the tool calls without a name in {len(self.bad_calls)} message(s): "
            f"{shown}{more}",
        )


def _metadata(message_id: object, timestamp: int | None) -> Metadata:
    fields: dict[str, Any] = {}
    if timestamp is not None:
        fields["timestamp"] = timestamp
    if isinstance(message_id, str):
        fields["id"] = message_id
    return Metadata.model_validate(fields)


def _call_part(call: Mapping[str, Any]) -> dict[str, Any]:
    part: dict[str, Any] = {"name": call["name"], "args": call.get("args")}
    if isinstance(call.get("id"), str) and call["id"]:
        part["id"] = call["id"]
    return part


def _result_parts(call: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A recorded call's result as parts: its ``functionResponse`` list as it is, a string as
    the output of one (how the CLI reads either back)."""
    result = call.get("result")
    if isinstance(result, str):
        response = {"name": call["name"], "response": {"output": result}}
        if isinstance(call.get("id"), str):
            response["id"] = call["id"]
        return [{"functionResponse": response}]
    if isinstance(result, list | Mapping):
        return _parts(result)
    return []
