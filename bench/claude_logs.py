"""Claude Code's logs read back into the ``POST /v1/messages`` bodies it sent, call by call.

A Claude Code log (``~/.claude/projects/<project>/<session>.jsonl``, described in the
transcripts' README) keeps the conversation as records, not requests. Claude Code sends its
whole conversation every call, normalized as its ``normalizeMessagesForAPI`` does before it
goes: the records of one model message (one ``message.id``, one content block each) joined into
one assistant message, the user records between two model messages (the tool results, with
parallel calls written between the model message's own records, and the user's text) joined
into one user message after it. So request *k*'s ``messages`` are every message before the
*k*-th model message. The thread is the log's main one (the records without ``isSidechain``),
or, in a sub-agent's own file, its records. A model message that follows another with no user
message between (none in the shared data) is joined to it, as the API reads two assistant
messages in a row; it makes no call of its own. A model message's text block of whitespace
only (Claude Code 2.1 logs one before a thinking block) is not sent: the API refuses it.

What the log does not record is stood in for, as ``bench/proxy.py`` sends it: the system
prompt (Claude Code's two blocks, each with its breakpoint), the tools (``proxy.TOOLS``), and
the client's breakpoint on the last block of the last message (``proxy._marked_last``). The
other fields are those Claude Code sends (``metadata.user_id``, ``max_tokens``, ``stream``), in
its order, the body compact JSON with its text unescaped, as JavaScript's ``JSON.stringify``
writes it. Every request names one model (``MODEL``), so that both paths plan for one price
row. Each call's time is when its request went (the record before the answer's first) and when
its answer ended (the answer's last record); each call's real input (the three figures of its
usage, summed) sizes the prompt the log leaves out (``responses_units.hidden_prompt``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .proxy import TOOLS, _marked_last
from .transcripts import TRANSCRIPTS, _name

LOGS = TRANSCRIPTS / "claude-code-log"
"""The whole real-project set (``claude-code/`` holds copies of four of its sessions)."""
MODEL = "claude-sonnet-4-5"
USER_AGENT = "claude-cli/2.0.14 (external, cli)"
MAX_TOKENS = 32000
SYSTEM: list[dict[str, Any]] = [
    {
        "type": "text",
        "text": "You are Claude Code, Anthropic's official CLI for Claude.",
        "cache_control": {"type": "ephemeral"},
    },
    {
        "type": "text",
        "text": "You are an interactive CLI tool that helps users with software engineering "
        "tasks. " * 60,
        "cache_control": {"type": "ephemeral"},
    },
]
"""Claude Code 2.0's system prompt as it sends it: two blocks, each with its breakpoint (the
text a stand-in; the bill sizes the prompt from the real usage)."""
TOOL_ENDS = "tool_use"
PERSON_ENDS = "end_turn"


@dataclass(frozen=True)
class Call:
    """One model call: the messages it sent and what the log says of its answer."""

    index: int
    messages: int
    """How many of the log's messages the request sends (the first ``messages``)."""
    at: int
    """When the request went (ms since the epoch)."""
    answered: int
    """When its answer ended."""
    stop_reason: str
    """``tool_use`` when the answer calls a tool, else ``end_turn``."""
    output_tokens: int
    real_input: int | None
    """Every input token the provider billed (uncached, read, written), when the log says."""


@dataclass(frozen=True)
class Log:
    """One thread of a Claude Code log as the requests it made."""

    name: str
    path: Path
    messages: list[dict[str, Any]]
    calls: list[Call]
    session_uuid: str = ""

    def fields(self, call: Call) -> dict[str, Any]:
        """The request of ``call`` as Claude Code sends it, before encoding."""
        return {
            "model": MODEL,
            "messages": _marked_last(self.messages[: call.messages]),
            "system": SYSTEM,
            "tools": TOOLS,
            "metadata": {"user_id": f"user_bench_account__session_{self.session_uuid}"},
            "max_tokens": MAX_TOKENS,
            "stream": True,
        }

    def body(self, call: Call) -> bytes:
        """``fields`` as the bytes Claude Code writes."""
        return orjson.dumps(self.fields(call))


def find(root: Path = LOGS, min_calls: int = 3) -> list[Log]:
    """Every log under ``root`` with ``min_calls`` model calls or more, the largest first."""
    logs = [read(path) for path in sorted(root.rglob("*.jsonl"))]
    kept = [log for log in logs if len(log.calls) >= min_calls]
    return sorted(kept, key=lambda log: (-len(log.calls), log.name))


