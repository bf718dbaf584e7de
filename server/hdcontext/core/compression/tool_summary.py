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

from pydantic import JsonValue

from ..content import ToolCallBlock, ToolResponseBlock
from ..tools import MULTI_PATH_KEYS, PATH_KEYS, key_parameter

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


def is_compact(result: JsonValue) -> bool:
    """Whether a result is already a one-liner of ours (a summary or the pruning pointer)."""
    return isinstance(result, str) and (
        result == DISK_POINTER or is_pruned(result) or _SUMMARY.fullmatch(result) is not None
    )


def summarize_response(
    response: ToolResponseBlock, call: ToolCallBlock | None
) -> ToolResponseBlock:
    """The response cut to one line, error to its first line; the same object if already so.

    Returning the very object when nothing changes lets callers tell changed entries apart
    by identity, and makes summarizing twice the same as once.
    """
    result = response.result if is_compact(response.result) else summary_line(response, call)
    error = first_line(response.error) if response.error else response.error
    if result == response.result and error == response.error:
        return response
    return response.model_copy(update={"result": result, "error": error})
