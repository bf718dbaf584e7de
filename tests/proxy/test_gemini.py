"""Gemini's API through the proxy: the official ``google-genai`` client as the agent
(``generate_content`` and ``generate_content_stream``), the stream without ``alt=sse``, and
what cannot be carried.

The test is the agent, as a google-genai program is one: it sends its whole conversation as
``contents`` every turn, the model's content appended as it came (its signed call among it)
and each call's response after it; it runs the calls the scripted fake model asks for on a
temporary workspace (read ``notes.txt``, edit it, count its lines, read it again) until the
model answers.
"""

from __future__ import annotations

import asyncio
import base64
import json
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hdcontext.core.validity import payload_problems
from hdcontext.formats.gemini_parts import SKIP_SIGNATURE

from .agent_script import DONE_TEXT, notes_script, notes_workspace
from .conftest import Running, start, stop
from .fake_gemini import USAGE, signature
from .tap import start_tap
from .test_openai_client import SYSTEM, run_tool

genai = pytest.importorskip("google.genai", reason="the google-genai client (the dev extra)")
types = genai.types

ASK = "Change alpha to beta in notes.txt and show me the file."
DECLARED = [
    types.FunctionDeclaration(
        name=name,
        description=f"{name} a file or run a command",
        parameters_json_schema={"type": "object", "additionalProperties": True},
    )
    for name in ("Read", "Edit", "Bash")
]


def _config() -> Any:
    return types.GenerateContentConfig(
        system_instruction=SYSTEM,
        tools=[types.Tool(function_declarations=DECLARED)],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )


async def _respond(client: Any, model: str, contents: list[Any], stream: bool) -> Any:
    """One call as the agent makes it: the model's content (from its chunks, when
    streamed: their parts in order, each as it came)."""
    if not stream:
        response = await client.aio.models.generate_content(
            model=model, contents=contents, config=_config()
        )
        return response.candidates[0].content
    parts: list[Any] = []
    async for chunk in await client.aio.models.generate_content_stream(
        model=model, contents=contents, config=_config()
    ):
        parts += chunk.candidates[0].content.parts or []
    return types.Content(role="model", parts=parts)


async def agent(base_url: str, workspace: Path, model: str, stream: bool) -> str:
    client = genai.Client(
        api_key="fake-google-key", http_options=types.HttpOptions(base_url=base_url)
    )
    contents: list[Any] = [types.Content(role="user", parts=[types.Part(text=ASK)])]
    for _ in range(10):
        content = await _respond(client, model, contents, stream)
        contents.append(content)
        calls = [p.function_call for p in content.parts if p.function_call]
        if not calls:
            return "".join(p.text or "" for p in content.parts)
        answers = [
            types.Part(
                function_response=types.FunctionResponse(
                    id=call.id,
                    name=call.name,
                    response={"output": run_tool(workspace, call.name, dict(call.args))},
                )
            )
            for call in calls
        ]
        contents.append(types.Content(role="user", parts=answers))
    raise AssertionError("the agent did not finish")


def _call_ids(body: dict[str, Any]) -> list[str]:
    return [
        p["functionCall"]["id"] for c in body["contents"] for p in c["parts"] if "functionCall" in p
    ]


def _signatures(body: dict[str, Any]) -> dict[str, str]:
    """Each signed call's id and its signature, as sent."""
    return {
        p["functionCall"]["id"]: p["thoughtSignature"]
        for c in body["contents"]
        for p in c["parts"]
        if "functionCall" in p and "thoughtSignature" in p
    }


@pytest.mark.parametrize("stream", [False, True], ids=["generate_content", "stream"])
async def test_the_google_genai_client_through_the_proxy(tmp_path: Path, stream: bool) -> None:
    """Every request carried: the stale read gone from the last one, everything but
    ``contents`` as sent, each signed call's signature upstream byte for byte, no
    breakpoint anywhere, each request valid; the usage of every call read, the model the
    path named priced."""
    workspace, notes, _ = notes_workspace(tmp_path)
    running, runners = await start(tmp_path, notes_script(workspace))
    tap, tap_runner, tap_url = await start_tap(running.url)
    runners.append(tap_runner)
    try:
        answer = await agent(tap_url, workspace, "gemini-2.5-pro", stream)
        statuses = await running.statuses()
    finally:
        await stop(running, runners)
    assert answer == DONE_TEXT
    assert notes.read_text().startswith("beta\n")
    sent = [body for path, body in tap.sent if path.endswith("Content")]
    received = [s.body for s in running.fake.api_requests]
    assert len(sent) == len(received) == 5
    for original, body in zip(sent, received, strict=True):
        assert payload_problems("gemini", body) == []
        assert {k: v for k, v in body.items() if k != "contents"} == {
            k: v for k, v in original.items() if k != "contents"
        }
        for call_id, sig in _signatures(body).items():
            assert sig == _signatures(original)[call_id]
            # The client writes the bytes it got back in base64's URL-safe alphabet; the
            # proxy sends what the client sent.
            assert base64.urlsafe_b64decode(sig) == base64.b64decode(signature(call_id))
        assert "cache_control" not in json.dumps(body)
    # The first read of notes.txt is stale after the edit and the second whole read.
    assert "toolu_step0_0" in _call_ids(sent[-1])
    assert "toolu_step0_0" not in _call_ids(received[-1])
    assert len(json.dumps(received[-1])) < len(json.dumps(sent[-1]))
    (status,) = statuses
    assert status["sessionId"].startswith("proxy-gemini-")
    assert status["usage"]["calls"] == 5
    assert status["usage"]["inputTokens"] == USAGE["promptTokenCount"] * 5
    assert status["usage"]["cacheReadTokens"] == USAGE["cachedContentTokenCount"] * 5
    out = USAGE["candidatesTokenCount"] + USAGE["thoughtsTokenCount"]
    assert status["usage"]["outputTokens"] == out * 5
    assert status["pricedAs"] == {"model": "gemini-2.5-pro", "match": "exact"}