def ms(stamp: object) -> int | None:
    if not isinstance(stamp, str):
        return None
    try:
        return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _records(path: Path) -> list[dict[str, Any]]:
    """The thread's user and assistant records that carry a message, in the file's order."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        if (
            isinstance(message, dict)
            and record.get("type") in ("user", "assistant")
            and message.get("role") == record.get("type")
            and message.get("content") is not None
            and record.get("uuid") not in seen
        ):
            if isinstance(record.get("uuid"), str):
                seen.add(record["uuid"])
            out.append(record)
    main = [r for r in out if not r.get("isSidechain")]
    return main or out


def _blocks(content: object) -> list[Any]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return list(content) if isinstance(content, list) else []


@dataclass
class _Reader:
    """The messages and calls of one thread, built record by record."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    pending: list[Any] = field(default_factory=list)
    """User content since the open model message (goes after it)."""
    pending_text: str | None = None
    """The one user record's text since then, when it came as a string (sent as it came)."""
    pending_records: int = 0
    open_id: object = None
    last_at: int = 0
    """The latest time seen so far (a call's time never goes back)."""

    def user(self, record: Mapping[str, Any]) -> None:
        content = record["message"]["content"]
        self.pending_text = (
            content if isinstance(content, str) and not self.pending_records else None
        )
        self.pending.extend(_blocks(content))
        self.pending_records += 1
        self._seen(record)

    def assistant(self, record: Mapping[str, Any]) -> None:
        message = record["message"]
        blocks = [b for b in _blocks(message.get("content")) if not _blank(b)]
        usage = message.get("usage") if isinstance(message.get("usage"), Mapping) else {}
        if message.get("id") == self.open_id and self.messages:
            self.messages[-1]["content"].extend(blocks)
            self._answer_goes_on(record, usage)
            return
        self._flush()
        self.open_id = message.get("id")
        if self.messages and self.messages[-1]["role"] == "assistant":
            self.messages[-1]["content"].extend(blocks)  # two model messages in a row
            self._answer_goes_on(record, usage)
            return
        at = self.last_at
        stamp = max(ms(record.get("timestamp")) or at, at)
        self.calls.append(
            Call(
                index=len(self.calls),
                messages=len(self.messages),
                at=at or stamp,
                answered=stamp,
                stop_reason=PERSON_ENDS,
                output_tokens=_count(usage.get("output_tokens")),
                real_input=_real_input(usage),
            )
        )
        self.messages.append({"role": "assistant", "content": blocks})
        self._answer_goes_on(record, usage)

    def _answer_goes_on(self, record: Mapping[str, Any], usage: Mapping[str, Any]) -> None:
        """A record of the call's answer: when it ended, how, its output so far."""
        self._seen(record)
        if not self.calls:
            return
        call = self.calls[-1]
        calls_tool = any(
            isinstance(b, Mapping) and b.get("type") == "tool_use"
            for b in self.messages[-1]["content"]
        )
        self.calls[-1] = Call(
            index=call.index,
            messages=call.messages,
            at=call.at,
            answered=max(call.answered, self.last_at),
            stop_reason=TOOL_ENDS if calls_tool else PERSON_ENDS,
            output_tokens=max(call.output_tokens, _count(usage.get("output_tokens"))),
            real_input=call.real_input,
        )

    def _seen(self, record: Mapping[str, Any]) -> None:
        stamp = ms(record.get("timestamp"))
        if stamp is not None:
            self.last_at = max(self.last_at, stamp)

    def _flush(self) -> None:
        """The user content since the open model message, one user message after it."""
        if not self.pending_records:
            return
        content: str | list[Any] = (
            self.pending_text if self.pending_text is not None else self.pending
        )
        if self.messages and self.messages[-1]["role"] == "user":
            self.messages[-1]["content"] = [
                *_blocks(self.messages[-1]["content"]),
                *_blocks(content),
            ]
        else:
            self.messages.append({"role": "user", "content": content})
        self.pending, self.pending_text, self.pending_records = [], None, 0


def read(path: Path) -> Log:
    """The log at ``path`` as the requests its thread made: a call before each model message
    that follows a user message (the first message is the user's; a log that opens with the
    model's makes no call for it)."""
    reader = _Reader()
    records = _records(path)
    for record in records:
        if record["type"] == "user":
            reader.user(record)
        else:
            reader.assistant(record)
    reader._flush()
    calls = [c for c in reader.calls if c.messages > 0]
    calls = [
        Call(k, c.messages, c.at, c.answered, c.stop_reason, c.output_tokens, c.real_input)
        for k, c in enumerate(calls)
    ]
    uuid = next((str(r["sessionId"]) for r in records if r.get("sessionId")), "")
    return Log(_name(path), path, reader.messages, calls, uuid)


def _blank(block: object) -> bool:
    """A text block of whitespace only, which the API refuses (Claude Code 2.1 logs one before
    a thinking block; it is not sent)."""
    return (
        isinstance(block, Mapping)
        and block.get("type") == "text"
        and not str(block.get("text", "")).strip()
    )


def _count(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _real_input(usage: Mapping[str, Any]) -> int | None:
    if "input_tokens" not in usage:
        return None
    return sum(
        _count(usage.get(key))
        for key in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")
    )
