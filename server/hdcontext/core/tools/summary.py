"""One-line stand-ins for tool output (REQ-HD-008.3), shared by compress and the emergency path.

When history must shrink without a model, old tool output is the cheapest thing to give up:
the call that produced it stays, so the model still knows what was done and can run it again.
What it keeps is the gist a later turn may rely on: which tool, on what, whether it worked, and
how big the output was.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass

from pydantic import JsonValue

from ..content import ToolCallBlock, ToolResponseBlock
from .files import MULTI_PATH_KEYS, PATH_KEYS, key_parameter
from .shell.commands import exit_status

PRUNED_POINTER = "[Result pruned — re-run tool to retrieve]"
"""REQ-HD-007.2: what recency pruning leaves in place of a result."""


def pruned_pointer(call_id: str, retrieve_tool: str | None) -> str:
    """What recency pruning leaves: the seeds' pointer, or, when the client offers the model a
    tool that gives pruned results back (``history/retrieve``), a pointer naming that tool and
    the call id to ask it for."""
    if not retrieve_tool:
        return PRUNED_POINTER
    return (
        f"[Result pruned — call {retrieve_tool} with callId {json.dumps(call_id)} to get it back]"
    )


_RETRIEVE_POINTER = re.compile(
    r"\[Result pruned — call \S+ with callId \"(?:[^\"\\]|\\.)*\" to get it back\]"
)


def is_pruned(result: JsonValue) -> bool:
    """Whether a result is recency pruning's pointer (either form)."""
    return isinstance(result, str) and (
        result == PRUNED_POINTER or _RETRIEVE_POINTER.fullmatch(result) is not None
    )


DISK_POINTER = "[File changed on disk after this read — read it again for its current content]"
"""What a read's output becomes when the file changed outside the history after it and no
later view of the file is in the history (DESIGN.md decision 11)."""

INPUT_POINTER = "[pruned: a later view of this file in the conversation shows its content]"
"""What stands for a write call's content (an edit's old and new text, a whole file) once a
later whole view of the file is in the history (``density/stale_reads.py``)."""


def covered_parameters(parameters: JsonValue) -> JsonValue:
    """A write call's parameters with only what names its files, and ``INPUT_POINTER``."""
    if not isinstance(parameters, dict):
        return parameters
    kept: dict[str, JsonValue] = {
        k: parameters[k] for k in (*PATH_KEYS, *MULTI_PATH_KEYS) if k in parameters
    }
    kept["pruned"] = INPUT_POINTER
    return kept


def is_covered_input(parameters: JsonValue) -> bool:
    """Whether a write call's parameters are already ``covered_parameters``."""
    return isinstance(parameters, dict) and parameters.get("pruned") == INPUT_POINTER


TODO_POINTER = "[pruned: a later todo list replaced this one]"
"""What stands for a todo call's list once a later todo call carries the list
(``density/todo_lists.py``)."""


def without_todo_list(parameters: JsonValue) -> JsonValue:
    """A todo call's parameters with the list replaced by ``TODO_POINTER``."""
    if parameters == {"pruned": TODO_POINTER}:
        return parameters
    return {"pruned": TODO_POINTER}


MAX_DETAIL_CHARS = 120

_SUMMARY = re.compile(r"\[[^\n]* — (?:success, \d+ lines?|error: [^\n]*)\]")