def _body(contents: list[Any], **extra: Any) -> dict[str, Any]:
    return {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": SYSTEM}], "role": "user"},
        "tools": [{"functionDeclarations": [{"name": "read_file", "description": "read"}]}],
        "generationConfig": {"temperature": 1},
        **extra,
    }


ASKED = {"parts": [{"text": "hello " * 50}], "role": "user"}
CALLED = {
    "parts": [{"functionCall": {"id": "c1", "args": {"file_path": "/a"}, "name": "read_file"}}],
    "role": "model",
}


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (_body([ASKED], cachedContent="cachedContents/abc"), "(cachedContent)"),
        (
            _body([{"parts": [{"toolCall": {"name": "x"}}], "role": "user"}]),
            "contents[0].parts[0] has part kind 'toolCall'",
        ),
        (_body([{"parts": "hello", "role": "user"}]), "contents[0].parts must be a list"),
        (_body([ASKED, "not a content"]), "contents[1] is not an object"),
        (
            _body([ASKED, {"parts": [{"text": "x"}], "role": "system"}]),
            "contents[1] has role 'system'",
        ),
        (
            _body(
                [
                    ASKED,
                    {
                        "parts": [
                            {"functionResponse": {"id": "c9", "name": "read_file", "response": {}}}
                        ],
                        "role": "user",
                    },
                ]
            ),
            "contents[1].parts[0] (functionResponse) answers no call",
        ),
        (
            _body([ASKED, {"parts": [{"function_call": {"name": "read_file"}}], "role": "model"}]),
            "contents[1].parts[0] has part kind 'function_call'",
        ),
    ],
    ids=[
        "cachedContent",
        "unknown part kind",
        "parts not a list",
        "content not an object",
        "unknown role",
        "response without its call",
        "snake_case",
    ],
)
async def test_what_cannot_be_carried_goes_as_it_came_with_its_reason(
    running: Running, body: dict[str, Any], why: str
) -> None:
    """Each goes upstream byte for byte, and the savings page says why, by index and kind,
    never content."""
    raw = json.dumps(body).encode()
    async with aiohttp.ClientSession() as client:
        async with client.post(
            running.url + "/v1beta/models/gemini-2.5-pro:generateContent",
            data=raw,
            headers={"x-goog-api-key": "fake", "Content-Type": "application/json"},
        ) as response:
            await response.read()
        async with client.get(running.url + "/hdcontext/stats.json") as response:
            figures = await response.json()
    assert running.fake.api_requests[-1].raw == raw
    reasons = " ".join(r["why"] for r in figures["proxy"]["reasons"])
    assert figures["proxy"]["asSent"] == 1
    assert reasons.startswith("gemini ") and why in reasons, reasons
    assert "hello" not in reasons and "/a" not in reasons


async def test_the_stream_without_sse_is_streamed_and_its_usage_read(running: Running) -> None:
    """``streamGenerateContent`` without ``alt=sse`` answers one JSON array written as the
    model goes: the client gets it chunk by chunk, byte for byte, and its usage is read
    from the whole (the last chunk's figures, a call: the session waits on a tool)."""
    call = {"functionCall": {"id": "c2", "args": {"file_path": "/b"}, "name": "read_file"}}
    running.fake.gemini.plan = lambda body: [[{"text": "reading"}], [call]]
    running.fake.gemini.pause_s = 0.3
    body = _body([ASKED, CALLED, _answer("c1", "x" * 2000)])
    arrived: list[tuple[float, bytes]] = []
    loop = asyncio.get_running_loop()
    async with (
        aiohttp.ClientSession() as client,
        client.post(
            running.url + "/v1beta/models/gemini-3-flash-preview:streamGenerateContent",
            json=body,
            headers={"x-goog-api-key": "fake"},
        ) as response,
    ):
        assert response.status == 200
        async for piece in response.content.iter_any():
            arrived.append((loop.time(), piece))
    got = json.loads(b"".join(piece for _, piece in arrived))
    assert arrived[-1][0] - arrived[0][0] >= 0.2  # the first chunk came before the model ended
    assert got[0]["candidates"][0]["content"]["parts"] == [{"text": "reading"}]
    assert got[-1]["candidates"][0]["content"]["parts"] == [call]
    assert got[-1]["usageMetadata"] == USAGE
    await running.proxy.state.compactor.saved()
    (status,) = await running.statuses()
    assert status["usage"]["inputTokens"] == USAGE["promptTokenCount"]
    assert status["usage"]["cacheReadTokens"] == USAGE["cachedContentTokenCount"]


