"""The OpenAI path with the official ``openai`` Python client, streaming and not.

The test is the agent: it gives the model Claude Code's tools as functions, runs the calls the
scripted fake model asks for on a temporary workspace (read ``notes.txt``, edit it, count its
lines, read it again) and sends the results back, through the proxy, until the model answers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import openai
import pytest

from hdcontext.core.validity import payload_problems, problems
from hdcontext.edges.proxy.openai import BREAKPOINT_KEY, OpenAiApi

from .agent_script import DONE_TEXT, notes_script, notes_workspace
from .conftest import start, stop
from .tap import start_tap
from .test_adapters import conversation

SYSTEM = "You are a careful coding agent."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} a file or run a command",
            "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
        },
    }
    for name in ("Read", "Edit", "Bash")
]


def run_tool(workspace: Path, name: str, args: dict[str, Any]) -> str:
    if name == "Read":
        lines = Path(args["file_path"]).read_text().splitlines()
        return "\n".join(f"{n}\t{line}" for n, line in enumerate(lines, 1))
    if name == "Edit":
        path = Path(args["file_path"])
        path.write_text(path.read_text().replace(args["old_string"], args["new_string"], 1))
        return f"The file {path} has been updated successfully."
    done = subprocess.run(args["command"], shell=True, cwd=workspace, capture_output=True)
    return done.stdout.decode()


async def _call(
    client: openai.AsyncOpenAI, model: str, messages: list[Any], stream: bool, whole: bool = False
) -> Any:
    """One model call; the assistant message as a dict (assembled from chunks when
    streaming; ``whole``: every key the client's message holds, empty ones too, as an agent
    that appends what it got sends it back)."""
    if not stream:
        reply = await client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        return reply.choices[0].message.model_dump(exclude_none=not whole)
    chunks = await client.chat.completions.create(
        model=model,
        messages=messages,
        tools=TOOLS,
        stream=True,
        stream_options={"include_usage": True},
    )
    text = ""
    calls: dict[int, dict[str, Any]] = {}
    async for chunk in chunks:
        for choice in chunk.choices:
            delta = choice.delta
            text += delta.content or ""
            for call in delta.tool_calls or []:
                slot = calls.setdefault(
                    call.index,
                    {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
                )
                slot["id"] += call.id or ""
                if call.function is not None:
                    slot["function"]["name"] += call.function.name or ""
                    slot["function"]["arguments"] += call.function.arguments or ""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [calls[k] for k in sorted(calls)]
    return message


async def _agent(
    base_url: str,
    workspace: Path,
    model: str,
    stream: bool,
    whole: bool = False,
    api_key: str = "sk-fake-key",
) -> str:
    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=api_key, max_retries=0)
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Change alpha to beta in notes.txt and show me the file."},
    ]
    async with client:
        for _ in range(10):
            message = await _call(client, model, messages, stream, whole)
            messages.append(message)
            if not message.get("tool_calls"):
                return str(message.get("content"))
            for call in message["tool_calls"]:
                args = json.loads(call["function"]["arguments"])
                result = run_tool(workspace, call["function"]["name"], args)
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("the agent did not finish")


def _marks(body: dict[str, Any]) -> list[int]:
    return [
        i
        for i, m in enumerate(body["messages"])
        if isinstance(m.get("content"), list) and any(BREAKPOINT_KEY in p for p in m["content"])
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("model", ["gpt-5.6", "gpt-4.1"])
async def test_openai_client_through_the_proxy(tmp_path: Path, stream: bool, model: str) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    notes = workspace / "notes.txt"
    notes.write_text(
        "alpha\n" + "".join(f"line {i}: words about the project\n" for i in range(300))
    )
    running, runners = await start(tmp_path, notes_script(workspace))
    running.fake.openai_usage = {"prompt_tokens": 3000, "completion_tokens": 5}
    tap, tap_runner, tap_url = await start_tap(running.url)
    runners.append(tap_runner)
    try:
        answer = await _agent(tap_url, workspace, model, stream)
        statuses = await running.statuses()
    finally:
        await stop(running, runners)

    assert answer == DONE_TEXT
    assert notes.read_text().startswith("beta\n")
    sent = [body for path, body in tap.sent if path == "/v1/chat/completions"]
    received = [s.body for s in running.fake.api_requests]
    assert len(received) == len(sent) == 5
    api = OpenAiApi()
    for original, body in zip(sent, received, strict=True):
        assert payload_problems("openai", body) == []
        assert problems(conversation(api, body)) == []
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}
        expected = {k: v for k, v in original.items() if k != "messages"}
        if model == "gpt-4.1":
            # It offers a day's retention at no premium: asked for the agent, which chose none.
            expected["prompt_cache_retention"] = "24h"
        assert {k: v for k, v in body.items() if k != "messages"} == expected
        marks = _marks(body)
        if model == "gpt-5.6":
            # GPT-5.6 caches at explicit breakpoints: the last message (a user or tool
            # message here) carries one, at most two in all, none on assistant output.
            assert marks and marks[-1] == len(body["messages"]) - 1
            assert len(marks) <= 2
            assert all(body["messages"][i]["role"] != "assistant" for i in marks)
        else:
            assert marks == []  # older models match any prefix: no field they may refuse

    def call_ids(body: dict[str, Any]) -> set[str]:
        return {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}

    assert "toolu_step0_0" in call_ids(sent[-1])
    assert "toolu_step0_0" not in call_ids(received[-1])
    assert len(json.dumps(received[-1])) < len(json.dumps(sent[-1]))

    (status,) = statuses
    assert status["sessionId"].startswith("proxy-openai-")
    assert status["usage"]["calls"] == len(received)  # streamed too: include_usage was set
    assert status["usage"]["inputTokens"] == 3000 * len(received)


async def test_what_the_client_got_goes_back_as_it_got_it(tmp_path: Path) -> None:
    """The API answers with ``refusal: null`` and ``annotations: []`` on each message, and an
    agent that appends the message it got sends those back (and ``audio`` and
    ``function_call``, null): carried, so the stale read still goes."""
    workspace, _, _ = notes_workspace(tmp_path)
    running, runners = await start(tmp_path, notes_script(workspace))
    running.fake.openai_usage = {"prompt_tokens": 3000, "completion_tokens": 5}
    running.fake.openai_message_extras = {"refusal": None, "annotations": []}
    tap, tap_runner, tap_url = await start_tap(running.url)
    runners.append(tap_runner)
    try:
        answer = await _agent(tap_url, workspace, "gpt-5.6", stream=False, whole=True)
    finally:
        await stop(running, runners)

    assert answer == DONE_TEXT
    sent = [body for path, body in tap.sent if path == "/v1/chat/completions"]
    received = [s.body for s in running.fake.api_requests]
    echoed = [m for m in sent[-1]["messages"] if m["role"] == "assistant"]
    assert echoed and all(
        (m["annotations"], m["audio"], m["function_call"]) == ([], None, None) for m in echoed
    )
    ids = [{c["id"] for m in b["messages"] for c in m.get("tool_calls") or []} for b in received]
    assert "toolu_step0_0" in ids[1] and "toolu_step0_0" not in ids[-1]
    for body in received:
        assert payload_problems("openai", body) == []
