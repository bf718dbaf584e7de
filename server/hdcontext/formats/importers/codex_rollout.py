"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) to IContent.

A rollout is one ``{timestamp, type, payload}`` record a line, by ``type``:

* ``session_meta``: the session. Its ``cwd`` is the workspace root, and its
  ``base_instructions`` (0.98 on) the system prompt. A resumed session opens with two, its own
  and then its parent's, and replays the parent's items: they are the beginning of its
  conversation and read as any other.
* ``turn_context``: each turn's ``cwd`` and ``model``. The ``ai`` entries of the turn carry them
  (``metadata.cwd``, ``metadata.model``): the shell rules run a call that names no ``workdir`` in
  that directory (``core/density/file_rules.entry_cwd``), and a patch's paths start there.
  0.34 writes none, and the session's ``cwd`` stands in: Codex runs each command in a fresh
  shell, so a ``cd`` in one call never moves the next. The last ``model`` is the
  conversation's (``Conversation.model``), and whatever it is the API is OpenAI's
  (``Conversation.provider``).
* ``response_item``: the conversation, read by ``responses_items.py``; a ``ghost_snapshot`` is
  Codex's git bookkeeping, not conversation. An output that is a refusal rather than what a
  command printed is an error (``codex_outputs.py``).
* ``event_msg``: the same conversation again for the UI (``user_message``, ``agent_message``,
  ``agent_reasoning``) beside token counts and task events. Not read: it would count twice.
* ``compacted``: Codex compacted the session. Its ``replacement_history`` replaces everything
  before it, as Codex replaces it when it resumes the session; an older record with only the
  summary ``message`` leaves the user's own messages and the summary after them.

The first messages are the harness's context (``# AGENTS.md instructions…``,
``<environment_context>``, the developer's ``<permissions instructions>``): they stay as the
conversation has them, except that developer messages before anything else join the system
prompt after ``base_instructions``, as the OpenAI importer reads leading system and developer
messages: a request sends them first, and a conversion to chat messages reads them back so.

A rollout that holds nothing but that context (a session opened and left) has no
conversation: it is refused in one line, as an empty Claude Code log is. A line that is not a
JSON record is skipped as in any JSON Lines log (``jsonl.py``); a record that is not the shape
its type says is skipped with a warning that names its kind and line, never its content.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

from ...core.content import IContent, Metadata, TextBlock
from ..conversation import Conversation, FormatError, entry_role
from .blocks import iso_ms
from .codex_outputs import failed
from .jsonl import Lines, read_lines
from .responses_items import ItemBuilder, Malformed

RECORD_TYPES = frozenset(
    {"session_meta", "turn_context", "response_item", "event_msg", "compacted"}
)
CONTEXT_MARKERS: tuple[str, ...] = (
    "<environment_context>",
    "# AGENTS.md instructions",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<personality_spec>",
    "<turn_aborted>",
)
"""How the harness's own messages open (what the user never typed)."""
PROVIDER = "openai"
"""Codex speaks OpenAI's Responses API, whichever model it names (or, before 0.40, does not)."""
SHOWN_LINES = 5
_NAME = re.compile(r"^[A-Za-z0-9_.:-]{1,40}$")


def is_record(record: Mapping[str, Any]) -> bool:
    """A rollout's record: a known ``type`` and a ``payload`` object."""
    return record.get("type") in RECORD_TYPES and isinstance(record.get("payload"), Mapping)


def is_context_text(text: str) -> bool:
    return text.lstrip().startswith(CONTEXT_MARKERS)


def load(text: str, strict: bool = False) -> Conversation:
    """The conversation of a rollout; FormatError when it holds none."""
    lines = read_lines(text, strict)
    rollout = _Rollout()
    for number, record in lines.records:
        rollout.read(number, record)
    return rollout.conversation(lines)


