"""What Claude Code sends since the API gained programmatic tool calling and deferred tools.

Each ``tool_use`` the API answers carries a ``caller`` (``{"type": "direct"}``: the model
called it), which Claude Code sends back; and its ToolSearch loads deferred tools by answering
with ``tool_reference`` parts, after which the provider offers those tools. The first is
carried through the formats as an extra of the call; the second is a result no rule may cut
(masking, recency pruning, high-density summaries): without it the model loses the tools.
"""

from __future__ import annotations

import dataclasses

from pydantic import JsonValue

from hdcontext.core.content import IContent, ToolResponseBlock
from hdcontext.core.density.optimize import optimize, prune_old_results
from hdcontext.core.tools.summary import PRUNED_POINTER, loads_tools, summarize_response
from hdcontext.formats.conversation import Conversation
from hdcontext.formats.exporters.anthropic import export
from hdcontext.formats.importers import anthropic_messages

from .builders import ai_call, ai_text, human, response, tool_result
from .test_masking import CONFIG, bash, masked

REFERENCES: list[JsonValue] = [
    {"type": "tool_reference", "tool_name": f"mcp__server__tool_{n}"} for n in range(40)
]
"""A ToolSearch that loaded forty tools: its result is long enough for any rule to want it."""


def search(cid: str = "s1") -> list[IContent]:
    return [
        ai_call(cid, "ToolSearch", {"query": "select:many"}),
        tool_result(cid, "ToolSearch", REFERENCES),
    ]


def test_a_call_s_caller_and_a_result_s_tool_references_come_back_as_sent() -> None:
    messages = [
        {"role": "user", "content": "find the docs"},
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "ToolSearch",
                    "input": {"query": "select:WebSearch"},
                    "caller": {"type": "direct"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t1",
                    "content": [
                        {"type": "tool_reference", "tool_name": "WebSearch"},
                        {"type": "text", "text": "loaded"},
                    ],
                }
            ],
        },
    ]
    entries = anthropic_messages.load(messages).entries
    exported = export(Conversation(entries))
    assert exported.payload == {"messages": messages}
    assert exported.dropped == {}
    # A call without a caller is written without one, as before.
    call = {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/a"}}
    plain = [{"role": "assistant", "content": [call]}]
    assert export(anthropic_messages.load(plain)).payload == {"messages": plain}


def test_a_result_that_loads_tools_is_never_masked() -> None:
    history = [human("go"), *search(), *bash("b1"), *bash("b2"), ai_text("done")]
    config = dataclasses.replace(CONFIG, mask_retention=0)
    assert masked(history, config) == {"b1", "b2"}  # the rule runs, and leaves the search


def test_a_result_that_loads_tools_is_never_pruned_by_recency() -> None:
    history = [*search("s1"), *search("s2"), *search("s3"), human("next")]
    assert prune_old_results(history, 1).replacements == {}
    plain = [
        ai_call("s1", "ToolSearch", {}),
        tool_result("s1", "ToolSearch", "x" * 400),
        ai_call("s2", "ToolSearch", {}),
        tool_result("s2", "ToolSearch", "y" * 400),
    ]
    assert prune_old_results(plain, 1).replacements == {
        1: tool_result("s1", "ToolSearch", PRUNED_POINTER)
    }


def test_a_result_that_loads_tools_is_kept_whole_by_a_summary() -> None:
    block = response("s1", "ToolSearch", REFERENCES)
    assert loads_tools(block.result)
    assert summarize_response(block, None) is block
    assert not loads_tools([{"type": "text", "text": "tool_reference"}])
    assert not loads_tools("tool_reference")


def test_every_pass_together_leaves_it() -> None:
    history = [human("go"), *search(), *bash("b1"), *search("s2"), *bash("b2"), ai_text("ok")]
    config = dataclasses.replace(
        CONFIG, mask_retention=0, recency_pruning=True, recency_retention=1
    )
    result = optimize(history, config)
    kept = [
        block
        for i, entry in enumerate(history)
        if i not in result.removals
        for block in result.replacements.get(i, entry).blocks
        if isinstance(block, ToolResponseBlock) and block.tool_name == "ToolSearch"
    ]
    assert [b.result for b in kept] == [REFERENCES, REFERENCES]
    # The two Bash outputs go, one to each rule: the rules ran, and left the searches.
    assert (result.metadata.recency_pruned, result.metadata.masked_pruned) == (1, 1)
