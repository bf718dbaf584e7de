"""What middle-out and one-shot share: building the summarize request and using its answer.

The request goes to whatever model the user picked, through the editor or an
OpenAI-compatible endpoint, so it must be valid for any provider. The part to summarize
usually holds tool calls whose responses are not sent, or the reverse, and some providers
reject that. So tool calls, tool results and media are rewritten as plain text, and tool turns
become human turns: the model still reads everything, and nothing pairs. The todo list and the
trigger instruction come after the history, so the instruction is the last thing the model reads.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence

from ..content import (
    Block,
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
    is_empty_ai,
    text_entry,
)
from ..tools.todos import Todo
from .prompts import COMPRESSION_PROMPT
from .types import CompressionContext, CompressionError, SummarizeRequest, SummarizerError

SNAPSHOT_TAG = "<state_snapshot>"
TRIGGER_INSTRUCTION = "First, reason in your scratchpad. Then, generate the <state_snapshot>."
TRIGGER_WITH_PREVIOUS_SNAPSHOT = (
    "First, reason in your scratchpad. Then, generate the <state_snapshot>. The history above "
    "contains an earlier <state_snapshot>: integrate the parts of it that are still relevant "
    "into the new one rather than dropping or repeating it."
)
TRANSCRIPT_POINTER = "Full pre-compression transcript available at: "
REQUEST_EXCERPT_CHARS = 200

_SCRATCHPAD = re.compile(r"<scratchpad>.*?</scratchpad>", re.DOTALL)


def _json(value: object) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _sanitize_block(block: Block) -> Block:
    if isinstance(block, ToolCallBlock):
        return TextBlock(text=f"[Tool Call: {block.name}]\nParameters: {_json(block.parameters)}")
    if isinstance(block, ToolResponseBlock):
        lines = [f"[Tool Result: {block.tool_name}]"]
        # An error does not make the output worthless (a failing test run prints why).
        if block.error:
            lines.append(f"Error: {block.error}")
        if not block.error or block.result not in (None, "", {}, []):
            lines.append(f"Result: {_json(block.result)}")
        return TextBlock(text="\n".join(lines))
    if isinstance(block, MediaBlock):
        return TextBlock(text=f"[Attached {block.mime_type}]")
    if isinstance(block, ThinkingBlock):
        # Thinking blocks carry provider signatures that another model or account rejects;
        # as text the reasoning still informs the summary.
        return TextBlock(text=f"[Reasoning]\n{block.thought}")
    return block


def sanitize(entries: Iterable[IContent]) -> list[IContent]:
    """Entries a provider accepts with no pairing rules: no tool blocks, no tool speaker.

    New entries are built (the inputs stay untouched); entry-level extras such as
    ``providerMetadata`` stay behind, since they describe blocks that no longer exist.
    Entries left with nothing to read are dropped.
    """
    out: list[IContent] = []
    for entry in entries:
        if not entry.blocks or is_empty_ai(entry):
            continue
        speaker = "human" if entry.speaker == "tool" else entry.speaker
        blocks = tuple(_sanitize_block(b) for b in entry.blocks)
        out.append(IContent(speaker=speaker, blocks=blocks, metadata=entry.metadata))
    return out


def entry_text(entry: IContent) -> str:
    return "\n".join(b.text for b in entry.blocks if isinstance(b, TextBlock))


def is_user_request(entry: IContent) -> bool:
    """A human turn the user typed: not a tool result, not an earlier compression summary."""
    if entry.speaker != "human":
        return False
    text = entry_text(entry)
    return bool(text.strip()) and SNAPSHOT_TAG not in text


def last_user_request(history: Sequence[IContent]) -> int | None:
    for index in range(len(history) - 1, -1, -1):
        if is_user_request(history[index]):
            return index
    return None


def excerpt(text: str, limit: int = REQUEST_EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _todo_lines(todo: Todo, depth: int) -> list[str]:
    indent = "  " * depth
    if depth == 0 or todo.status != "pending":
        line = f"{indent}- [{todo.status.upper()}] {todo.content}"
    else:
        # Subtasks usually have no status of their own; "[PENDING]" on each would be noise.
        line = f"{indent}- {todo.content}"
    lines = [line]
    for sub in todo.subtasks:
        lines.extend(_todo_lines(sub, depth + 1))
    return lines


def todo_context_text(todos: Sequence[Todo]) -> str | None:
    """REQ-HD-011.3: the active todos as readable lines (never raw JSON); None if none."""
    active = [t for t in todos if t.active]
    if not active:
        return None
    lines = [
        "The following todo items are currently active. When generating the state snapshot, "
        "explain the context behind each one: why it exists, which user request created it, "
        "and what progress has been made.",
        "",
    ]
    for todo in active:
        lines.extend(_todo_lines(todo, 0))
    return "\n".join(lines)


def last_request_note(request: IContent) -> str:
    """Asks for a long final user request, which cannot be kept verbatim, to survive intact."""
    return (
        "The most recent user request is part of the history above and will not be kept "
        f'verbatim (it begins: "{excerpt(entry_text(request))}"). In the snapshot, restate '
        "that request faithfully and completely: its goal, every instruction and constraint, "
        "and any exact names, paths, values or quoted text it contains."
    )


def trigger_instruction(messages: Sequence[IContent]) -> str:
    if any(SNAPSHOT_TAG in entry_text(m) for m in messages):
        return TRIGGER_WITH_PREVIOUS_SNAPSHOT
    return TRIGGER_INSTRUCTION


def request_messages(
    to_summarize: Sequence[IContent],
    todos: Sequence[Todo],
    notes: Sequence[str] = (),
) -> tuple[IContent, ...]:
    """Sanitized history, then any notes, the active todos, and the trigger last."""
    messages = sanitize(to_summarize)
    trigger = trigger_instruction(messages)
    extra = list(notes)
    todo_text = todo_context_text(todos)
    if todo_text is not None:
        extra.append(todo_text)
    extra.append(trigger)
    return (*messages, *(text_entry("human", text) for text in extra))


def prompt_for(context: CompressionContext) -> str:
    # The session loads the prompt (a user's compression.md, or ours); a context built
    # without one still gets a prompt that asks for the snapshot the strategies expect.
    return context.prompt if context.prompt.strip() else COMPRESSION_PROMPT


def clean_summary(text: str) -> str:
    """The summary without its scratchpad: the prompt calls that reasoning private, and it
    would cost tokens on every later turn. If that leaves nothing, the whole text stays."""
    without = _SCRATCHPAD.sub("", text).strip()
    return without if without else text.strip()


async def summarize(
    context: CompressionContext, strategy: str, messages: Sequence[IContent]
) -> str:
    """Ask the summarizer and vet its answer.

    No summarizer is an error the user must see (REQ-HD-013.4: no quiet switch to another
    strategy); the summarizer's own exceptions pass through unchanged for the same reason.
    An empty answer would replace history with nothing, so it is refused.
    """
    if context.summarizer is None:
        raise SummarizerError("none", "no summarizer configured")
    request = SummarizeRequest(
        strategy=strategy, prompt=prompt_for(context), messages=tuple(messages)
    )
    answer = await context.summarizer(request)
    if not isinstance(answer, str) or not answer.strip():
        raise CompressionError(f"{strategy}: the summarizer returned an empty summary")
    return clean_summary(answer)


def summary_entry(summary: str, transcript_path: str | None) -> IContent:
    """The human turn that stands in for the summarized part (REQ-HD-012.2 pointer last)."""
    text = summary.rstrip()
    if transcript_path:
        text = f"{text}\n\n{TRANSCRIPT_POINTER}{transcript_path}"
    return text_entry("human", text)


def current_todo(todos: Sequence[Todo]) -> Todo | None:
    """The todo being worked on: the one in progress, else the first still open."""
    active = [t for t in todos if t.active]
    for todo in active:
        if todo.status == "in_progress":
            return todo
    return active[0] if active else None


def continuation_entry(todos: Sequence[Todo], last_request: IContent | None) -> IContent:
    """The AI turn after the summary: it closes the summary exchange and points the agent
    at what it was doing, so the next reply resumes work instead of discussing the summary."""
    parts = ["Understood. Continuing with the current task."]
    todo = current_todo(todos)
    if todo is not None:
        parts.append(f"Current todo: {excerpt(todo.content)}.")
    if last_request is not None:
        parts.append(f'Latest user request: "{excerpt(entry_text(last_request))}".')
    return text_entry("ai", " ".join(parts))