class _Rollout:
    def __init__(self) -> None:
        self.items = ItemBuilder(failed=failed)
        self.root: str | None = None
        self.system: list[str] = []
        self.cwd: str | None = None
        self.model: str | None = None
        self.leading = True  # nothing but developer messages so far
        self.spoken = 0  # items that are not the harness's context
        self.context = 0
        self.kinds: Counter[str] = Counter()
        self.malformed: list[tuple[int, str]] = []
        self.unread: Counter[str] = Counter()  # item types not read, by name
        self.compactions: list[tuple[int, int]] = []  # (line, items that replaced the rest)

    # -- records --------------------------------------------------------------------------

    def read(self, number: int, record: Mapping[str, Any]) -> None:
        kind = record.get("type")
        payload = record.get("payload")
        self.kinds[str(kind) if isinstance(kind, str) and _NAME.match(kind) else "other"] += 1
        if kind not in RECORD_TYPES:
            return
        if not isinstance(payload, Mapping):
            self.malformed.append((number, f"{kind} without a payload object"))
            return
        stamp = iso_ms(record.get("timestamp"))
        if kind == "session_meta":
            self._session(payload)
        elif kind == "turn_context":
            self.cwd = _text(payload.get("cwd")) or self.cwd
            self.model = _text(payload.get("model")) or self.model
        elif kind == "response_item":
            self._item(payload, stamp, number)
        elif kind == "compacted":
            self._compacted(payload, stamp, number)

    def _session(self, payload: Mapping[str, Any]) -> None:
        cwd = _text(payload.get("cwd"))
        if self.root is None and cwd is not None:
            self.root = cwd
            self.cwd = self.cwd or cwd
        base = payload.get("base_instructions")
        if isinstance(base, Mapping):
            base = base.get("text")
        if isinstance(base, str) and base and not self.system:
            self.system.append(base)

    def _item(self, item: Mapping[str, Any], stamp: int | None, number: int) -> None:
        kind = item.get("type")
        if kind == "ghost_snapshot":
            return
        if kind == "message" and item.get("role") == "developer" and self.leading:
            text = _message_text(item)
            if text is not None:
                self.system.append(text)
                return
        self.leading = False
        self._add(item, stamp, number, "response_item")

    def _add(self, item: Mapping[str, Any], stamp: int | None, number: int, where: str) -> None:
        try:
            read = self.items.add(item, self._ai_meta(stamp), Metadata(timestamp=stamp))
        except Malformed as exc:
            self.malformed.append((number, f"{where} ({exc})"))
            return
        if not read:
            kind = item.get("type")
            self.unread[kind if isinstance(kind, str) and _NAME.match(kind) else "other"] += 1
        elif _is_context(item):
            self.context += 1
        else:
            self.spoken += 1

    def _ai_meta(self, stamp: int | None) -> Metadata:
        fields: dict[str, Any] = {"timestamp": stamp}
        if self.cwd is not None:
            fields["cwd"] = self.cwd
        if self.model is not None:
            fields["model"] = self.model
        return Metadata.model_validate(fields)

    def _compacted(self, payload: Mapping[str, Any], stamp: int | None, number: int) -> None:
        history = payload.get("replacement_history")
        summary = payload.get("message")
        self.leading = False
        if isinstance(history, list):
            self.items.reset()
            for item in history:
                if isinstance(item, Mapping):
                    self._add(item, stamp, number, "compacted replacement item")
                else:
                    self.malformed.append((number, "compacted replacement item not an object"))
            self.compactions.append((number, len(history)))
        elif isinstance(summary, str) and summary.strip():
            kept = [e for e in self.items.entries if _typed_by_user(e)]
            self.items.reset()
            self.items.entries.extend(kept)
            summary_entry = IContent(
                speaker="human",
                blocks=(TextBlock(text=summary),),
                metadata=Metadata(timestamp=stamp),
            )
            self.items.entries.append(summary_entry)
            self.compactions.append((number, len(kept) + 1))
        else:
            self.malformed.append((number, "compacted without replacement_history or message"))

    # -- the conversation -----------------------------------------------------------------

    def conversation(self, lines: Lines) -> Conversation:
        if not self.spoken:
            raise FormatError(f"a Codex rollout with no conversation in it: {self._what()}")
        warnings = [*lines.warnings, *self._notes()]
        incomplete = None if lines.skipped is None else lines.skipped.describe()
        return Conversation(
            tuple(self.items.entries),
            system="\n\n".join(self.system) if self.system else None,
            workspace_root=self.root,
            warnings=tuple(warnings),
            incomplete=incomplete,
            model=self.model,
            provider=PROVIDER,
        )

    def _what(self) -> str:
        if self.context:
            noun = "message" if self.context == 1 else "messages"
            return f"only the harness's context ({self.context} {noun}), no user message or reply"
        if not self.kinds:
            return "the file is empty"
        counts = ", ".join(
            f"{n} {kind} record{'s' if n > 1 else ''}" for kind, n in self.kinds.items()
        )
        return f"no user message or reply ({counts})"

    def _notes(self) -> list[str]:
        notes: list[str] = []
        if self.malformed:
            shown = ", ".join(f"line {n}: {what}" for n, what in self.malformed[:SHOWN_LINES])
            more = ", …" if len(self.malformed) > SHOWN_LINES else ""
            notes.append(
                f"skipped {len(self.malformed)} record(s) not in the shape their type says "
                f"({shown}{more})"
            )
        if self.unread:
            kinds = ", ".join(f"{kind} ({n})" for kind, n in self.unread.most_common())
            notes.append(f"left out response items of a type not read: {kinds}")
        if self.items.orphans:
            notes.append(
                f"left out {self.items.orphans} tool output(s) with no call before them, or a "
                "second output for one call (Codex leaves them out too)"
            )
        for number, count in self.compactions:
            notes.append(
                f"Codex compacted this session on line {number}: the {count} item(s) it kept "
                "stand for everything before them"
            )
        return notes


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _message_text(item: Mapping[str, Any]) -> str | None:
    """The text of a message made of text parts only."""
    content = item.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts: list[str] = []
    for part in content:
        if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
            return None
        texts.append(part["text"])
    return "\n".join(texts)


def _is_context(item: Mapping[str, Any]) -> bool:
    """A message the harness wrote: a developer's, or a user's that opens as context does."""
    if item.get("type") != "message":
        return False
    if item.get("role") == "developer":
        return True
    text = _message_text(item)
    return item.get("role") == "user" and text is not None and is_context_text(text)


def _typed_by_user(entry: IContent) -> bool:
    """A human entry the user wrote (what Codex keeps of the history when it compacts)."""
    if entry.speaker != "human" or entry_role(entry.metadata) is not None:
        return False
    first = entry.blocks[0] if entry.blocks else None
    return not (isinstance(first, TextBlock) and is_context_text(first.text))