def _answer(call_id: str, output: str) -> dict[str, Any]:
    response = {"id": call_id, "name": "read_file", "response": {"output": output}}
    return {"parts": [{"functionResponse": response}], "role": "user"}


async def test_other_calls_of_gemini_go_as_they_came(running: Running) -> None:
    """``countTokens`` and the models listing reach Gemini untouched, and nothing of them is
    read into a session."""
    body = json.dumps({"contents": [ASKED]}).encode()
    async with aiohttp.ClientSession() as client:
        async with client.post(
            running.url + "/v1beta/models/gemini-2.5-pro:countTokens",
            data=body,
            headers={"x-goog-api-key": "fake"},
        ) as response:
            assert response.status == 200
        async with client.get(
            running.url + "/v1beta/models", headers={"x-goog-api-key": "fake"}
        ) as response:
            assert response.status == 404  # the fake's own answer: it lists nothing
    assert [s.path for s in running.fake.seen] == [
        "/v1beta/models/gemini-2.5-pro:countTokens",
        "/v1beta/models",
    ]
    assert running.fake.seen[0].raw == body
    assert await running.statuses() == []


async def test_a_gemini_cli_like_request_reaches_gemini_as_it_came(running: Running) -> None:
    """Nothing to prune: contents of Gemini CLI's shape (parts before role, a call's id, args
    and name in its order, a signature after it) reach the upstream byte for byte, although
    the proxy rebuilt them."""
    signed = {
        "parts": [
            {"text": "I'll read it."},
            {**CALLED["parts"][0], "thoughtSignature": signature("s0")},
        ],
        "role": "model",
    }
    body = _body([ASKED, signed, _answer("c1", "x = 1\n")])
    raw = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
    async with aiohttp.ClientSession() as client:
        for _ in range(2):  # taken in, then compacted
            async with client.post(
                running.url + "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
                data=raw,
                headers={"x-goog-api-key": "fake", "Content-Type": "application/json"},
            ) as response:
                assert response.status == 200
                await response.read()
    assert [s.raw for s in running.fake.api_requests] == [raw, raw]
    await asyncio.sleep(0)
    (status,) = await running.statuses()
    assert status["entryCount"] == 3


@pytest.mark.parametrize("answered", [False, True], ids=["tool use goes on", "answered"])
async def test_the_latest_turn_stays_whole_while_its_tool_use_goes_on(
    running: Running, answered: bool
) -> None:
    """Gemini binds no thinking to what came before it, but the rule every model gets holds
    (core/history/thinking.py): the model's latest content, whose calls the request answers,
    is not touched. Here its first read is stale at once (the second, in parallel, shows the
    same file whole): both reach Gemini, signed as they came, until the model has answered;
    then the stale one goes."""
    source = "".join(f"line {n} of a file the model reads twice\n" for n in range(200))
    reads = [
        {
            "functionCall": {"id": f"r{k}", "args": {"file_path": "/w/a.py"}, "name": "read_file"},
            **({"thoughtSignature": signature("both")} if k == 1 else {}),
        }
        for k in (1, 2)
    ]
    answers = [
        {"functionResponse": {"name": "read_file", "response": {"output": source}, "id": f"r{k}"}}
        for k in (1, 2)
    ]
    contents = [ASKED, {"parts": reads, "role": "model"}, {"parts": answers, "role": "user"}]
    if answered:
        contents += [
            {"parts": [{"text": "Read it."}], "role": "model"},
            {"parts": [{"text": "Thanks."}], "role": "user"},
        ]
    async with (
        aiohttp.ClientSession() as client,
        client.post(
            running.url + "/v1beta/models/gemini-3.1-pro-preview:generateContent",
            json=_body(contents),
            headers={"x-goog-api-key": "fake"},
        ) as response,
    ):
        assert response.status == 200
    got = running.fake.api_requests[-1].body["contents"]
    if not answered:
        assert got == contents
    else:
        # r2 is left first of its step: the signature of the step goes with r1, and r2 gets
        # the one Gemini documents for a call its model's signature does not cover.
        assert got[1]["parts"] == [{**reads[1], "thoughtSignature": SKIP_SIGNATURE}]
        assert got[2]["parts"] == answers[1:]
        assert got[3:] == contents[3:]
