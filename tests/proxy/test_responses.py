"""OpenAI's Responses API through the proxy, with the official ``openai`` client as the agent
(``responses.create`` in one body and streamed, and ``responses.stream``).

The test is the agent, as Codex is one: it sends its whole conversation as ``input`` items
every turn with ``store: false``, the model's output items appended as they came (encrypted
reasoning among them) and each call's output after it; it runs the calls the scripted fake
model asks for on a temporary workspace (read ``notes.txt``, edit it, count its lines, read
it again) until the model answers.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp
import openai
import pytest

from hdcontext.core.validity import payload_problems
from hdcontext.edges.proxy.openai import BREAKPOINT_KEY

from .agent_script import DONE_TEXT, notes_script, notes_workspace
from .conftest import Running, start, stop
from .fake_upstream import encrypted
from .tap import start_tap
from .test_openai_client import SYSTEM, run_tool

TOOLS = [
    {
        "type": "function",
        "name": name,
        "description": f"{name} a file or run a command",
        "parameters": {"type": "object", "properties": {}, "additionalProperties": True},
        "strict": False,
    }
    for name in ("Read", "Edit", "Bash")
]
ASK = "Change alpha to beta in notes.txt and show me the file."


async def _respond(client: openai.AsyncOpenAI, model: str, items: list[Any], how: str) -> Any:
    """One call, as the agent makes it; the whole response."""
    fields: dict[str, Any] = {
        "model": model,
        "input": items,
        "tools": TOOLS,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "conversation-1",
    }
    if how == "json":
        return await client.responses.create(**fields)
    if how == "stream":
        done = None
        async for event in await client.responses.create(**fields, stream=True):
            if event.type == "response.completed":
                done = event.response
        return done
    async with client.responses.stream(**fields) as stream:
        return await stream.get_final_response()


async def agent(
    base_url: str, workspace: Path, model: str, how: str, api_key: str = "sk-fake-key"
) -> str:
    client = openai.AsyncOpenAI(base_url=base_url + "/v1", api_key=api_key, max_retries=0)
    items: list[Any] = [
        {"role": "developer", "content": SYSTEM},
        {"role": "user", "content": ASK},
    ]
    async with client:
        for _ in range(10):
            response = await _respond(client, model, items, how)
            output = [item.model_dump(exclude_none=True) for item in response.output]
            items.extend(output)
            calls = [i for i in output if i["type"] == "function_call"]
            if not calls:
                return str(response.output_text)
            for call in calls:
                result = run_tool(workspace, call["name"], json.loads(call["arguments"]))
                items.append(
                    {"type": "function_call_output", "call_id": call["call_id"], "output": result}
                )
    raise AssertionError("the agent did not finish")


def _marks(body: dict[str, Any]) -> list[int]:
    marked = []
    for i, item in enumerate(body["input"]):
        parts = item.get("content") if "content" in item else item.get("output")
        if isinstance(parts, list) and any(BREAKPOINT_KEY in p for p in parts):
            marked.append(i)
    return marked


def _call_ids(body: dict[str, Any]) -> list[str]:
    return [i["call_id"] for i in body["input"] if i.get("type") == "function_call"]


async def _run(tmp_path: Path, model: str, how: str) -> tuple[Running, list[Any], list[Any], str]:
    workspace, notes, _ = notes_workspace(tmp_path)
    running, runners = await start(tmp_path, notes_script(workspace))
    tap, tap_runner, tap_url = await start_tap(running.url)
    runners.append(tap_runner)
    try:
        answer = await agent(tap_url, workspace, model, how)
        statuses = await running.statuses()
    finally:
        await stop(running, runners)
    assert notes.read_text().startswith("beta\n")
    sent = [body for path, body in tap.sent if path == "/v1/responses"]
    received = [s.body for s in running.fake.api_requests]
    (status,) = statuses
    assert status["sessionId"].startswith("proxy-responses-")
    assert status["usage"]["calls"] == len(received)
    assert status["usage"]["inputTokens"] == 1300 * len(received)
    return running, sent, received, answer


@pytest.mark.parametrize("how", ["json", "stream", "helper"])
@pytest.mark.parametrize("model", ["gpt-5.6", "gpt-4.1"])
async def test_the_openai_client_through_the_proxy(tmp_path: Path, model: str, how: str) -> None:
    """Every request carried: the stale read gone from the last one, everything but ``input``
    as sent (a day's retention added for the older model, which offers it free), every
    reasoning item the model wrote back upstream byte for byte and before the item it led,
    the breakpoints on the items that may carry one (GPT-5.6), each request valid."""
    _, sent, received, answer = await _run(tmp_path, model, how)
    assert answer == DONE_TEXT
    assert len(sent) == len(received) == 5
    for original, body in zip(sent, received, strict=True):
        assert payload_problems("openai-responses", body) == []
        expected = {k: v for k, v in original.items() if k != "input"}
        if model == "gpt-4.1":
            expected["prompt_cache_retention"] = "24h"
        assert {k: v for k, v in body.items() if k != "input"} == expected
        assert body["input"][0] == {"role": "developer", "content": SYSTEM}
        reasoning = [i for i in body["input"] if i.get("type") == "reasoning"]
        ids = [int(i["id"].removeprefix("rs_")) for i in reasoning]
        assert [i["encrypted_content"] for i in reasoning] == [encrypted(k) for k in ids]
        for k, item in enumerate(body["input"]):
            if item.get("type") == "reasoning":
                assert body["input"][k + 1].get("type") in ("function_call", "message")
        marks = _marks(body)
        if model == "gpt-5.6":
            assert marks and marks[-1] == len(body["input"]) - 1
            assert len(marks) <= 3
            assert all(body["input"][i].get("role") != "assistant" for i in marks)
        else:
            assert marks == []
    # The first read of notes.txt is stale after the edit and the second whole read.
    assert "toolu_step0_0" in _call_ids(sent[-1])
    assert "toolu_step0_0" not in _call_ids(received[-1])
    assert len(json.dumps(received[-1])) < len(json.dumps(sent[-1]))
    # Its reasoning item went with it; every other one the agent sent is there.
    kept = {i["id"] for i in received[-1]["input"] if i.get("type") == "reasoning"}
    assert kept == {i["id"] for i in sent[-1]["input"] if i.get("type") == "reasoning"} - {"rs_1"}


@pytest.mark.parametrize(
    ("extra", "why"),
    [
        ({"previous_response_id": "resp_0"}, "previous_response_id"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"input_more": [{"type": "compaction_trigger"}]}, "compaction_trigger"),
        ({"input_more": [{"type": "mcp_call", "id": "m"}]}, "'mcp_call'"),
        ({"input_more": [{"type": "function_call_output", "call_id": "nowhere"}]}, "output"),
    ],
    ids=["previous_response_id", "conversation", "compaction_trigger", "unknown", "orphan"],
)
async def test_what_cannot_be_carried_goes_as_it_came_with_its_reason(
    running: Running, extra: dict[str, Any], why: str
) -> None:
    """A request whose history the provider holds, one that asks it to compact, one with
    an item kind hdcontext does not carry and one whose output has no call: each goes
    upstream byte for byte, and the savings page says why, by kind."""
    items: list[Any] = [{"role": "user", "content": "hello " * 50}]
    items += extra.pop("input_more", [])
    body = {"model": "gpt-5.6", "input": items, "store": False, **extra}
    raw = json.dumps(body).encode()
    async with aiohttp.ClientSession() as client:
        async with client.post(
            running.url + "/v1/responses",
            data=raw,
            headers={"Authorization": "Bearer sk-x", "Content-Type": "application/json"},
        ) as response:
            assert response.status == 200
        async with client.get(running.url + "/hdcontext/stats.json") as response:
            figures = await response.json()
    assert running.fake.api_requests[-1].raw == raw
    reasons = " ".join(r["why"] for r in figures["proxy"]["reasons"])
    assert figures["proxy"]["asSent"] == 1
    assert reasons.startswith("responses ") and why in reasons
    assert "hello" not in reasons


async def test_items_before_the_latest_compaction_stay_as_they_came(running: Running) -> None:
    """Codex's remote compaction: one ``compaction`` item stands for all that came before
    it. Nothing up to it is read into the session or changed; what follows is carried."""
    compaction = {"type": "compaction", "encrypted_content": encrypted(7)}
    stale = {"role": "user", "content": "old " * 20}
    items = [
        {"role": "developer", "content": SYSTEM},
        stale,
        compaction,
        {"role": "user", "content": ASK},
    ]
    body = {"model": "gpt-5.6", "input": items, "store": False}
    async with (
        aiohttp.ClientSession() as client,
        client.post(
            running.url + "/v1/responses", json=body, headers={"Authorization": "Bearer sk-x"}
        ) as response,
    ):
        assert response.status == 200
    got = running.fake.api_requests[-1].body
    assert got["input"][:3] == items[:3]
    assert [i.get("content") for i in got["input"][3:]] != []
    (status,) = await running.statuses()
    assert status["entryCount"] == 1  # the one item after the compaction


async def test_a_codex_like_request_is_left_alone_where_nothing_is_stale(
    tmp_path: Path,
) -> None:
    """Nothing to prune: the items the agent sent reach the upstream as it sent them (the
    day's retention aside), reasoning included."""
    workspace, _, _ = notes_workspace(tmp_path)
    running, runners = await start(tmp_path, notes_script(workspace))
    try:
        client = openai.AsyncOpenAI(base_url=running.url + "/v1", api_key="sk-x", max_retries=0)
        async with client:
            first = await _respond(client, "gpt-4.1", [{"role": "user", "content": ASK}], "json")
            items = [{"role": "user", "content": ASK}]
            items += [i.model_dump(exclude_none=True) for i in first.output]
            items.append(
                {"type": "function_call_output", "call_id": "toolu_step0_0", "output": "x"}
            )
            await _respond(client, "gpt-4.1", items, "json")
    finally:
        await stop(running, runners)
    assert running.fake.api_requests[-1].body["input"] == items


async def test_a_request_the_provider_refuses_after_an_edit_goes_again_as_sent(
    tmp_path: Path,
) -> None:
    """A provider rule hdcontext does not know: the upstream refuses (400) any request that
    lacks the first call. The edited request it refused goes again as the agent sent it,
    once; the agent finishes as it would without the proxy; the reason is counted by the
    error's kind (never its message); the conversation goes as sent from then on."""
    workspace, notes, _ = notes_workspace(tmp_path)
    running, runners = await start(tmp_path, notes_script(workspace))
    error = {
        "error": {
            "type": "invalid_request_error",
            "code": "missing_required_item",
            "param": "input",
            "message": "Item 'toolu_step0_0' secret words of the conversation",
        }
    }

    def rule(body: Any) -> dict[str, Any] | None:
        said = json.dumps(body)
        return error if "function_call" in said and "toolu_step0_0" not in said else None

    running.fake.refuse_if = rule
    tap, tap_runner, tap_url = await start_tap(running.url)
    runners.append(tap_runner)
    try:
        answer = await agent(tap_url, workspace, "gpt-5.6", "json")
        async with (
            aiohttp.ClientSession() as client,
            client.get(running.url + "/hdcontext/stats.json") as response,
        ):
            figures = await response.json()
        session = running.proxy.state.compactor.as_sent
        (status,) = await running.statuses()
    finally:
        await stop(running, runners)
    assert answer == DONE_TEXT and notes.read_text().startswith("beta\n")
    sent = [body for path, body in tap.sent if path == "/v1/responses"]
    received = [s.body for s in running.fake.api_requests]
    assert len(received) == len(sent) + 1
    assert "toolu_step0_0" not in _call_ids(received[-2])  # the edit, refused
    assert received[-1] == sent[-1]  # again, as the agent sent it
    assert status["sessionId"] in session
    (reason,) = figures["proxy"]["reasons"]
    assert reason["requests"] == 1
    assert "missing_required_item" in reason["why"] and "secret" not in reason["why"]
    assert status["usage"]["calls"] == len(sent)  # the refused call was taken back


async def test_a_websocket_is_refused_so_that_the_agent_uses_http_at_once(
    running: Running,
) -> None:
    """Codex's built-in OpenAI provider asks for a WebSocket on ``/v1/responses`` first:
    the proxy answers 426 at once (Codex falls back to HTTP within 100 ms), forwards
    nothing, and counts it."""
    async with aiohttp.ClientSession() as client:
        with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
            await client.ws_connect(
                running.url + "/v1/responses",
                headers={
                    "Authorization": "Bearer sk-x",
                    "openai-beta": "responses_websockets=2026-02-06",
                },
            )
    assert refused.value.status == 426
    assert running.fake.seen == []
    assert running.proxy.state.uncarried.not_forwarded


@pytest.mark.parametrize(
    ("fields", "ttl_s"),
    [
        ({"model": "gpt-5.6", "prompt_cache_options": {"ttl": "12h"}}, 12 * 3600),
        ({"model": "gpt-4.1"}, 3600),  # the day's retention the proxy asks
        ({"model": "gpt-4.1", "prompt_cache_retention": "in_memory"}, None),
        ({"model": "gpt-4.1", "prompt_cache_options": {"mode": "implicit"}}, None),
    ],
    ids=["own-12h", "asked-24h", "own-in-memory", "own-options"],
)
async def test_the_agents_own_cache_lifetime_is_kept_and_counted_on(
    running: Running, fields: dict[str, Any], ttl_s: int | None
) -> None:
    """The agent's ``prompt_cache_options`` and ``prompt_cache_retention`` go as sent, never
    beside one the proxy adds; the daemon prices entries as living as long as they were asked
    to (twelve hours; a day's retention, counted as an hour), else the model's own."""
    body = {**fields, "input": [{"role": "user", "content": "hello " * 40}], "store": False}
    async with (
        aiohttp.ClientSession() as client,
        client.post(
            running.url + "/v1/responses", json=body, headers={"Authorization": "Bearer sk-x"}
        ) as response,
    ):
        assert response.status == 200
    got = running.fake.api_requests[-1].body
    expected = {k: v for k, v in body.items() if k != "input"}
    if ttl_s == 3600:
        expected["prompt_cache_retention"] = "24h"
    assert {k: v for k, v in got.items() if k != "input"} == expected
    (status,) = await running.statuses()
    session = await running.daemon.registry.get(status["sessionId"])
    assert session.overrides.get("cache.ttlSeconds") == ttl_s


@pytest.mark.parametrize(
    ("model", "window"),
    [("gpt-5.5", 272_000), ("gpt-6.2-sol", 500_000), ("gpt-4.1", 1_047_576), ("mystery", 200_000)],
)
async def test_a_session_compresses_near_its_own_models_window(
    running: Running, model: str, window: int
) -> None:
    """The proxy's sessions take the window of the model a request names (the price table's,
    by the model or its family), not a default that can be a fraction of it: a Codex session
    compressing every turn from 170,000 tokens on, of 272,000, cost 1.99x sending everything.
    A model the table does not know keeps the setting's."""
    body = {"model": model, "input": [{"role": "user", "content": "hello"}], "store": False}
    async with (
        aiohttp.ClientSession() as client,
        client.post(
            running.url + "/v1/responses", json=body, headers={"Authorization": "Bearer sk-x"}
        ) as response,
    ):
        assert response.status == 200
    (status,) = await running.statuses()
    assert status["contextLimit"] == window
