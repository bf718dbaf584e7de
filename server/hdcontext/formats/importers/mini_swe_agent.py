"""mini-swe-agent trajectories (``*.traj.json``) to IContent.

A trajectory is ``{"messages": [...], "info": {...}, "trajectory_format": "mini-swe-agent-…"}``
whose messages are OpenAI chat messages with an ``extra`` of their own: the agent's one tool,
``bash``, is called through ``tool_calls`` and answered by ``tool`` messages whose text starts
with ``<returncode>N</returncode>``. So they go through the OpenAI importer, with three
additions:

* ``extra.timestamp`` (seconds) becomes ``metadata.timestamp`` (ms);
* the closing ``exit`` message (the submitted patch, never sent to the model) is left out, and
  the submit call it answered stays unanswered here: the repair every import goes through
  (``core.validity``) gives it an error result that says no result was recorded;
* older trajectories have no tool calls: the model writes its one command in a fenced
  ````bash`` block and the next ``user`` message carries the ``<returncode>`` output. Such a
  pair is read as a ``bash`` call and its response (the block leaves the text, so the command
  is not counted twice); any other message stays as it is.

The environment's ``cwd`` (``/testbed`` in SWE-bench runs) is the workspace root: every command
starts there, and relative paths in it resolve against it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ...core.content import Metadata
from ..conversation import Conversation, FormatError
from .blocks import seconds_ms
from .openai_chat import from_messages

_BASH_BLOCK = re.compile(r"```(?:bash|sh)[ \t]*\n(.*?)\n?```", re.DOTALL)
_OBSERVATION = re.compile(r"<returncode>\s*-?\d+\s*</returncode>")
_ACTION_PREFIX = "mswea-action-"


def load(data: object) -> Conversation:
    if isinstance(data, Mapping):
        messages = data.get("messages")
        root = _environment_cwd(data.get("info"))
    else:
        messages, root = data, None
    if not isinstance(messages, list):
        raise FormatError("a mini-swe-agent trajectory has a 'messages' list")
    conversation = from_messages(_with_tool_calls(messages), _metadata)
    return Conversation(conversation.entries, conversation.system, root)


def _environment_cwd(info: object) -> str | None:
    if not isinstance(info, Mapping):
        return None
    config = info.get("config")
    environment = config.get("environment") if isinstance(config, Mapping) else None
    cwd = environment.get("cwd") if isinstance(environment, Mapping) else None
    return cwd if isinstance(cwd, str) and cwd else None


def _metadata(message: Mapping[str, Any]) -> Metadata | None:
    extra = message.get("extra")
    stamp = seconds_ms(extra.get("timestamp")) if isinstance(extra, Mapping) else None
    return None if stamp is None else Metadata(timestamp=stamp)


def _with_tool_calls(messages: list[Any]) -> list[Any]:
    """The messages without ``exit``, text actions turned into tool calls."""
    kept = [m for m in messages if not (isinstance(m, Mapping) and m.get("role") == "exit")]
    out: list[Any] = []
    for index, message in enumerate(kept):
        following = kept[index + 1] if index + 1 < len(kept) else None
        previous = out[-1] if out else None
        answered = _action_answered_by(message, previous)
        if answered is not None:
            out.append({**message, "role": "tool", "tool_call_id": answered})
            continue
        action = _text_action(message, following)
        if action is None:
            out.append(message)
            continue
        text, command = action
        call = {
            "id": _action_id(index),
            "type": "function",
            "function": {"name": "bash", "arguments": {"command": command}},
        }
        out.append({**message, "content": text, "tool_calls": [call]})
    return out


def _action_id(index: int) -> str:
    return f"{_ACTION_PREFIX}{index}"


def _text_action(message: object, following: object) -> tuple[str, str] | None:
    """(text without the block, command) of an assistant message with exactly one bash block
    that the next message answers with an observation."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant":
        return None
    if message.get("tool_calls") or not isinstance(message.get("content"), str):
        return None
    if not _is_observation(following):
        return None
    content: str = message["content"]
    blocks = list(_BASH_BLOCK.finditer(content))
    if len(blocks) != 1:
        return None
    match = blocks[0]
    text = (content[: match.start()] + content[match.end() :]).strip()
    return text, match.group(1)


def _is_observation(message: object) -> bool:
    return (
        isinstance(message, Mapping)
        and message.get("role") == "user"
        and isinstance(message.get("content"), str)
        and _OBSERVATION.search(message["content"]) is not None
    )


def _action_answered_by(message: object, previous: object) -> str | None:
    """The id of the text action ``message`` observes (it came right after it), if any."""
    if not _is_observation(message) or not isinstance(previous, Mapping):
        return None
    calls = previous.get("tool_calls")
    if not (isinstance(calls, list) and len(calls) == 1 and isinstance(calls[0], Mapping)):
        return None
    call_id = str(calls[0].get("id", ""))
    return call_id if call_id.startswith(_ACTION_PREFIX) else None
