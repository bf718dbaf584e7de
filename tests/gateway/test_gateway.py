"""The LiteLLM callback's hooks in this process, without LiteLLM: ``Gateway`` handed what
LiteLLM hands its callbacks (``data`` with LiteLLM's own entries beside the client's fields, a
``UserAPIKeyAuth``-like object, the success hook's ``kwargs`` with the normalized usage), over a
real daemon and compactor in a temporary folder. The scripted agent of the proxy's tests works
on ``notes.txt`` (read, edit, count, read again, answer); what ``data`` holds after the pre-call
hook is what LiteLLM would send upstream. ``test_litellm_proxy.py`` runs the same through the
real LiteLLM proxy."""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
import logging
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from hdcontext.core.validity import payload_problems
from hdcontext.edges.proxy.anthropic import AnthropicApi
from hdcontext.edges.stats.owners import read_owners, tag_of
from hdcontext.edges.stats.report import read
from hdcontext.edges.storage.location import Location
from hdcontext.edges.storage.store import open_reader
from hdcontext.litellm.gateway import Gateway
from hdcontext.litellm.identity import owner_of
from hdcontext.litellm.runtime import Config, Process
from tests.proxy.agent_script import DONE_TEXT, notes_script, notes_workspace
from tests.proxy.test_openai_client import SYSTEM, TOOLS, run_tool

ALICE = SimpleNamespace(
    token="a" * 64, api_key="a" * 64, user_id="alice", team_id="team-a", key_alias="laptop"
)
BOB = SimpleNamespace(token="b" * 64, api_key="b" * 64, user_id="bob", team_id="team-b")
IDS = itertools.count(1)


def gateway(storage: Path, bound_s: float = 10.0) -> Gateway:
    return Gateway(Process(lambda: Config(storage=Location(folder=storage), bound_s=bound_s)))


