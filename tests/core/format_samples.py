"""Small hand-made conversations in each provider's format, and the IContent they mean.

Each sample is a whole coding turn: a system prompt, a user question with an image, a model
turn that thinks, talks and makes two parallel tool calls, their responses (one failed), and a
closing answer. ``EXPECTED`` is what every importer must read from its sample: the same
history, written once.
"""

from __future__ import annotations

from typing import Any

from hdcontext.core.content import (
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)

SYSTEM = "You are a careful coding agent."
PNG = "iVBORw0KGgo="


def _expected(thinking: ThinkingBlock | None, error_in_result: bool = False) -> list[IContent]:
    failed = (
        ToolResponseBlock(call_id="call_2", tool_name="bash", result="no such file")
        if error_in_result
        else ToolResponseBlock(
            call_id="call_2", tool_name="bash", result=None, error="no such file"
        )
    )
    ai_blocks: list[Any] = [] if thinking is None else [thinking]
    ai_blocks += [
        TextBlock(text="Let me look."),
        ToolCallBlock(id="call_1", name="read_file", parameters={"file_path": "src/a.py"}),
        ToolCallBlock(id="call_2", name="bash", parameters={"command": "cat missing.py"}),
    ]
    return [
        IContent(
            speaker="human",
            blocks=(
                TextBlock(text="Why does this fail?"),
                MediaBlock(mime_type="image/png", data=PNG, encoding="base64"),
            ),
        ),
        IContent(speaker="ai", blocks=tuple(ai_blocks)),
        IContent(
            speaker="tool",
            blocks=(
                ToolResponseBlock(call_id="call_1", tool_name="read_file", result="x = 1\n"),
                failed,
            ),
        ),
        IContent(speaker="ai", blocks=(TextBlock(text="a.py sets x; missing.py is gone."),)),
        IContent(speaker="human", blocks=(TextBlock(text="Thanks."),)),
    ]


OPENAI: list[dict[str, Any]] = [
    {"role": "system", "content": SYSTEM},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Why does this fail?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
        ],
    },
    {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "read_file", "arguments": '{"file_path": "src/a.py"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "bash", "arguments": '{"command": "cat missing.py"}'},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "x = 1\n"},
    {"role": "tool", "tool_call_id": "call_2", "content": "no such file"},
    {"role": "assistant", "content": "a.py sets x; missing.py is gone."},
    {"role": "user", "content": "Thanks."},
]
# OpenAI has no thinking and no error flag: the failure is only in the text.
OPENAI_EXPECTED = _expected(None, error_in_result=True)

ANTHROPIC: dict[str, Any] = {
    "system": SYSTEM,
    "messages": [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Why does this fail?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Read both.", "signature": "sig-1"},
                {"type": "text", "text": "Let me look."},
                {
                    "type": "tool_use",
                    "id": "call_1",
                    "name": "read_file",
                    "input": {"file_path": "src/a.py"},
                },
                {
                    "type": "tool_use",
                    "id": "call_2",
                    "name": "bash",
                    "input": {"command": "cat missing.py"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "x = 1\n"},
                {
                    "type": "tool_result",
                    "tool_use_id": "call_2",
                    "content": "no such file",
                    "is_error": True,
                },
            ],
        },
        {"role": "assistant", "content": "a.py sets x; missing.py is gone."},
        {"role": "user", "content": "Thanks."},
    ],
}
ANTHROPIC_EXPECTED = _expected(
    ThinkingBlock.model_validate({"thought": "Read both.", "signature": "sig-1"})
)

GEMINI: dict[str, Any] = {
    "systemInstruction": {"parts": [{"text": SYSTEM}]},
    "contents": [
        {
            "role": "user",
            "parts": [
                {"text": "Why does this fail?"},
                {"inlineData": {"mimeType": "image/png", "data": PNG}},
            ],
        },
        {
            "role": "model",
            "parts": [
                {"text": "Read both.", "thought": True},
                {"text": "Let me look."},
                {
                    "functionCall": {
                        "id": "call_1",
                        "name": "read_file",
                        "args": {"file_path": "src/a.py"},
                    },
                    "thoughtSignature": "gsig",
                },
                {
                    "functionCall": {
                        "id": "call_2",
                        "name": "bash",
                        "args": {"command": "cat missing.py"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "call_1",
                        "name": "read_file",
                        "response": {"output": "x = 1\n"},
                    }
                },
                {
                    "functionResponse": {
                        "id": "call_2",
                        "name": "bash",
                        "response": {"error": "no such file"},
                    }
                },
            ],
        },
        {"role": "model", "parts": [{"text": "a.py sets x; missing.py is gone."}]},
        {"role": "user", "parts": [{"text": "Thanks."}]},
    ],
}


def _gemini_expected() -> list[IContent]:
    entries = _expected(ThinkingBlock(thought="Read both."))
    ai = entries[1]
    blocks = list(ai.blocks)
    blocks[2] = ToolCallBlock.model_validate(
        {
            "id": "call_1",
            "name": "read_file",
            "parameters": {"file_path": "src/a.py"},
            "thoughtSignature": "gsig",
        }
    )
    entries[1] = ai.with_blocks(blocks)
    return entries


GEMINI_EXPECTED = _gemini_expected()