def first_line(text: str, limit: int = MAX_DETAIL_CHARS) -> str:
    """The first non-blank line, at most ``limit`` characters (an ellipsis marks a cut)."""
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _string_leaves(value: JsonValue) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _string_leaves(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _string_leaves(item)


def result_lines(result: JsonValue) -> int:
    """How many lines of text a result carried.

    Structured results (``{"output": "..."}``) are counted by their text, not by their JSON
    encoding, which would put every multi-line output on one line.
    """
    if result is None:
        return 0
    leaves = list(_string_leaves(result))
    if not leaves:
        return 1
    return sum(len(leaf.splitlines()) for leaf in leaves)


def summary_line(response: ToolResponseBlock, call: ToolCallBlock | None) -> str:
    """``[<tool> <key param> — success, N lines]`` or ``[<tool> <key param> — error: <why>]``."""
    head = response.tool_name
    key = key_parameter(call.parameters) if call is not None else None
    if key is not None:
        head += " " + first_line(key)
    if response.error:
        return f"[{head} — error: {first_line(response.error)}]"
    lines = result_lines(response.result)
    return f"[{head} — success, {lines} line{'' if lines == 1 else 's'}]"


def result_chars(result: JsonValue) -> int:
    """How long a result is, in characters (structured ones as their JSON)."""
    return len(result) if isinstance(result, str) else len(json.dumps(result))


@dataclass(frozen=True, slots=True)
class OutputFacts:
    """What a masking pointer says of a tool output: which call, which tool, how big it was
    and how it ended. Kept instead of the output by the pass that masks it."""

    call_id: str
    tool: str
    lines: int
    chars: int
    failed: bool
    exit_status: int | None

    @classmethod
    def of(cls, response: ToolResponseBlock) -> OutputFacts:
        return cls(
            call_id=response.call_id,
            tool=response.tool_name,
            lines=result_lines(response.result),
            chars=result_chars(response.result),
            failed=bool(response.error),
            exit_status=exit_status(response.result),
        )


def masked_pointer(facts: OutputFacts, about: str | None, retrieve_tool: str | None) -> str:
    """What masking leaves of an output the model has read (``density/masking.py``): the call
    (tool, ``about``: its key parameters on one line; size; how it ended) and how to get the
    output back.

    A function of the call and the output only (no time, no count that moves later), so the
    same output always becomes the same pointer and a later compaction has nothing to redo.
    An exit status is written the way ``shell.exit_status`` reads it (Codex's phrase), so a
    masked shell call keeps its success for the rules that ask (a failed ``sed -i`` is no
    write, masked or not).
    """
    what = f"{facts.tool} {about}" if about else facts.tool
    lines = f"{facts.lines} line{'' if facts.lines == 1 else 's'}"
    size = [lines, f"{facts.chars} characters"]
    if facts.failed:
        size.append("failed")
    if facts.exit_status is not None:
        size.append(f"process exited with code {facts.exit_status}")
    call = json.dumps(facts.call_id, ensure_ascii=False)
    if retrieve_tool:
        how = f"call {retrieve_tool} with callId {call} to get it back"
    else:
        how = f"callId {call}; re-run the tool to see it again"
    return f"[Output masked once read: {what} ({', '.join(size)}) — {how}]"


_MASKED = re.compile(
    r"\[Output masked once read: [^\n]* — "
    r"(?:call \S+ with callId \"(?:[^\"\\]|\\.)*\" to get it back"
    r"|callId \"(?:[^\"\\]|\\.)*\"; re-run the tool to see it again)\]"
)


def is_masked(result: JsonValue) -> bool:
    """Whether a result is masking's pointer (either form)."""
    return isinstance(result, str) and _MASKED.fullmatch(result) is not None


def loads_tools(result: JsonValue) -> bool:
    """Whether a result loads tools (a ``tool_reference`` part among its content: Claude Code's
    ToolSearch answers so, and the provider then offers the deferred tools it names). Such a
    result is not output to cut: without it the model loses those tools. No rule edits it."""
    return isinstance(result, list) and any(
        isinstance(part, dict) and part.get("type") == "tool_reference" for part in result
    )


AGENT_MASK_OPEN = "<tool_output_masked>"
AGENT_MASK_CLOSE = "</tool_output_masked>"


def masked_by_agent(result: JsonValue) -> bool:
    """Whether a result is one the agent masked itself: Gemini CLI replaces old tool output
    with ``<tool_output_masked>…</tool_output_masked>`` (its first and last lines and the
    file it saved the whole to, under a kilobyte), and never undoes it. It is small already,
    and it shows no file: no rule masks it again, and a read answered so is no view."""
    if not isinstance(result, str):
        return False
    text = result.strip()
    return text.startswith(AGENT_MASK_OPEN) and text.endswith(AGENT_MASK_CLOSE)


def is_compact(result: JsonValue) -> bool:
    """Whether a result is already compact: a one-liner of ours (a summary or a pointer), or
    output the agent masked itself (``masked_by_agent``)."""
    return isinstance(result, str) and (
        masked_by_agent(result)
        or result == DISK_POINTER
        or is_pruned(result)
        or is_masked(result)
        or _SUMMARY.fullmatch(result) is not None
    )


def summarize_response(
    response: ToolResponseBlock, call: ToolCallBlock | None
) -> ToolResponseBlock:
    """The response cut to one line, error to its first line; the same object if already so.

    Returning the very object when nothing changes lets callers tell changed entries apart
    by identity, and makes summarizing twice the same as once.
    """
    if loads_tools(response.result):
        return response
    result = response.result if is_compact(response.result) else summary_line(response, call)
    error = first_line(response.error) if response.error else response.error
    if result == response.result and error == response.error:
        return response
    return response.model_copy(update={"result": result, "error": error})