def as_litellm_gives_it(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as LiteLLM hands it to a pre-call hook: its own entries beside the client's,
    some of them no JSON (the logging object)."""
    data = copy.deepcopy(body)
    data["litellm_call_id"] = f"call-{next(IDS)}"
    data["litellm_logging_obj"] = object()
    headers = {"user-agent": "AsyncOpenAI/Python 3", "content-length": str(next(IDS))}
    data["metadata"] = {"headers": headers, "user_api_key_hash": "a" * 64}
    data["proxy_server_request"] = {"body": copy.deepcopy(body), "headers": headers}
    data["secret_fields"] = {"raw_headers": {"authorization": "Bearer sk-secret"}}
    return data


def usage_kwargs(call_id: str, prompt: int = 3000, read: int = 2000) -> dict[str, Any]:
    usage = {
        "prompt_tokens": prompt,
        "completion_tokens": 5,
        "prompt_tokens_details": {"cached_tokens": read, "cache_write_tokens": 100},
    }
    return {
        "litellm_call_id": call_id,
        "standard_logging_object": {"metadata": {"usage_object": usage}},
    }


def reply(blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """The script's blocks as an OpenAI assistant message."""
    text = "".join(b["text"] for b in blocks if b["type"] == "text") or None
    message: dict[str, Any] = {"role": "assistant", "content": text}
    calls = [
        {
            "id": b["id"],
            "type": "function",
            "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
        }
        for b in blocks
        if b["type"] == "tool_use"
    ]
    if calls:
        message["tool_calls"] = calls
    return message


async def run_agent(
    gate: Gateway, auth: Any, workspace: Path, model: str = "gpt-5.6"
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The agent through the hooks until it answers: (what it sent, what would go upstream)."""
    script = notes_script(workspace)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Change alpha to beta in notes.txt and show me the file."},
    ]
    sent, upstream = [], []
    for _ in range(10):
        body = {"model": model, "messages": copy.deepcopy(messages), "tools": TOOLS}
        data = as_litellm_gives_it(body)
        await gate.pre_call(auth, data, "acompletion")
        sent.append(body)
        upstream.append({k: v for k, v in data.items() if k != "litellm_logging_obj"})
        message = reply(script(data))
        await gate.answered(data)
        await gate.succeeded(usage_kwargs(data["litellm_call_id"]), {"choices": []})
        messages.append(message)
        if not message.get("tool_calls"):
            assert message["content"] == DONE_TEXT
            return sent, upstream
        for call in message["tool_calls"]:
            result = run_tool(
                workspace, call["function"]["name"], json.loads(call["function"]["arguments"])
            )
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    raise AssertionError("the agent did not finish")


def call_ids(body: dict[str, Any]) -> set[str]:
    return {c["id"] for m in body["messages"] for c in m.get("tool_calls") or []}


async def test_the_stale_read_goes_and_the_calls_are_told(tmp_path: Path) -> None:
    workspace, notes, _ = notes_workspace(tmp_path)
    gate = gateway(tmp_path / "storage")
    try:
        sent, upstream = await run_agent(gate, ALICE, workspace)
        runtime = gate.process.runtime
        assert runtime is not None
        await runtime.compactor.saved()
        listed = await runtime.daemon.list({})
    finally:
        await gate.close()

    assert notes.read_text().startswith("beta\n")
    assert len(sent) == len(upstream) == 5
    for body in upstream:
        assert (
            payload_problems("openai", {k: body[k] for k in ("model", "messages", "tools")}) == []
        )
        assert body["messages"][0] == {"role": "system", "content": SYSTEM}
        assert body["tools"] == TOOLS and body["model"] == "gpt-5.6"
    assert "toolu_step0_0" in call_ids(sent[-1])
    assert "toolu_step0_0" not in call_ids(upstream[-1])
    assert len(json.dumps(upstream[-1]["messages"])) < len(json.dumps(sent[-1]["messages"]))
    # LiteLLM's own entries are left as they were.
    assert upstream[-1]["secret_fields"] == {"raw_headers": {"authorization": "Bearer sk-secret"}}

    (status,) = listed["sessions"]
    assert tag_of(status["sessionId"]) == owner_of(ALICE).tag
    assert status["sessionId"].startswith(f"litellm-{owner_of(ALICE).tag}-openai-")
    assert status["usage"]["calls"] == 5
    assert status["usage"]["inputTokens"] == 3000 * 5
    assert status["usage"]["cacheReadTokens"] == 2000 * 5


async def test_one_owner_never_gets_anothers_history(tmp_path: Path) -> None:
    """Byte-identical conversations of two owners are two sessions, each with its own calls;
    who each owner is goes to the store, the key only as its hash's first digits."""
    storage = tmp_path / "storage"
    gate = gateway(storage)
    workspace, notes, _ = notes_workspace(tmp_path)
    first = notes.read_text()
    sent: list[list[dict[str, Any]]] = []
    try:
        for who in (ALICE, BOB):
            notes.write_text(first)
            sent.append((await run_agent(gate, who, workspace))[0])
        runtime = gate.process.runtime
        assert runtime is not None
        await runtime.compactor.saved()
        await runtime.owners.flush()
        listed = await runtime.daemon.list({})
    finally:
        await gate.close()

    assert sent[0] == sent[1]  # byte for byte the same conversation
    sessions = {s["sessionId"]: s for s in listed["sessions"]}
    assert {tag_of(sid) for sid in sessions} == {owner_of(ALICE).tag, owner_of(BOB).tag}
    assert all(s["usage"]["calls"] == 5 for s in sessions.values())
    owners = read_owners(storage)
    assert owners[owner_of(ALICE).tag] == {
        "user": "alice",
        "team": "team-a",
        "keyAlias": "laptop",
        "key": "a" * 12,
    }
    assert owners[owner_of(BOB).tag]["user"] == "bob"
    with open_reader(storage) as reader:
        assert "a" * 13 not in json.dumps(reader.owners())  # the key's hash only shortened


async def test_a_failure_inside_hdcontext_leaves_the_request_as_it_came(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    gate = gateway(tmp_path / "storage")
    body = {
        "model": "gpt-5.6",
        "messages": [{"role": "user", "content": "hello, the secret word is tangerine"}],
    }
    try:
        data = as_litellm_gives_it(body)
        await gate.pre_call(ALICE, data, "acompletion")  # starts it, and carries this one
        await gate.succeeded(usage_kwargs(data["litellm_call_id"]), None)
        runtime = gate.process.runtime
        assert runtime is not None

        async def broken(*args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("tangerine")

        runtime.compactor.compact = broken  # type: ignore[method-assign]
        data = as_litellm_gives_it(body)
        before = {k: v for k, v in data.items() if k != "litellm_logging_obj"}
        with caplog.at_level(logging.DEBUG, logger="hdcontext"):
            await gate.pre_call(ALICE, data, "acompletion")
        assert {k: v for k, v in data.items() if k != "litellm_logging_obj"} == before
        assert "hdcontext failed: RuntimeError" in caplog.text
        assert "tangerine" not in caplog.text and "sk-secret" not in caplog.text
        # Its answer, and a failure, are told to nothing and raise nothing.
        await gate.succeeded(usage_kwargs(data["litellm_call_id"]), None)
        await gate.failed(data, RuntimeError("upstream"))
    finally:
        await gate.close()


async def test_a_store_that_cannot_be_opened_leaves_every_request_as_it_came(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    poisoned = tmp_path / "a-file"
    poisoned.write_text("not a folder")
    gate = gateway(poisoned)
    body = {"model": "gpt-5.6", "messages": [{"role": "user", "content": "hi"}]}
    try:
        with caplog.at_level(logging.WARNING, logger="hdcontext"):
            for _ in range(3):
                data = as_litellm_gives_it(body)
                await gate.pre_call(ALICE, data, "acompletion")
                assert data["messages"] == body["messages"]
    finally:
        await gate.close()
    assert gate.process.off is not None
    assert caplog.text.count("off in this process") == 1


async def test_a_folder_another_process_holds_leaves_the_requests_as_they_came(
    tmp_path: Path,
) -> None:
    """A second LiteLLM worker on the same SQLite folder: it says why once and stays out of
    the way."""
    storage = tmp_path / "storage"
    storage.mkdir(mode=0o700)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from pathlib import Path; "
            "from hdcontext.edges.storage import storage_lock; "
            f"storage_lock.acquire(Path({str(storage)!r})); print('held', flush=True); "
            "time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        gate = gateway(storage)
        body = {"model": "gpt-5.6", "messages": [{"role": "user", "content": "hi"}]}
        data = as_litellm_gives_it(body)
        await gate.pre_call(ALICE, data, "acompletion")
        assert data["messages"] == body["messages"]
        assert gate.process.off is not None and "one LiteLLM worker" in gate.process.off
        await gate.close()
    finally:
        holder.kill()
        holder.wait()


async def test_what_hdcontext_does_not_carry_goes_as_it_came(tmp_path: Path) -> None:
    gate = gateway(tmp_path / "storage")
    try:
        for call_type, data in [
            ("aembedding", {"model": "e", "input": ["x"]}),
            ("acompletion", {"model": "gpt-5.6", "messages": "not a list"}),
            ("aresponses", {"model": "gpt-5.6", "input": "a plain prompt"}),
            ("acompletion", {"model": "gpt-5.6", "messages": [{"role": "user", "content": {1}}]}),
            ("anthropic_messages", {"model": "claude", "messages": [{"role": "nobody"}]}),
        ]:
            before = repr(data)
            await gate.pre_call(ALICE, data, call_type)
            assert repr(data) == before, call_type
        await gate.pre_call(None, None, "acompletion")  # LiteLLM's odd calls raise nothing
    finally:
        await gate.close()


async def test_anthropic_messages_get_their_breakpoints(tmp_path: Path) -> None:
    """``/v1/messages`` as LiteLLM hands it (``system`` apart): the conversation written back
    with the cache breakpoints the daemon placed, the system prompt left as sent."""
    gate = gateway(tmp_path / "storage")
    messages: list[dict[str, Any]] = [{"role": "user", "content": "read it"}]
    for n in range(3):
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": f"toolu_{n}", "name": "Read", "input": {}}],
            }
        )
        content = [{"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": "x" * 4000}]
        messages.append({"role": "user", "content": content})
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "system": "be brief",
        "messages": messages,
    }
    try:
        data = as_litellm_gives_it(body)
        await gate.pre_call(BOB, data, "anthropic_messages")
    finally:
        await gate.close()
    assert data["system"] == "be brief"
    marked = [
        i
        for i, m in enumerate(data["messages"])
        if isinstance(m["content"], list) and any("cache_control" in b for b in m["content"])
    ]
    assert marked and marked[-1] == len(data["messages"]) - 1
    assert payload_problems("anthropic", {k: data[k] for k in body}) == []
    assert AnthropicApi().name == "anthropic"


async def test_an_edit_the_provider_refused_sends_the_conversation_as_it_comes(
    tmp_path: Path,
) -> None:
    """A 400 to an edited request: the agent's retry goes as it came; taken as it came, the
    conversation goes as it comes from then on."""
    workspace, _, _ = notes_workspace(tmp_path)
    gate = gateway(tmp_path / "storage")
    try:
        _, upstream = await run_agent(gate, ALICE, workspace)
        last = copy.deepcopy(upstream[-1])
        agent_body = {k: v for k, v in last.items() if k in ("model", "tools")}
        sent, _ = await run_agent(gate, ALICE, workspace)  # the same conversation again
        agent_body["messages"] = sent[-1]["messages"]

        data = as_litellm_gives_it(agent_body)
        await gate.pre_call(ALICE, data, "acompletion")
        assert data["messages"] != agent_body["messages"]  # edited
        await gate.failed(data, SimpleNamespace(status_code=400))

        retry = as_litellm_gives_it(agent_body)
        await gate.pre_call(ALICE, retry, "acompletion")
        assert retry["messages"] == agent_body["messages"]  # as it came
        await gate.succeeded(usage_kwargs(retry["litellm_call_id"]), None)

        again = as_litellm_gives_it(agent_body)
        await gate.pre_call(ALICE, again, "acompletion")
        assert again["messages"] == agent_body["messages"]  # and from then on
    finally:
        await gate.close()


async def test_the_retention_hdcontext_asks_goes_where_litellm_passes_it_on(tmp_path: Path) -> None:
    """A day's retention, free on GPT-4.1: in ``extra_body`` on chat completions (LiteLLM
    drops an unknown field at the top there), at the top on the Responses API."""
    gate = gateway(tmp_path / "storage")
    try:
        chat = as_litellm_gives_it(
            {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}
        )
        await gate.pre_call(ALICE, chat, "acompletion")
        responses = as_litellm_gives_it(
            {"model": "gpt-4.1", "input": [{"role": "user", "content": "hi"}]}
        )
        await gate.pre_call(ALICE, responses, "aresponses")
    finally:
        await gate.close()
    assert chat["extra_body"] == {"prompt_cache_retention": "24h"}
    assert "prompt_cache_retention" not in chat
    assert responses["prompt_cache_retention"] == "24h" and "extra_body" not in responses


async def test_a_bill_logged_after_the_next_request_came_is_still_its_own_calls(
    tmp_path: Path,
) -> None:
    """LiteLLM logs a call's success after its answer went out: the conversation's next
    request waits for it, so that each bill is its own call's."""
    storage = tmp_path / "storage"
    gate = gateway(storage)
    messages: list[dict[str, Any]] = [{"role": "user", "content": "hi"}]
    try:
        first = as_litellm_gives_it({"model": "gpt-4.1", "messages": messages})
        await gate.pre_call(ALICE, first, "acompletion")

        async def logged_late() -> None:
            await asyncio.sleep(0.2)
            await gate.succeeded(usage_kwargs(first["litellm_call_id"], 111, 0), None)

        late = asyncio.ensure_future(logged_late())
        messages += [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "go"}]
        second = as_litellm_gives_it({"model": "gpt-4.1", "messages": messages})
        await gate.pre_call(ALICE, second, "acompletion")
        assert late.done()
        await gate.succeeded(usage_kwargs(second["litellm_call_id"], 222, 100), None)
        runtime = gate.process.runtime
        assert runtime is not None
        await runtime.compactor.saved()
    finally:
        await gate.close()
    (session,) = read(storage).report.sessions.values()
    billed = [c.row.billed for c in session.calls]
    assert [b.input if b is not None else None for b in billed] == [111, 222]
