"""Importers and exporters on small hand-made samples of each format, and round trips."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from hdcontext.core.compression.pairs import pairing_problems
from hdcontext.core.content import (
    CodeBlock,
    IContent,
    MediaBlock,
    Metadata,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from hdcontext.formats.conversation import Conversation, FormatError
from hdcontext.formats.exporters import export
from hdcontext.formats.importers import (
    anthropic_messages,
    gemini_contents,
    icontent,
    load,
    mini_swe_agent,
    openai_chat,
)
from hdcontext.formats.importers.detect import detect_format

from .format_samples import (
    ANTHROPIC,
    ANTHROPIC_EXPECTED,
    GEMINI,
    GEMINI_EXPECTED,
    OPENAI,
    OPENAI_EXPECTED,
    SYSTEM,
)

SAMPLES: dict[str, tuple[Any, list[IContent]]] = {
    "openai": (OPENAI, OPENAI_EXPECTED),
    "anthropic": (ANTHROPIC, ANTHROPIC_EXPECTED),
    "gemini": (GEMINI, GEMINI_EXPECTED),
}


def read(fmt: str, data: Any) -> Conversation:
    return load(json.dumps(data), fmt)[0]


# -- importers ------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", SAMPLES)
def test_importer_reads_the_sample(fmt: str) -> None:
    data, expected = SAMPLES[fmt]
    conversation = read(fmt, data)
    assert list(conversation.entries) == expected
    assert conversation.system == SYSTEM
    assert pairing_problems(conversation.entries) == set()


@pytest.mark.parametrize("fmt", SAMPLES)
def test_detection_finds_the_sample_format(fmt: str) -> None:
    assert detect_format(json.dumps(SAMPLES[fmt][0])) == fmt


def test_bare_message_lists_are_accepted() -> None:
    assert list(anthropic_messages.load(ANTHROPIC["messages"]).entries) == ANTHROPIC_EXPECTED
    assert list(gemini_contents.load(GEMINI["contents"]).entries) == GEMINI_EXPECTED
    assert list(openai_chat.load({"model": "m", "messages": OPENAI}).entries) == OPENAI_EXPECTED


def test_openai_reasoning_content_and_legacy_function_calls() -> None:
    conversation = openai_chat.load(
        [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "reasoning_content": "think",
                "function_call": {"name": "ls", "arguments": "{}"},
            },
            {"role": "function", "name": "ls", "content": "a b"},
            {"role": "developer", "content": "be brief"},
        ]
    )
    ai, tool, note = conversation.entries[1:]
    assert ai.blocks == (
        ThinkingBlock(thought="think"),
        ToolCallBlock(id="function_call_1", name="ls", parameters={}),
    )
    assert tool.blocks == (
        ToolResponseBlock(call_id="function_call_1", tool_name="ls", result="a b"),
    )
    assert note.speaker == "human" and note.metadata == Metadata.model_validate(
        {"role": "developer"}
    )


def test_openai_arguments_that_are_not_json_are_kept_as_text() -> None:
    conversation = openai_chat.load(
        [
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "x"},
        ]
    )
    assert conversation.entries[0].blocks == (ToolCallBlock(id="c", name="f", parameters="{"),)


def test_anthropic_redacted_thinking_and_images_in_results_are_kept() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "x"}}
    conversation = anthropic_messages.load(
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "redacted_thinking", "data": "opaque"},
                    {"type": "tool_use", "id": "t", "name": "shot", "input": {}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "t", "content": [image]},
                    {"type": "text", "text": "see?"},
                ],
            },
        ]
    )
    ai, tool, human = conversation.entries
    assert ai.blocks[0] == ThinkingBlock.model_validate({"thought": "", "redactedData": "opaque"})
    assert tool.blocks == (ToolResponseBlock(call_id="t", tool_name="shot", result=[image]),)
    assert human.blocks == (TextBlock(text="see?"),)


def test_gemini_calls_without_ids_are_paired_by_name_in_order() -> None:
    conversation = gemini_contents.load(
        [
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "ls", "args": {"d": "a"}}},
                    {"functionCall": {"name": "ls", "args": {"d": "b"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "ls", "response": {"output": "A"}}},
                    {"functionResponse": {"name": "ls", "response": {"files": ["B"]}}},
                ],
            },
        ]
    )
    calls, responses = conversation.entries
    ids = [b.id for b in calls.blocks if isinstance(b, ToolCallBlock)]
    assert len(set(ids)) == 2
    assert [
        (b.call_id, b.result) for b in responses.blocks if isinstance(b, ToolResponseBlock)
    ] == [
        (ids[0], "A"),
        (ids[1], {"files": ["B"]}),
    ]
    # The ids were made up here: the exporter leaves them out again.
    assert export(conversation, "gemini").payload == {
        "contents": [
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "ls", "args": {"d": "a"}}},
                    {"functionCall": {"name": "ls", "args": {"d": "b"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "ls", "response": {"output": "A"}}},
                    {"functionResponse": {"name": "ls", "response": {"files": ["B"]}}},
                ],
            },
        ]
    }


def test_gemini_code_execution_parts_and_snake_case_keys() -> None:
    contents = [
        {
            "role": "model",
            "parts": [
                {"executable_code": {"language": "PYTHON", "code": "print(1)"}},
                {"code_execution_result": {"outcome": "OUTCOME_OK", "output": "1\n"}},
            ],
        }
    ]
    conversation = gemini_contents.load({"contents": contents, "system_instruction": "sys"})
    assert conversation.system == "sys"
    code, result = conversation.entries[0].blocks
    assert code == CodeBlock(code="print(1)", language="PYTHON")
    assert isinstance(result, TextBlock) and result.text == "1\n"
    assert export(conversation, "gemini").payload["contents"] == [  # type: ignore[index]
        {
            "role": "model",
            "parts": [
                {"executableCode": {"language": "PYTHON", "code": "print(1)"}},
                {"codeExecutionResult": {"outcome": "OUTCOME_OK", "output": "1\n"}},
            ],
        }
    ]


def test_mini_swe_agent_text_actions_become_bash_calls() -> None:
    """Older trajectories write the command in a fenced block and answer in a user message."""
    conversation = mini_swe_agent.load(
        {
            "messages": [
                {"role": "system", "content": "sys"},
                {"role": "user", "content": "task"},
                {"role": "assistant", "content": "THOUGHT: look\n\n```bash\ncat a.py\n```"},
                {"role": "user", "content": "<returncode>0</returncode>\n<output>\nx\n</output>"},
                {"role": "assistant", "content": "two\n```bash\nls\n```\n```bash\npwd\n```"},
                {"role": "user", "content": "Please always provide EXACTLY ONE action."},
                {"role": "exit", "content": "patch"},
            ]
        }
    )
    _, ai, tool, ai2, human2 = conversation.entries
    assert ai.blocks == (
        TextBlock(text="THOUGHT: look"),
        ToolCallBlock(id=ai.blocks[1].id, name="bash", parameters={"command": "cat a.py"}),  # type: ignore[union-attr]
    )
    assert tool.speaker == "tool"
    assert tool.blocks[0] == ToolResponseBlock(
        call_id=ai.blocks[1].id,  # type: ignore[union-attr]
        tool_name="bash",
        result="<returncode>0</returncode>\n<output>\nx\n</output>",
    )
    # Two blocks is a format error in mini-swe-agent: the message stays text.
    assert ai2.blocks == (TextBlock(text="two\n```bash\nls\n```\n```bash\npwd\n```"),)
    assert human2.speaker == "human"
    assert pairing_problems(conversation.entries) == set()


def test_mini_swe_agent_timestamps_and_exit_message() -> None:
    conversation = mini_swe_agent.load(
        {
            "messages": [
                {"role": "user", "content": "task", "extra": {"timestamp": 1700000000.5}},
                {"role": "exit", "content": "patch"},
            ]
        }
    )
    assert [e.timestamp for e in conversation.entries] == [1700000000500]


def test_icontent_system_entry_round_trips_and_daemon_replies_are_accepted() -> None:
    conversation = Conversation(tuple(ANTHROPIC_EXPECTED), system=SYSTEM)
    payload = export(conversation, "icontent").payload
    assert isinstance(payload, list) and payload[0]["metadata"] == {"role": "system"}
    assert icontent.load(payload) == conversation
    assert icontent.load({"entries": payload[1:]}).entries == conversation.entries
    assert icontent.load({"history": payload[1:], "status": {}}).entries == conversation.entries


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "invalid JSON"),
        ('{"foo": 1}', "unknown conversation object"),
        ("[1, 2]", "holds objects"),
        ('"text"', "JSON object or array"),
    ],
)
def test_unknown_input_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(FormatError, match=message):
        load(text)


def test_a_wrong_explicit_format_is_a_clear_error() -> None:
    with pytest.raises(FormatError, match=r"contents\[0\]\.parts must be a list"):
        load(json.dumps(OPENAI), "gemini")
    with pytest.raises(FormatError, match="role"):
        load(json.dumps(GEMINI["contents"]), "openai")


@pytest.mark.parametrize(
    ("data", "fmt"),
    [
        ([], "icontent"),
        ([{"speaker": "human", "blocks": []}], "icontent"),
        ([{"role": "user", "content": "hi"}], "openai"),
        ({"messages": [{"role": "user", "content": "hi"}], "system": "s"}, "anthropic"),
        ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x"}]}], "anthropic"),
        ([{"role": "model", "parts": []}], "gemini"),
        ({"messages": [{"role": "exit", "content": ""}]}, "mini-swe-agent"),
        ({"trajectory_format": "mini-swe-agent-1.1", "messages": []}, "mini-swe-agent"),
    ],
)
def test_detection_by_shape(data: Any, fmt: str) -> None:
    assert detect_format(json.dumps(data)) == fmt


def test_detection_of_claude_code_jsonl() -> None:
    lines = [
        {"type": "summary", "summary": "s", "leafUuid": "u"},
        {"type": "user", "uuid": "1", "message": {"role": "user", "content": "hi"}},
    ]
    assert detect_format("\n".join(json.dumps(r) for r in lines)) == "claude-code"


# -- exporters and round trips ------------------------------------------------------------


@pytest.mark.parametrize("fmt", SAMPLES)
def test_provider_to_icontent_to_provider_gives_the_same_json(fmt: str) -> None:
    data, _ = SAMPLES[fmt]
    exported = export(read(fmt, data), fmt)
    assert exported.payload == data
    assert exported.dropped == {}


def _portable_history() -> list[IContent]:
    """Blocks and pairings every provider format can carry."""
    return [
        IContent(speaker="human", blocks=(TextBlock(text="hi"), TextBlock(text="two parts"))),
        IContent(
            speaker="ai",
            blocks=(
                TextBlock(text="calling"),
                ToolCallBlock(id="a1", name="read_file", parameters={"path": "x"}),
                ToolCallBlock(id="a2", name="grep", parameters={"q": ["x", 1, None]}),
            ),
        ),
        IContent(
            speaker="tool",
            blocks=(
                ToolResponseBlock(call_id="a1", tool_name="read_file", result="body"),
                ToolResponseBlock(call_id="a2", tool_name="grep", result="hits"),
            ),
        ),
        IContent(speaker="ai", blocks=(ToolCallBlock(id="a3", name="ls", parameters={}),)),
        IContent(
            speaker="tool", blocks=(ToolResponseBlock(call_id="a3", tool_name="ls", result=""),)
        ),
        IContent(
            speaker="human",
            blocks=(MediaBlock(mime_type="image/jpeg", data="/9j/", encoding="base64"),),
        ),
        IContent(speaker="ai", blocks=(TextBlock(text="done"),)),
    ]


@pytest.mark.parametrize("fmt", ["icontent", "openai", "anthropic", "gemini"])
def test_icontent_to_provider_to_icontent_keeps_every_block_and_pair(fmt: str) -> None:
    conversation = Conversation(tuple(_portable_history()), system="sys")
    exported = export(conversation, fmt)
    assert exported.dropped == {}
    back = read(fmt, json.loads(json.dumps(exported.payload)))
    assert back == conversation
    assert pairing_problems(back.entries) == set()


@pytest.mark.parametrize("fmt", ["anthropic", "gemini"])
def test_errors_survive_formats_with_an_error_field(fmt: str) -> None:
    entries = (
        IContent(speaker="ai", blocks=(ToolCallBlock(id="c", name="edit", parameters={}),)),
        IContent(
            speaker="tool",
            blocks=(ToolResponseBlock(call_id="c", tool_name="edit", result=None, error="no"),),
        ),
    )
    back = read(fmt, export(Conversation(entries), fmt).payload)
    assert back.entries == entries


def test_openai_writes_an_error_into_the_content_and_says_so() -> None:
    entries = (
        IContent(speaker="ai", blocks=(ToolCallBlock(id="c", name="edit", parameters={}),)),
        IContent(
            speaker="tool",
            blocks=(ToolResponseBlock(call_id="c", tool_name="edit", result="out", error="no"),),
        ),
    )
    exported = export(Conversation(entries), "openai")
    assert exported.payload[1] == {"role": "tool", "tool_call_id": "c", "content": "out\nno"}  # type: ignore[index]
    assert exported.dropped == {"tool error flag": 1}


def _thinking_history() -> tuple[IContent, ...]:
    return (
        IContent(speaker="human", blocks=(TextBlock(text="q"),)),
        IContent(speaker="ai", blocks=(ThinkingBlock(thought="hmm"), TextBlock(text="answer"))),
    )


def test_openai_leaves_thinking_out_by_default_and_counts_it() -> None:
    exported = export(Conversation(_thinking_history()), "openai")
    assert exported.payload[1] == {"role": "assistant", "content": "answer"}  # type: ignore[index]
    assert exported.dropped == {"thinking": 1}


def test_openai_can_carry_thinking_as_reasoning_content_and_read_it_back() -> None:
    conversation = Conversation(_thinking_history())
    exported = export(conversation, "openai", thinking="reasoning_content")
    assert exported.payload[1] == {  # type: ignore[index]
        "role": "assistant",
        "content": "answer",
        "reasoning_content": "hmm",
    }
    assert exported.dropped == {}
    assert read("openai", exported.payload) == conversation


def test_anthropic_keeps_signed_thinking_and_leaves_unsigned_out() -> None:
    signed = ThinkingBlock.model_validate({"thought": "s", "signature": "sig"})
    entries = (
        IContent(speaker="human", blocks=(TextBlock(text="q"),)),
        IContent(speaker="ai", blocks=(signed, ThinkingBlock(thought="u"), TextBlock(text="a"))),
    )
    exported = export(Conversation(entries), "anthropic")
    assert exported.payload["messages"][1]["content"] == [  # type: ignore[index]
        {"type": "thinking", "thinking": "s", "signature": "sig"},
        {"type": "text", "text": "a"},
    ]
    assert exported.dropped == {"unsigned thinking": 1}


def test_gemini_carries_thinking_as_thought_parts() -> None:
    conversation = Conversation(_thinking_history())
    exported = export(conversation, "gemini")
    assert exported.payload["contents"][1]["parts"][0] == {"text": "hmm", "thought": True}  # type: ignore[index]
    assert read("gemini", exported.payload) == conversation


def test_code_blocks_become_fenced_text_where_there_is_no_code_part() -> None:
    entries = (IContent(speaker="ai", blocks=(CodeBlock(code="x = 1", language="python"),)),)
    openai = export(Conversation(entries), "openai")
    assert openai.payload == [{"role": "assistant", "content": "```python\nx = 1\n```"}]
    assert openai.dropped == {"code as text": 1}
    anthropic = export(Conversation(entries), "anthropic")
    assert anthropic.payload == {
        "messages": [{"role": "assistant", "content": "```python\nx = 1\n```"}]
    }
    assert anthropic.dropped == {"code as text": 1}
    gemini = export(Conversation(entries), "gemini")
    assert gemini.payload == {
        "contents": [
            {
                "role": "model",
                "parts": [{"executableCode": {"language": "python", "code": "x = 1"}}],
            }
        ]
    }


def test_media_a_format_cannot_carry_is_counted() -> None:
    entries = (
        IContent(
            speaker="human",
            blocks=(MediaBlock(mime_type="video/mp4", data="https://v", encoding="url"),),
        ),
        IContent(
            speaker="ai",
            blocks=(MediaBlock(mime_type="image/png", data="AA==", encoding="base64"),),
        ),
    )
    assert export(Conversation(entries), "openai").dropped == {
        "empty ai entry": 1,
        "empty human entry": 1,
        "media video/mp4": 1,
        "media in ai": 1,
    }
    assert export(Conversation(entries), "anthropic").dropped == {
        "empty ai entry": 1,
        "empty human entry": 1,
        "media in ai": 1,
        "media video/mp4": 1,
    }
    assert export(Conversation(entries), "gemini").dropped == {}


def test_exporters_do_not_change_their_input() -> None:
    conversation = read("anthropic", ANTHROPIC)
    before = copy.deepcopy([e.to_wire() for e in conversation.entries])
    for fmt in ("openai", "anthropic", "gemini", "icontent"):
        export(conversation, fmt)
    assert [e.to_wire() for e in conversation.entries] == before
