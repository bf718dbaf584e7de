"""Claude Code session logs (JSONL) to IContent.

A Claude Code log is one JSON record a line. Only ``user`` and ``assistant`` records carry
conversation: command noise (``isMeta``) is skipped, and so are summaries, snapshots,
permission modes, attachments and progress records.

**Threads.** A sub-agent (the ``Task`` tool) talks to its own model in a conversation of its
own: its records say ``isSidechain: true`` and name it by ``agentId``, and newer Claude Code
versions write them to ``<session>/subagents/agent-<id>.jsonl`` (older ones to
``agent-<id>.jsonl`` beside the session, or into the session file itself). So a log is read as
threads: ``main`` (the records without ``isSidechain``) and one per agent id, and one thread is
one conversation. By default (``auto``) the main thread is read, or the file's one sub-agent
thread when it has no main thread; a file with several sub-agent threads and no main thread
needs to be told which.

**Messages.** One model message is often written as several records with the same
``message.id``, one content block each, and with parallel calls the results of the first
calls are written between them. Those records are joined into one ``ai`` entry, and the
results that follow (until the next model message) into one ``tool`` entry after it: the
message the model sent, then the one that answered it. A result's images are left out (their
text is kept): the file they came from can be read again.

Claude Code's shell keeps its working directory between calls, and every record says where it
was (``cwd``). An ``ai`` entry keeps it as ``metadata.cwd``, which the shell-command
recognition uses as the directory its calls ran in; the thread's first ``cwd`` is the
conversation's workspace root.

**Damaged logs.** A line that is not a JSON record is skipped, with one warning for the file
that counts them (``jsonl.py``), and the conversation says it is incomplete
(``Conversation.incomplete``). When one was, a tool result whose call is nowhere before it in
its thread most likely had its call on that line. Such results are dropped, with one warning
a thread, so that the rest of the session imports: kept, they would make the whole history
impossible to send (a result without its call), and the importer cannot make the call up.
``strict`` refuses the bad line itself, so nothing is dropped then.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from ...core.content import Block, IContent, Metadata, TextBlock, ToolResponseBlock
from ..conversation import Conversation, FormatError
from .anthropic_messages import assistant_blocks, media_block
from .blocks import iso_ms
from .jsonl import Skipped, read_lines

MAIN = "main"
AUTO = "auto"
ALL = "all"
_MESSAGE_TYPES = ("user", "assistant")


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
    def __init__(self, lines_lost: bool = False) -> None:
        self.entries: list[IContent] = []
        self.tool_names: dict[str, str] = {}
        self.lines_lost = lines_lost
        self.dropped: list[str] = []  # call ids of results dropped for want of their call
        self._open_message: str | None = None  # message.id of the ai entry being joined
        self._open_index = -1  # its index in entries

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
        if message_id and message_id == self._open_message:
            # The same model message, continued after some of its calls were answered.
            joined = self.entries[self._open_index]
            self.entries[self._open_index] = joined.with_blocks((*joined.blocks, *blocks))
        else:
            self._push("ai", blocks, record)
            self._open_message = message_id if isinstance(message_id, str) else None
            self._open_index = len(self.entries) - 1

    def user(self, record: Mapping[str, Any]) -> None:
        content = (record.get("message") or {}).get("content")
        if isinstance(content, str):
            self._human([TextBlock(text=content)], record)
            return
        responses: list[Block] = []
        others: list[Block] = []
        for raw in content if isinstance(content, list) else []:
            if not isinstance(raw, Mapping):
                continue
            kind = raw.get("type")
            if kind == "tool_result":
                call_id = str(raw.get("tool_use_id"))
                if self.lines_lost and call_id not in self.tool_names:
                    self.dropped.append(call_id)
                    continue
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
            self._human(others, record)

    def _human(self, blocks: list[Block], record: Mapping[str, Any]) -> None:
        self._open_message = None
        self._push("human", blocks, record)


def from_records(records: Iterable[Mapping[str, Any]]) -> list[IContent]:
    """The entries of one thread's records (``isMeta`` ones skipped)."""
    return _build(records).entries


def _build(records: Iterable[Mapping[str, Any]], lines_lost: bool = False) -> _Builder:
    builder = _Builder(lines_lost)
    for record in records:
        if record.get("isMeta"):
            continue
        kind = record.get("type")
        if kind == "assistant":
            builder.assistant(record)
        elif kind == "user":
            builder.user(record)
    return builder


def from_jsonl(text: str) -> list[IContent]:
    """The main thread's entries (bad lines skipped)."""
    return list(load(text, thread=MAIN).entries)


