"""SWE-agent trajectories (``*.traj``) to IContent.

A trajectory is a JSON object with ``history`` (the messages the model saw: ``role``,
``content``, and on the model's messages ``thought`` and ``action``), ``trajectory`` (one step
a model call: ``response``, ``thought``, ``action``, ``observation``, ``state``) and ``info``.
``history`` is the conversation, demonstrations included (they were sent); a trajectory
without one is read from its steps.

SWE-agent runs every action in its shell, its own commands (``open``, ``edit``, ``create``,
``find_file``…) being shell functions there. Two generations write actions differently:

* function calling (SWE-agent 1.x): the model's message has OpenAI ``tool_calls`` and each
  result is a ``tool`` message naming ``tool_call_ids``; read as they are;
* text actions: the model writes its command in a fenced block (``action`` holds it,
  ``thought`` the rest) and the next ``user`` message is the output. Such a pair is read as a
  ``bash`` call with ``{"command": action}`` and its response, so the shell-command
  recognition sees the plain reads and writes among them. A last action nothing answered
  (``submit``, say) stays the text the model wrote.

Leading ``system`` messages are the system prompt. The first step's ``state.working_dir``
(the repository in the container) is the workspace root.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...core.content import Block, IContent, TextBlock, ToolCallBlock, ToolResponseBlock
from ..conversation import Conversation, FormatError
from .blocks import entry, json_arguments, text_of_parts

_ACTION_PREFIX = "swea-action-"
SHELL_TOOL = "bash"


def load(data: object) -> Conversation:
    if not isinstance(data, Mapping):
        raise FormatError("a SWE-agent trajectory is a JSON object with 'history' or 'trajectory'")
    history = data.get("history")
    steps = data.get("trajectory")
    root = _working_dir(steps)
    if isinstance(history, list) and history:
        entries, system = _from_history(history)
    elif isinstance(steps, list):
        entries, system = _from_steps(steps), None
    else:
        raise FormatError("a SWE-agent trajectory has a 'history' or a 'trajectory' list")
    return Conversation(tuple(entries), system=system, workspace_root=root)


def _text(content: object) -> str:
    """A message's text: a string, or its text parts (SWE-agent 1.x writes lists of parts,
    some with ``cache_control``)."""
    text = text_of_parts(content)
    if text is not None:
        return text
    if isinstance(content, list):
        return "\n".join(
            str(p.get("text", ""))
            for p in content
            if isinstance(p, Mapping) and p.get("type") == "text"
        )
    return "" if content is None else json.dumps(content)


def _from_history(history: Sequence[Any]) -> tuple[list[IContent], str | None]:
    messages = [m for m in history if isinstance(m, Mapping)]
    system: list[str] = []
    while messages and messages[0].get("role") == "system":
        system.append(_text(messages.pop(0).get("content")))
    entries: list[IContent] = []
    names: dict[str, str] = {}
    answer_next: str | None = None  # id of the text action the next user message answers
    for index, message in enumerate(messages):
        role = message.get("role")
        following = messages[index + 1] if index + 1 < len(messages) else None
        if role == "assistant":
            entries.append(_assistant(message, index, following, names))
            calls = [b for b in entries[-1].blocks if isinstance(b, ToolCallBlock)]
            text_action = calls and calls[0].id.startswith(_ACTION_PREFIX)
            answer_next = calls[0].id if text_action else None
        elif role == "tool":
            ids = message.get("tool_call_ids") or [message.get("tool_call_id")]
            text = _text(message.get("content"))
            responses = [
                ToolResponseBlock(
                    call_id=str(i), tool_name=names.get(str(i), "unknown"), result=text
                )
                for i in ids
            ]
            _add_responses(entries, responses)
        elif answer_next is not None:
            response = ToolResponseBlock(
                call_id=answer_next, tool_name=SHELL_TOOL, result=_text(message.get("content"))
            )
            _add_responses(entries, [response])
            answer_next = None
        else:
            entries.append(entry("human", [TextBlock(text=_text(message.get("content")))]))
    return entries, "\n\n".join(system) if system else None


def _assistant(
    message: Mapping[str, Any],
    index: int,
    following: Mapping[str, Any] | None,
    names: dict[str, str],
) -> IContent:
    content = _text(message.get("content"))
    thought = message.get("thought")
    action = message.get("action")
    calls: list[Block] = []
    for raw in message.get("tool_calls") or []:
        function = raw.get("function") if isinstance(raw, Mapping) else None
        if not isinstance(function, Mapping):
            continue
        call = ToolCallBlock(
            id=str(raw.get("id")),
            name=str(function.get("name")),
            parameters=json_arguments(function.get("arguments")),
        )
        names[call.id] = call.name
        calls.append(call)
    if calls:
        text = content if content.strip() else thought if isinstance(thought, str) else ""
        return entry("ai", [*_texts(text), *calls])
    answered = following is not None and following.get("role") == "user"
    if isinstance(action, str) and action.strip() and answered:
        text = thought if isinstance(thought, str) else content
        call = ToolCallBlock(
            id=f"{_ACTION_PREFIX}{index}",
            name=SHELL_TOOL,
            parameters={"command": action.strip()},
        )
        return entry("ai", [*_texts(text), call])
    return entry("ai", _texts(content))


def _texts(text: str) -> list[Block]:
    return [TextBlock(text=text)] if text.strip() else []


def _add_responses(entries: list[IContent], responses: list[ToolResponseBlock]) -> None:
    last = entries[-1] if entries else None
    if last is not None and last.speaker == "tool":
        entries[-1] = last.with_blocks((*last.blocks, *responses))
    else:
        entries.append(entry("tool", list(responses)))


def _from_steps(steps: Sequence[Any]) -> list[IContent]:
    entries: list[IContent] = []
    for index, step in enumerate(steps):
        if not isinstance(step, Mapping):
            continue
        thought = step.get("thought")
        text = thought if isinstance(thought, str) else _text(step.get("response"))
        action = step.get("action")
        if not (isinstance(action, str) and action.strip()):
            entries.append(entry("ai", _texts(text)))
            continue
        call_id = f"{_ACTION_PREFIX}{index}"
        call = ToolCallBlock(id=call_id, name=SHELL_TOOL, parameters={"command": action.strip()})
        entries.append(entry("ai", [*_texts(text), call]))
        observation = _text(step.get("observation"))
        response = ToolResponseBlock(call_id=call_id, tool_name=SHELL_TOOL, result=observation)
        entries.append(entry("tool", [response]))
    return entries


def _working_dir(steps: object) -> str | None:
    if not isinstance(steps, list):
        return None
    for step in steps:
        state = step.get("state") if isinstance(step, Mapping) else None
        if isinstance(state, str):
            try:
                state = json.loads(state)
            except ValueError:
                continue
        if isinstance(state, Mapping):
            cwd = state.get("working_dir")
            if isinstance(cwd, str) and cwd:
                return cwd
    return None
