"""The SWE-agent importer on small trajectories of both generations, and detection."""

from __future__ import annotations

import json
from typing import Any

from hdcontext.core.content import TextBlock, ToolCallBlock, ToolResponseBlock
from hdcontext.core.validity import problems
from hdcontext.formats.importers import detect_format, load

SYSTEM = "SETTING: You are an autonomous programmer."
STATE = json.dumps({"open_file": "n/a", "working_dir": "/repo"})


def trajectory(history: list[dict[str, Any]], **more: Any) -> str:
    steps = [{"action": "ls", "observation": "a.py", "state": STATE, "thought": "look"}]
    return json.dumps({"environment": "swe_main", "trajectory": steps, "history": history, **more})


TEXT_ACTIONS = [
    {"role": "system", "content": SYSTEM, "agent": "primary"},
    {"role": "user", "content": "Here is a demonstration…", "is_demo": True, "agent": "primary"},
    {"role": "user", "content": "ISSUE: a.py divides by zero", "agent": "primary"},
    {
        "role": "assistant",
        "content": "Let me look.\n```\ncat a.py\n```",
        "thought": "Let me look.\n",
        "action": "cat a.py\n",
        "agent": "primary",
    },
    {"role": "user", "content": "print(1/0)\n(Open file: n/a)", "agent": "primary"},
    {
        "role": "assistant",
        "content": "Done.\n```\nsubmit\n```",
        "thought": "Done.\n",
        "action": "submit\n",
        "agent": "primary",
    },
]


def test_text_actions_become_shell_calls_answered_by_the_next_message() -> None:
    text = trajectory(TEXT_ACTIONS)
    assert detect_format(text) == "swe-agent"
    conversation, _ = load(text)
    assert conversation.system == SYSTEM
    assert conversation.workspace_root == "/repo"
    speakers = [e.speaker for e in conversation.entries]
    assert speakers == ["human", "human", "ai", "tool", "ai"]
    look = conversation.entries[2]
    assert look.blocks == (
        TextBlock(text="Let me look.\n"),
        ToolCallBlock(id="swea-action-2", name="bash", parameters={"command": "cat a.py"}),
    )
    assert conversation.entries[3].blocks == (
        ToolResponseBlock(
            call_id="swea-action-2", tool_name="bash", result="print(1/0)\n(Open file: n/a)"
        ),
    )
    # The last action (submit) was never answered: it stays the text the model wrote.
    assert conversation.entries[4].blocks == (TextBlock(text="Done.\n```\nsubmit\n```"),)
    assert problems(conversation.entries) == []
    assert conversation.warnings == ()


FUNCTION_CALLS = [
    {"role": "system", "content": SYSTEM, "agent": "main", "message_type": "system_prompt"},
    {"role": "user", "content": [{"type": "text", "text": "ISSUE: fix it"}], "agent": "main"},
    {
        "role": "assistant",
        "content": "Opening the file.",
        "thought": "Opening the file.",
        "action": 'open "/repo/a.py"',
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "open", "arguments": '{"path": "/repo/a.py"}'},
            }
        ],
        "message_type": "action",
    },
    {
        "role": "tool",
        "content": [{"type": "text", "text": "[File: /repo/a.py (1 lines total)]"}],
        "tool_call_ids": ["call_1"],
        "message_type": "observation",
    },
]


def test_function_calls_are_read_as_they_are() -> None:
    conversation, fmt = load(trajectory(FUNCTION_CALLS))
    assert fmt == "swe-agent"
    assert [e.speaker for e in conversation.entries] == ["human", "ai", "tool"]
    assert conversation.entries[0].blocks == (TextBlock(text="ISSUE: fix it"),)
    assert conversation.entries[1].blocks[1] == ToolCallBlock(
        id="call_1", name="open", parameters={"path": "/repo/a.py"}
    )
    assert conversation.entries[2].blocks == (
        ToolResponseBlock(
            call_id="call_1", tool_name="open", result="[File: /repo/a.py (1 lines total)]"
        ),
    )


def test_a_trajectory_without_history_is_read_from_its_steps() -> None:
    data = {"trajectory": [{"action": "ls\n", "observation": "a.py", "thought": "look"}]}
    conversation, fmt = load(json.dumps(data))
    assert fmt == "swe-agent"
    assert [e.speaker for e in conversation.entries] == ["ai", "tool"]
    assert problems(conversation.entries) == []


def test_an_icontent_reply_with_history_is_still_icontent() -> None:
    reply = {"history": [{"speaker": "human", "blocks": [{"type": "text", "text": "hi"}]}]}
    assert detect_format(json.dumps(reply)) == "icontent"