@dataclass(frozen=True)
class Log:
    """A log's message records by thread (``main`` first, then agent ids as they appear),
    what else it holds, and the lines it skipped."""

    threads: dict[str, list[Mapping[str, Any]]]
    other_records: Counter[str]
    skipped: Skipped | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        """One warning for the whole file when it skipped lines."""
        return () if self.skipped is None else (self.skipped.warning(),)

    @property
    def incomplete(self) -> str | None:
        return None if self.skipped is None else self.skipped.describe()

    @property
    def agents(self) -> list[str]:
        return [t for t in self.threads if t != MAIN]


def read_log(text: str, strict: bool = False) -> Log:
    lines = read_lines(text, strict)
    threads: dict[str, list[Mapping[str, Any]]] = {}
    others: Counter[str] = Counter()
    for _, record in lines.records:
        kind = record.get("type")
        if kind not in _MESSAGE_TYPES:
            others[str(kind)] += 1
            continue
        threads.setdefault(_thread_of(record), []).append(record)
    if MAIN in threads:
        threads = {MAIN: threads.pop(MAIN), **threads}
    return Log(threads, others, lines.skipped)


def _thread_of(record: Mapping[str, Any]) -> str:
    if not record.get("isSidechain"):
        return MAIN
    agent = record.get("agentId")
    return agent if isinstance(agent, str) and agent else "sidechain"


def load(text: str, thread: str = AUTO, strict: bool = False) -> Conversation:
    """One thread of a Claude Code log (see the module's docstring for ``auto``)."""
    log = read_log(text, strict)
    name = choose_thread(log, thread)
    conversation = thread_conversation(log, name)
    notes = [*log.warnings, *conversation.warnings]
    if name == MAIN and log.agents:
        shown = ", ".join(log.agents[:5]) + (", …" if len(log.agents) > 5 else "")
        notes.append(
            f"read the main thread; the file also holds {len(log.agents)} sub-agent "
            f"thread(s) ({shown}): --thread ID reads one"
        )
    return Conversation(
        conversation.entries,
        workspace_root=conversation.workspace_root,
        warnings=tuple(notes),
        incomplete=log.incomplete,
    )


def _require_messages(log: Log) -> None:
    if not log.threads:
        raise FormatError(
            "a Claude Code log with no conversation in it: no user or assistant records "
            f"({_describe(log.other_records)})"
        )


def choose_thread(log: Log, thread: str) -> str:
    """The thread ``thread`` names in ``log``; FormatError saying what there is otherwise."""
    _require_messages(log)
    if thread == AUTO:
        if MAIN in log.threads:
            return MAIN
        if len(log.agents) == 1:
            return log.agents[0]
        raise FormatError(
            f"no main thread, and {len(log.agents)} sub-agent threads "
            f"({', '.join(log.agents)}): choose one with --thread ID, or --thread all"
        )
    if thread in log.threads:
        return thread
    known = ", ".join(log.threads)
    where = (
        ". Newer Claude Code versions write a sub-agent's thread to its own file, "
        "<session>/subagents/agent-<id>.jsonl: read that one"
        if thread not in (MAIN, ALL)
        else ""
    )
    raise FormatError(f"no thread '{thread}' in this log (threads: {known}){where}")


def thread_conversation(log: Log, name: str) -> Conversation:
    """The conversation of one thread; FormatError if its messages carry nothing."""
    records = log.threads[name]
    built = _build(records, lines_lost=log.skipped is not None)
    entries = built.entries
    if not entries:
        raise FormatError(
            f"thread '{name}' has {len(records)} user/assistant records, none with content "
            "a model would read (command noise or empty messages)"
        )
    root = next(
        (r["cwd"] for r in records if isinstance(r.get("cwd"), str) and r["cwd"]),
        None,
    )
    return Conversation(
        tuple(entries),
        workspace_root=root,
        warnings=_dropped_note(built.dropped),
        incomplete=log.incomplete,
    )


def _dropped_note(call_ids: list[str]) -> tuple[str, ...]:
    if not call_ids:
        return ()
    shown = ", ".join(call_ids[:3]) + (", …" if len(call_ids) > 3 else "")
    return (
        f"dropped {len(call_ids)} tool result(s) whose call is not in the log, most likely "
        f"on a line that could not be read ({shown})",
    )


def load_threads(text: str, strict: bool = False) -> list[tuple[str, Conversation]]:
    """Every thread of a log, each as its own conversation (``main`` first)."""
    log = read_log(text, strict)
    _require_messages(log)
    out = [(name, thread_conversation(log, name)) for name in log.threads]
    first_name, first = out[0]
    out[0] = (
        first_name,
        replace(first, warnings=(*log.warnings, *first.warnings)),
    )
    return out


def _describe(counts: Counter[str]) -> str:
    if not counts:
        return "the file is empty"
    return ", ".join(f"{n} {kind} record{'s' if n > 1 else ''}" for kind, n in counts.items())
