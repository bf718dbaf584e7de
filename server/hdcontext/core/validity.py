"""Provider validity: the one invariant every history hdcontext emits keeps (DESIGN.md
decision 4), checked here and nowhere else.

Anthropic and OpenAI reject a request whose tool calls and results are out of place, and
Anthropic one with an empty or whitespace-only text block. The rules, as this module checks
them on a sequence of turns (an assistant turn, then whatever answers it):

* every call of an assistant turn is answered in what comes right after it, before anything
  that is not a tool result: Anthropic wants each ``tool_use`` answered by a ``tool_result`` in
  the very next user message, ahead of any text; OpenAI wants an assistant message with
  ``tool_calls`` followed by one ``tool`` message per call, nothing in between;
* no result without its call in the assistant turn just before (none before any call, none
  answering a call a second time, none inside an assistant turn), no call outside an
  assistant turn, no call id used twice;
* no text that is empty or only whitespace, no message without content.

A history (IContent entries) is read as the turns the exporters make of it: an ``ai`` entry is
an assistant turn; ``tool`` and ``human`` entries are the other side, their tool responses
first (every exporter writes them first). The exporters' own output, OpenAI messages, an
Anthropic request body and Gemini ``contents``, is read into the same turns and checked by the
same rules (Gemini pairs calls and results the same way).

:func:`repair` fixes what can be fixed without inventing conversation: results that came
late (a parallel call's result written after the next assistant message) move into the turn
that must carry them, blank texts and empty entries go, and a call the source never answered
gets an error result that says so. A result whose call is nowhere before it, and a call id
used twice, cannot be fixed here: :func:`problems` reports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .content import Block, IContent, Metadata, TextBlock, ToolCallBlock, ToolResponseBlock

ProblemKind = Literal[
    "unanswered_call",
    "misplaced_response",
    "orphan_response",
    "duplicate_response",
    "duplicate_call",
    "misplaced_call",
    "blank_text",
    "empty_message",
]

UNREPAIRABLE: frozenset[str] = frozenset(
    {"orphan_response", "duplicate_response", "duplicate_call", "misplaced_call"}
)
"""Kinds :func:`repair` leaves as they are: fixing them would mean guessing."""

NO_RESULT = "no result was recorded for this call: the session ended or moved on before it answered"
"""The error of the response :func:`repair` gives a call its source never answered."""

_DESCRIPTIONS: dict[str, str] = {
    "unanswered_call": "tool call {key} is not answered right after it",
    "misplaced_response": "tool result {key} is not right after its call",
    "orphan_response": "tool result {key} has no call before it",
    "duplicate_response": "tool call {key} is answered more than once",
    "duplicate_call": "tool call id {key} is used more than once",
    "misplaced_call": "tool call {key} is not in a model turn",
    "blank_text": "a text is empty or only whitespace",
    "empty_message": "a message has no content",
}


@dataclass(frozen=True)
class Problem:
    """One way a history breaks the rules: its kind, where (the index of the entry, or of the
    message in an exported payload) and the call id it is about (``""`` for text problems)."""

    kind: str
    index: int
    key: str = ""

    def describe(self, noun: str = "entry") -> str:
        text = _DESCRIPTIONS.get(self.kind, self.kind).format(key=repr(self.key))
        return f"{noun} {self.index}: {text}"


def summary(found: Sequence[Problem], noun: str = "entry") -> str:
    """The problems in one line: the first, and how many more."""
    if not found:
        return "provider-valid"
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    return found[0].describe(noun) + more


# -- the rules, on turns ---------------------------------------------------------------------

Role = Literal["assistant", "user"]
PartKind = Literal["call", "response", "text", "other"]


@dataclass(frozen=True)
class Part:
    kind: PartKind
    key: str = ""
    blank: bool = False
    local: bool = False
    """A call or response the provider pairs by place, not by an id (Gemini's without one):
    its key means something only between a model's turn and the answer right after it, so a
    later turn may use it again."""
    name: str = ""
    """A Gemini response's function name, when it has an id: Gemini pairs a response whose
    id no call made with the oldest call of its name still unanswered that was made without
    one, as older Gemini CLIs sent them (the model's call bare, the answer under the id the
    CLI made for it)."""


@dataclass(frozen=True)
class Turn:
    """A message as the rules see it. ``user`` is anything not from the model: a user
    message, a tool message, a system message in the middle of the history."""

    role: Role
    parts: tuple[Part, ...]
    joins: bool = False
    """An assistant turn that goes on the one right before it, when that is the model's too:
    the Responses API sends a turn of the model as items of its own (its reasoning, its
    message, each call), which the rules read as one turn."""


def turn_problems(
    turns: Sequence[Turn], calls_before: Iterable[str] = (), offset: int = 0
) -> list[Problem]:
    """Every rule each turn breaks, by turn.

    With ``calls_before``, the turns are the rest of a longer sequence whose first ``offset``
    turns made these calls and are the first turns of a sequence found valid, there followed
    by an assistant turn or by nothing: the problems are those a check of the whole would
    find, indexed as in the whole. Such a prefix has answered every call it made, once each
    (its calls were closed by that assistant turn, or by the end), so its calls are all that
    is left of it for the rules; a conversation that grows by a turn is then checked for that
    turn, not again from its start.
    """
    checker = _Checker(calls=set(calls_before))
    checker.answered = set(checker.calls)
    return sorted(checker.run(turns, offset).problems, key=lambda p: p.index)


def turn_calls(turn: Turn) -> tuple[str, ...]:
    """The call ids a turn makes (what ``turn_problems`` needs of a prefix). Calls paired by
    place are not among them: a prefix that ends before a model's turn has answered them,
    and nothing after it can name them."""
    return tuple(p.key for p in turn.parts if p.kind == "call" and not p.local)


@dataclass
class _Checker:
    problems: list[Problem] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)
    answered: set[str] = field(default_factory=set)
    pending: dict[str, None] = field(default_factory=dict)  # calls of the last model turn
    local_calls: set[str] = field(default_factory=set)  # those paired by place (Part.local)
    local_answered: set[str] = field(default_factory=set)
    last_model: int = -1
    leading: bool = False  # still in the results that must open the answer to last_model

    def run(self, turns: Sequence[Turn], offset: int = 0) -> _Checker:
        previous: Role | None = None
        for index, turn in enumerate(turns, offset):
            if not turn.parts:
                self._add("empty_message", index)
            if turn.role == "assistant" and not (turn.joins and previous == "assistant"):
                self._close()
                self.last_model, self.leading = index, True
            previous = turn.role
            for part in turn.parts:
                self._part(part, turn.role, index)
        self._close()
        return self

    def _add(self, kind: str, index: int, key: str = "") -> None:
        self.problems.append(Problem(kind, index, key))

    def _close(self) -> None:
        for key in self.pending:
            self._add("unanswered_call", self.last_model, key)
        self.pending = {}
        self.local_calls.clear()
        self.local_answered.clear()

    def _part(self, part: Part, role: Role, index: int) -> None:
        calls = self.local_calls if part.local else self.calls
        if part.kind == "call":
            if role != "assistant":
                self._add("misplaced_call", index, part.key)
            elif part.key in calls:
                self._add("duplicate_call", index, part.key)
            else:
                calls.add(part.key)
                self.pending[part.key] = None
            return
        if part.kind == "response":
            place = self._place_of(part)
            if place is not None:
                self._response(place, role, index, self.local_calls, self.local_answered)
                return
            answered = self.local_answered if part.local else self.answered
            self._response(part.key, role, index, calls, answered)
            return
        if role == "user":
            self.leading = False
        if part.blank:
            self._add("blank_text", index)

    def _place_of(self, response: Part) -> str | None:
        """The call made without an id that a response with one answers by its place: the
        oldest of its name in the last model turn still unanswered, when no call has its
        id."""
        if response.local or not response.name or response.key in self.calls:
            return None
        for key in self.pending:
            if (
                key in self.local_calls
                and key not in self.local_answered
                and key.rsplit("#", 1)[0] == response.name
            ):
                return key
        return None

    def _response(
        self, key: str, role: Role, index: int, calls: set[str], answered: set[str]
    ) -> None:
        if key in answered:
            self._add("duplicate_response", index, key)
        elif key not in calls:
            self._add("orphan_response", index, key)
        elif role == "user" and self.leading and key in self.pending:
            del self.pending[key]
            answered.add(key)
        else:
            self._add("misplaced_response", index, key)


# -- IContent --------------------------------------------------------------------------------


def is_blank(block: Block) -> bool:
    return isinstance(block, TextBlock) and not block.text.strip()


def entry_turn(entry: IContent) -> Turn:
    """An entry as the exporters write it: tool responses first on the user side."""
    responses: list[Part] = []
    others: list[Part] = []
    for block in entry.blocks:
        if isinstance(block, ToolResponseBlock):
            responses.append(Part("response", block.call_id))
        elif isinstance(block, ToolCallBlock):
            others.append(Part("call", block.id))
        elif isinstance(block, TextBlock):
            others.append(Part("text", blank=not block.text.strip()))
        else:
            others.append(Part("other"))
    if entry.speaker == "ai":
        return Turn("assistant", tuple(p for b in entry.blocks for p in _ai_part(b)))
    return Turn("user", (*responses, *others))


def _ai_part(block: Block) -> Iterable[Part]:
    if isinstance(block, ToolCallBlock):
        yield Part("call", block.id)
    elif isinstance(block, ToolResponseBlock):
        yield Part("response", block.call_id)
    elif isinstance(block, TextBlock):
        yield Part("text", blank=not block.text.strip())
    else:
        yield Part("other")


def problems(history: Sequence[IContent]) -> list[Problem]:
    """Every way ``history`` breaks Anthropic's and OpenAI's rules; empty when it keeps them.
    Indices are entry indices."""
    return turn_problems([entry_turn(entry) for entry in history])


def is_valid(history: Sequence[IContent]) -> bool:
    return not problems(history)


# -- repair ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Repaired:
    entries: tuple[IContent, ...]
    notes: tuple[str, ...] = ()
    """What was changed, one line a kind of change (for the importer's warnings)."""


def repair(history: Sequence[IContent]) -> Repaired:
    """``history`` with every repairable problem fixed; a valid history comes back as it is
    (the same entry objects). What it changed is in ``notes``."""
    if not problems(history):
        return Repaired(tuple(history))
    notes: list[str] = []
    entries, blanks = _without_blanks(history)
    if blanks:
        notes.append(f"dropped {blanks} empty or whitespace-only text block(s)")
    before = len(entries)
    entries = [e for e in entries if e.blocks]
    entries, moved = _move_late_results(entries)
    if moved:
        notes.append(f"moved {moved} tool result(s) next to the call they answer")
    entries = [e for e in entries if e.blocks]
    if len(entries) < before:
        notes.append(f"dropped {before - len(entries)} entries left empty")
    entries, answered = _answer_unanswered(entries)
    if answered:
        notes.append(f"gave {answered} unanswered tool call(s) an error result ({NO_RESULT})")
    return Repaired(tuple(entries), tuple(notes))


def _without_blanks(history: Sequence[IContent]) -> tuple[list[IContent], int]:
    out: list[IContent] = []
    dropped = 0
    for entry in history:
        kept = [b for b in entry.blocks if not is_blank(b)]
        dropped += len(entry.blocks) - len(kept)
        out.append(entry if len(kept) == len(entry.blocks) else entry.with_blocks(kept))
    return out, dropped


def _homes(entries: Sequence[IContent]) -> dict[str, int]:
    """Call id -> index of the ai entry that made the call (the first, if ids repeat)."""
    homes: dict[str, int] = {}
    for index, entry in enumerate(entries):
        if entry.speaker != "ai":
            continue
        for block in entry.blocks:
            if isinstance(block, ToolCallBlock):
                homes.setdefault(block.id, index)
    return homes


def _move_late_results(entries: list[IContent]) -> tuple[list[IContent], int]:
    """Each misplaced response whose call an earlier ai entry made, moved to the answer
    right after that entry."""
    misplaced = {(p.index, p.key) for p in problems(entries) if p.kind == "misplaced_response"}
    if not misplaced:
        return entries, 0
    homes = _homes(entries)
    late: dict[int, list[ToolResponseBlock]] = {}
    out: list[IContent] = []
    for index, entry in enumerate(entries):
        kept: list[Block] = []
        for block in entry.blocks:
            home = homes.get(block.call_id) if isinstance(block, ToolResponseBlock) else None
            if (
                isinstance(block, ToolResponseBlock)
                and (index, block.call_id) in misplaced
                and home is not None
                and home <= index
            ):
                late.setdefault(home, []).append(block)
            else:
                kept.append(block)
        out.append(entry if len(kept) == len(entry.blocks) else entry.with_blocks(kept))
    return _insert_answers(out, late), sum(len(v) for v in late.values())


def _answer_unanswered(entries: list[IContent]) -> tuple[list[IContent], int]:
    names = {
        b.id: b.name
        for e in entries
        if e.speaker == "ai"
        for b in e.blocks
        if isinstance(b, ToolCallBlock)
    }
    missing: dict[int, list[ToolResponseBlock]] = {}
    for problem in problems(entries):
        if problem.kind == "unanswered_call":
            response = ToolResponseBlock(
                call_id=problem.key,
                tool_name=names.get(problem.key, "unknown"),
                result=None,
                error=NO_RESULT,
            )
            missing.setdefault(problem.index, []).append(response)
    return _insert_answers(entries, missing), sum(len(v) for v in missing.values())


def _insert_answers(
    entries: list[IContent], answers: Mapping[int, list[ToolResponseBlock]]
) -> list[IContent]:
    """``answers[i]`` added to the answer right after ai entry ``i``: into the next entry
    when it already opens with responses, else as a new ``tool`` entry."""
    out: list[IContent] = []
    pending: list[ToolResponseBlock] = []
    for index, entry in enumerate(entries):
        if pending:
            if entry.speaker != "ai" and any(
                isinstance(b, ToolResponseBlock) for b in entry.blocks
            ):
                entry = _with_responses(entry, pending)
            else:
                out.append(_answer_entry(pending, entries[index - 1]))
            pending = []
        out.append(entry)
        pending = list(answers.get(index, ()))
    if pending:
        out.append(_answer_entry(pending, entries[-1]))
    return out


def _with_responses(entry: IContent, responses: Sequence[ToolResponseBlock]) -> IContent:
    last = max(i for i, b in enumerate(entry.blocks) if isinstance(b, ToolResponseBlock))
    blocks = [*entry.blocks[: last + 1], *responses, *entry.blocks[last + 1 :]]
    return entry.with_blocks(blocks)


def _answer_entry(responses: Sequence[ToolResponseBlock], call_entry: IContent) -> IContent:
    stamp = call_entry.timestamp
    metadata = Metadata(timestamp=stamp) if stamp is not None else None
    if metadata is None:
        return IContent(speaker="tool", blocks=tuple(responses))
    return IContent(speaker="tool", blocks=tuple(responses), metadata=metadata)


# -- exported payloads -----------------------------------------------------------------------


def payload_problems(fmt: str, payload: object) -> list[Problem]:
    """The rules on an exporter's output (``openai`` messages, an ``anthropic`` body,
    ``gemini`` contents); indices are message indices. ``icontent`` is a history."""
    if fmt == "openai":
        return turn_problems(openai_turns(payload))
    if fmt == "anthropic":
        return turn_problems(anthropic_turns(payload))
    if fmt == "gemini":
        return turn_problems(gemini_turns(payload))
    if fmt == "openai-responses":
        return turn_problems(responses_turns(payload))
    raise ValueError(f"no provider rules for {fmt!r}")


def _text_part(text: object) -> Part:
    return Part("text", blank=not (isinstance(text, str) and text.strip()))


def _messages(payload: object, key: str) -> list[Any]:
    listed = payload.get(key) if isinstance(payload, Mapping) else payload
    return listed if isinstance(listed, list) else []


def openai_turns(payload: object) -> list[Turn]:
    """Chat-completions messages. Leading system/developer messages are not turns (the
    pairing rules start after them); one in the middle is a user-side turn."""
    turns: list[Turn] = []
    for message in _messages(payload, "messages"):
        if not isinstance(message, Mapping):
            continue
        if message.get("role") in OPENAI_PROMPT_ROLES and not turns:
            continue
        turn = openai_turn(message)
        if turn is not None:
            turns.append(turn)
    return turns


OPENAI_PROMPT_ROLES = frozenset({"system", "developer"})
"""Roles whose messages, before any other, are the prompt and not turns (``openai_turns``)."""


def openai_turn(message: object) -> Turn | None:
    """One chat-completions message as a turn (a system message counts as a user-side one:
    ``openai_turns`` leaves out the leading ones); ``None`` for what is not a message."""
    if not isinstance(message, Mapping):
        return None
    role = message.get("role")
    if role == "tool":
        return Turn("user", (Part("response", str(message.get("tool_call_id"))),))
    parts = list(_openai_content(message.get("content")))
    reasoning = message.get("reasoning_content")
    if isinstance(reasoning, str) and reasoning:
        parts.append(Part("other"))  # DeepSeek's and vLLM's field: content of its own
    if role == "assistant":
        for call in message.get("tool_calls") or []:
            call_id = call.get("id") if isinstance(call, Mapping) else None
            parts.append(Part("call", str(call_id)))
        return Turn("assistant", tuple(parts))
    return Turn("user", tuple(parts))


def _openai_content(content: object) -> Iterable[Part]:
    if content is None:
        return
    if isinstance(content, str):
        yield _text_part(content)
        return
    for part in content if isinstance(content, list) else []:
        if isinstance(part, Mapping) and part.get("type") == "text":
            yield _text_part(part.get("text"))
        else:
            yield Part("other")


def anthropic_turns(payload: object) -> list[Turn]:
    """A Messages API body (or its ``messages``). A user message's ``tool_result`` blocks are
    taken in the order written: Anthropic wants them before any text."""
    turns: list[Turn] = []
    for message in _messages(payload, "messages"):
        turn = anthropic_turn(message)
        if turn is not None:
            turns.append(turn)
    return turns


def anthropic_turn(message: object) -> Turn | None:
    """One Messages API message as a turn; ``None`` for what is not a message."""
    if not isinstance(message, Mapping):
        return None
    role: Role = "assistant" if message.get("role") == "assistant" else "user"
    content = message.get("content")
    if isinstance(content, str):
        return Turn(role, (_text_part(content),))
    parts: list[Part] = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, Mapping) else None
        if kind == "text":
            parts.append(_text_part(block.get("text")))
        elif kind == "tool_use":
            parts.append(Part("call", str(block.get("id"))))
        elif kind == "tool_result":
            parts.append(Part("response", str(block.get("tool_use_id"))))
        else:
            parts.append(Part("other"))
    return Turn(role, tuple(parts))


RESPONSES_CALLS = {
    "function_call": "call_id",
    "custom_tool_call": "call_id",
    "local_shell_call": "call_id",
}
RESPONSES_OUTPUTS = {
    "function_call_output": "call_id",
    "custom_tool_call_output": "call_id",
    "local_shell_call_output": "id",
}
"""The Responses API's calls and outputs, with the key that holds the call's id."""


def responses_turns(payload: object) -> list[Turn]:
    """Responses API ``input`` items (or a body holding them). Leading system/developer
    messages are not turns, as in chat completions."""
    turns: list[Turn] = []
    for item in _messages(payload, "input"):
        if isinstance(item, Mapping) and item.get("role") in OPENAI_PROMPT_ROLES and not turns:
            continue
        turn = responses_turn(item)
        if turn is not None:
            turns.append(turn)
    return turns


def responses_turn(item: object) -> Turn | None:
    """One Responses API item as a turn: each item of the model's side joins the model's
    turn before it; an output answers its call; a message of another role is the user's."""
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type") or ("message" if "role" in item else None)
    if kind in RESPONSES_OUTPUTS:
        return Turn("user", (Part("response", str(item.get(RESPONSES_OUTPUTS[kind]))),))
    if kind in RESPONSES_CALLS:
        return Turn("assistant", (Part("call", str(item.get(RESPONSES_CALLS[kind]))),), True)
    if kind != "message":
        return Turn("assistant", (Part("other"),), True)  # reasoning, a server tool's call
    parts = tuple(_responses_content(item.get("content")))
    return Turn("assistant" if item.get("role") == "assistant" else "user", parts, True)


def _responses_content(content: object) -> Iterable[Part]:
    if isinstance(content, str):
        yield _text_part(content)
        return
    for part in content if isinstance(content, list) else []:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in ("input_text", "output_text"):
            yield _text_part(part.get("text"))
        else:
            yield Part("other")


def gemini_turns(payload: object) -> list[Turn]:
    """Gemini ``contents`` (or a body holding them)."""
    turns: list[Turn] = []
    for content in _messages(payload, "contents"):
        turn = gemini_turn(content)
        if turn is not None:
            turns.append(turn)
    return turns


def gemini_turn(content: object) -> Turn | None:
    """One Gemini content as a turn; ``None`` for what is not a content. A call or response
    without an ``id`` is paired by its name and place among the turn's calls of that name,
    as Gemini pairs them (``Part.local``), and so is a response whose id no call made
    (``Part.name``). A user's responses come first, in their order:
    Gemini reads a response wherever it stands in the content that answers."""
    if not isinstance(content, Mapping):
        return None
    model = content.get("role") == "model"
    seen: dict[str, int] = {}
    responses: list[Part] = []
    parts: list[Part] = []
    raw_parts = content.get("parts")
    for part in raw_parts if isinstance(raw_parts, list) else []:
        if not isinstance(part, Mapping):
            parts.append(Part("other"))
            continue
        call = part.get("functionCall")
        response = part.get("functionResponse")
        if isinstance(call, Mapping) or isinstance(response, Mapping):
            body = call if isinstance(call, Mapping) else response
            assert isinstance(body, Mapping)
            key, local, name = body.get("id"), False, str(body.get("name"))
            if not key:
                seen[name] = seen.get(name, 0) + 1
                key, local = f"{name}#{seen[name]}", True
            if call is not None:
                parts.append(Part("call", str(key), local=local))
            else:
                responses.append(Part("response", str(key), local=local, name=name))
        elif "text" in part and not part.get("thought"):
            parts.append(_text_part(part.get("text")))
        else:
            parts.append(Part("other"))
    return Turn("assistant" if model else "user", (*responses, *parts))
