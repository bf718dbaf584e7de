"""Real sessions with signed thinking through ``hdcontext proxy`` (``core/history/thinking.py``).

Two Claude Code logs whose every model message starts with a signed thinking block are played
as Claude Code plays them: before each of the model's messages, a request holding the whole
conversation so far; the fake upstream answers with that very message, as the log has it. The
agent sends its bytes compactly, as the proxy writes JSON, so that a block the proxy passes on
unchanged is the same bytes whether it keeps the agent's bytes or writes them anew.

In place of Anthropic, the test checks what reaches the upstream:

- while the model's latest message goes on calling tools, its thinking blocks reach the upstream
  byte for byte as the agent sent them (and the message as a whole unchanged), on every model;
- for a model with bound thinking (Claude Opus 5.5), no thinking block follows messages other
  than those of the request the model wrote it in answer to (Anthropic's prefix check);
- for a model without it, every thinking block the agent sent reaches the upstream.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
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
TRANSCRIPTS = (
    Path(__file__).resolve().parents[3] / "shared" / "data" / "transcripts" / "claude-code"
)
LOGS = [
    TRANSCRIPTS / f"{n}.jsonl"
    for n in ("jssoundrecorder-7acd37a8", "coderabbit-review-helper-cb2e607c")
]
BOUND = "claude-opus-5-5"
UNBOUND = "claude-sonnet-4-5"
# Edits apply as soon as the rules allow, so that the rules have something to hold back (the
# cache-aware default waits for what pays, which these short sessions seldom reach).
EVERY_TURN = {"compression.density.schedule": "every-turn"}


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def log_messages(path: Path) -> list[dict[str, Any]]:
    """The main thread of a Claude Code log as the Messages API reads it: its user and assistant
    records in order, consecutive records of one role (one model message is written as a record
    a block; parallel tool results as a record each) joined into one message."""
    messages: list[dict[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("type") not in ("user", "assistant") or record.get("isSidechain"):
            continue
        role = record["message"]["role"]
        content = record["message"]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": list(blocks)})
    return messages


def thinking_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    if message["role"] != "assistant" or isinstance(message["content"], str):
        return []
    return [b for b in message["content"] if b["type"] in ("thinking", "redacted_thinking")]


def plain(message: dict[str, Any]) -> dict[str, Any]:
    """A message as the prefix check compares it: breakpoints aside, a string the text block it
    stands for."""
    content = message["content"]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    return {
        **message,
        "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in content],
    }


def calls_tools(message: dict[str, Any]) -> bool:
    return any(b["type"] == "tool_use" for b in plain(message)["content"])


@pytest.fixture(params=LOGS, ids=[p.stem for p in LOGS])
def log(request: pytest.FixtureRequest) -> list[dict[str, Any]]:
    path: Path = request.param
    if not path.exists():
        pytest.skip(f"no transcript at {path}")
    messages = log_messages(path)
    # The logs are what the test says: every model message signed thinking, opened by it.
    answers = [m for m in messages if m["role"] == "assistant"]
    assert len(answers) > 30
    assert all(m["content"][0]["type"] == "thinking" for m in answers)
    assert all(b.get("signature") for m in answers for b in thinking_of(m))
    return messages


@pytest.fixture
async def proxied(tmp_path: Path, log: list[dict[str, Any]]) -> AsyncIterator[Running]:
    answers: Iterator[dict[str, Any]] = iter(m for m in log if m["role"] == "assistant")

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        content: list[dict[str, Any]] = next(answers)["content"]
        return content

    running, runners = await start(tmp_path, script, settings=EVERY_TURN)
    try:
        yield running
    finally:
        await stop(running, runners)


async def play(running: Running, log: list[dict[str, Any]], model: str) -> list[bytes]:
    """The agent: before each of the model's messages, the conversation so far. Returns the
    bodies it sent."""
    tools = sorted({b["name"] for m in log for b in m["content"] if b["type"] == "tool_use"})
    sent: list[bytes] = []
    async with aiohttp.ClientSession() as client:
        for i, message in enumerate(log):
            if message["role"] != "assistant":
                continue
            body = {
                "model": model,
                "max_tokens": 32_000,
                "system": [{"type": "text", "text": "You are Claude Code."}],
                "tools": [{"name": n, "input_schema": {"type": "object"}} for n in tools],
                "messages": log[:i],
            }
            sent.append(compact(body))
            url = running.url + "/v1/messages"
            async with client.post(url, data=sent[-1], headers=HEADERS) as r:
                assert r.status == 200, await r.text()
                answer = await r.json()
            assert answer["content"] == message["content"]
    return sent


async def test_a_bound_models_real_session_keeps_its_latest_thinking_byte_for_byte(
    proxied: Running, log: list[dict[str, Any]]
) -> None:
    sent = await play(proxied, log, BOUND)
    upstream = proxied.fake.api_requests
    assert len(upstream) == len(sent)
    written_after: dict[str, list[dict[str, Any]]] = {}  # signature -> the request it answered
    answers = [m for m in log if m["role"] == "assistant"]
    guarded = stripped = 0
    for k, seen in enumerate(upstream):
        agent = json.loads(sent[k])["messages"]
        messages = seen.body["messages"]
        # The model's latest message, while its tool use goes on: the same message, its thinking
        # the agent's bytes.
        last = max((i for i, m in enumerate(agent) if m["role"] == "assistant"), default=None)
        if last is not None and calls_tools(agent[last]):
            theirs = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
            assert thinking_of(messages[theirs]) == thinking_of(agent[last]), k
            for block in thinking_of(agent[last]):
                assert compact(block) in seen.raw, k
            assert plain(messages[theirs]) == plain(agent[last]), k
            guarded += [plain(m) for m in messages] != [plain(m) for m in agent]
        # No thinking block after anything other than what it was written after.
        for p, message in enumerate(messages):
            for block in thinking_of(message):
                assert [plain(m) for m in messages[:p]] == written_after[block["signature"]], k
        for block in thinking_of(answers[k]):
            written_after[block["signature"]] = [plain(m) for m in messages]
        stripped += sum(map(len, map(thinking_of, messages))) < sum(
            map(len, map(thinking_of, agent))
        )
    # Not vacuous: the proxy pruned while a turn went on, and took thinking an edit invalidated.
    assert guarded > 0 and stripped > 0


async def test_an_unbound_models_real_session_keeps_every_thinking_block(
    proxied: Running, log: list[dict[str, Any]]
) -> None:
    sent = await play(proxied, log, UNBOUND)
    upstream = proxied.fake.api_requests
    pruned = 0
    for k, seen in enumerate(upstream):
        agent = json.loads(sent[k])["messages"]
        last = max((i for i, m in enumerate(agent) if m["role"] == "assistant"), default=None)
        if last is not None and calls_tools(agent[last]):
            messages = seen.body["messages"]
            theirs = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
            assert plain(messages[theirs]) == plain(agent[last]), k
        blocks = [b for m in agent for b in thinking_of(m)]
        assert [b for m in seen.body["messages"] for b in thinking_of(m)] == blocks, k
        for block in blocks:
            assert compact(block) in seen.raw, k
        pruned += [plain(m) for m in seen.body["messages"]] != [plain(m) for m in agent]
    assert pruned > 0  # not vacuous: the proxy did prune these requests
