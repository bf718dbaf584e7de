"""Signed thinking through ``hdcontext proxy`` (``core/history/thinking.py``): an agent that talks
to a model with bound thinking (Claude Opus 5.5) through the proxy, Claude Code's way (its whole
conversation in every request, each answer sent back as it came), gets no request refused for
its thinking, where the proxy prunes what it prunes.

The fake upstream answers with signed thinking and, in place of Anthropic, the test checks each
request it receives as Anthropic's prefix check would: a thinking block is valid only after the
very messages (breakpoints aside) of the request the model wrote it in answer to, and the latest
assistant message's thinking comes back byte for byte while its tool use goes on.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from .conftest import Running, start, stop

HEADERS = {
    "x-api-key": "sk-ant-test",
    "anthropic-version": "2023-06-01",
    "content-type": "application/json",
}
BODY = "".join(f"{k:>6}\u2192    value_{k} = compute({k})\n" for k in range(1, 300))

# The model's answers, in order, and what the agent sends after each (a tool's output for each
# call, or the person's next words). The first read of a.py is stale once the model read it
# again: the proxy prunes it when it may.
ANSWERS: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | str]] = [
    ([{"type": "tool_use", "id": "r1", "name": "Read", "input": {"file_path": "/w/a.py"}}], BODY),
    ([{"type": "tool_use", "id": "r2", "name": "Read", "input": {"file_path": "/w/a.py"}}], BODY),
    ([{"type": "tool_use", "id": "b3", "name": "Bash", "input": {"command": "pytest"}}], "ok"),
    ([{"type": "text", "text": "a.py is fixed"}], "thanks; now b.py"),
    ([{"type": "tool_use", "id": "r5", "name": "Read", "input": {"file_path": "/w/b.py"}}], BODY),
    ([{"type": "tool_use", "id": "r6", "name": "Read", "input": {"file_path": "/w/a.py"}}], BODY),
    ([{"type": "text", "text": "b.py is fine too"}], "bye"),
    ([{"type": "text", "text": "bye"}], ""),
]


def thinking(n: int) -> dict[str, Any]:
    return {
        "type": "thinking",
        "thinking": f'The model\'s reasoning before answer {n}: \u00e9 \u2192 "quoted"',
        "signature": f"EqQBCkgIARABGAIiQL{n:04d}+/signed==",
    }


@pytest.fixture
async def proxied(tmp_path: Path) -> AsyncIterator[Running]:
    step = iter(range(len(ANSWERS)))

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        n = next(step)
        return [thinking(n), *ANSWERS[n][0]]

    # Edits apply as soon as the rules allow (the cache-aware default waits for what pays, which
    # a conversation this short never reaches).
    running, runners = await start(
        tmp_path, script, settings={"compression.density.schedule": "every-turn"}
    )
    try:
        yield running
    finally:
        await stop(running, runners)


def plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the prefix check compares it, as the prompt cache does: breakpoints aside,
    and a text given as a string the text block it stands for."""
    content = message["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    content = [{k: v for k, v in b.items() if k != "cache_control"} for b in content]
    return {**message, "content": content}


def with_thinking(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message["content"]
    if message["role"] != "assistant" or not isinstance(content, list):
        return []
    return [b for b in content if b["type"] == "thinking"]


async def converse(running: Running, model: str) -> list[list[dict[str, Any]]]:
    """The agent's side: every request its whole conversation, every answer sent back as it
    came. Returns what it sent each time."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "fix a.py"}]
    sent: list[list[dict[str, Any]]] = []
    async with aiohttp.ClientSession() as client:
        for n, (_, after) in enumerate(ANSWERS):
            body = {
                "model": model,
                "max_tokens": 1000,
                "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
                "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
                "messages": messages,
            }
            sent.append(json.loads(json.dumps(messages)))
            # Compact bytes, as the proxy writes JSON: a block it passes on unchanged is the same
            # bytes whether it keeps the agent's or writes them anew.
            data = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
            async with client.post(running.url + "/v1/messages", data=data, headers=HEADERS) as r:
                assert r.status == 200
                answer = await r.json()
            assert answer["content"][0] == thinking(n)
            messages = [*messages, {"role": "assistant", "content": answer["content"]}]
            calls = [b for b in answer["content"] if b["type"] == "tool_use"]
            if calls:
                results = [
                    {"type": "tool_result", "tool_use_id": c["id"], "content": after} for c in calls
                ]
                messages.append({"role": "user", "content": results})
            elif after:
                messages.append({"role": "user", "content": after})
    return sent


async def test_bound_thinking_reaches_the_upstream_valid(proxied: Running) -> None:
    sent = await converse(proxied, "claude-opus-5-5")
    upstream = proxied.fake.api_requests
    assert len(upstream) == len(sent)
    written_after: dict[str, list[dict[str, Any]]] = {}  # signature -> the request it answered
    pruned_at: int | None = None
    for k, seen in enumerate(upstream):
        messages = seen.body["messages"]
        agent = sent[k]
        if pruned_at is None and len(messages) < len(agent):
            pruned_at = k
        # The latest assistant message, while its tool use goes on, is byte for byte the one the
        # agent sent (and so is each of its thinking blocks, signature and all).
        last = max((i for i, m in enumerate(agent) if m["role"] == "assistant"), default=None)
        if last is not None and any(b["type"] == "tool_use" for b in agent[last]["content"]):
            assert plain(messages[-2]) == plain(agent[last]), k
            for block in with_thinking(agent[last]):
                raw = json.dumps(block, ensure_ascii=False, separators=(",", ":")).encode()
                assert raw in seen.raw, k
        # No thinking block after a message that differs from what it was written after.
        for p, message in enumerate(messages):
            for block in with_thinking(message):
                assert [plain(m) for m in messages[:p]] == written_after[block["signature"]], k
        written_after[thinking(k)["signature"]] = [plain(m) for m in messages]
    # Not vacuous: the stale read was pruned once the turn that read the file again had ended
    # (not before), the thinking after it went with it, and the model's later answers kept theirs.
    assert pruned_at == 4
    assert all("r1" not in json.dumps(seen.body["messages"]) for seen in upstream[4:])
    assert not any(with_thinking(m) for m in upstream[4].body["messages"])
    assert any(with_thinking(m) for m in upstream[5].body["messages"])


async def test_unbound_thinking_is_never_taken_out(proxied: Running) -> None:
    sent = await converse(proxied, "claude-sonnet-4-5")
    upstream = proxied.fake.api_requests
    for k, seen in enumerate(upstream):
        agent_thinking = [b for m in sent[k] for b in with_thinking(m)]
        assert [b for m in seen.body["messages"] for b in with_thinking(m)] == agent_thinking
    # The stale read went while the model was still at work.
    assert "r1" not in json.dumps(upstream[2].body["messages"])
