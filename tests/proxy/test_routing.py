"""Each request goes only where its API lives (decision 13): every API the proxy serves, with
every provider's credential, against three upstreams that record what reaches them. A
credential never reaches another provider's upstream; a request of no API the proxy serves is
answered by the proxy and forwarded nowhere."""

from __future__ import annotations

import itertools
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.proxy.routes import place
from hdcontext.edges.proxy.run import Proxy, _NoEditor
from hdcontext.edges.proxy.uncarried import path_kind
from hdcontext.edges.stats.report import uncarried
from hdcontext.edges.storage.folder import prepare_folder

ANTHROPIC_KEY = "sk-ant-routing-secret"
OPENAI_KEY = "sk-openai-routing-secret"
GOOGLE_KEY = "AIza-routing-secret"

CREDENTIALS: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    # provider -> (headers, query) of its credential as its SDK sends it
    "anthropic": ({"x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01"}, {}),
    "openai": ({"Authorization": f"Bearer {OPENAI_KEY}"}, {}),
    "gemini": ({"x-goog-api-key": GOOGLE_KEY}, {}),
    "gemini-param": ({}, {"key": GOOGLE_KEY}),
}
OWNER = {"anthropic": "anthropic", "openai": "openai", "gemini": "gemini", "gemini-param": "gemini"}
SECRETS = {"anthropic": ANTHROPIC_KEY, "openai": OPENAI_KEY, "gemini": GOOGLE_KEY}

ANTHROPIC_BODY = {"model": "claude-sonnet-4-5", "max_tokens": 8, "messages": []}
GEMINI_BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


@dataclass(frozen=True)
class Call:
    name: str
    method: str
    path: str
    query: dict[str, str]
    body: dict[str, Any] | None
    api: str | None
    """The provider whose upstream it must reach with its own credential (None: nowhere)."""
    shared: bool = False
    """A path more than one provider has (``/v1/models``): the credential says whose."""


CALLS = [
    Call("anthropic messages", "POST", "/v1/messages", {}, ANTHROPIC_BODY, "anthropic"),
    Call(
        "anthropic count_tokens",
        "POST",
        "/v1/messages/count_tokens",
        {"beta": "true"},
        ANTHROPIC_BODY,
        "anthropic",
    ),
    Call("openai chat", "POST", "/v1/chat/completions", {}, {"model": "gpt-4.1"}, "openai"),
    Call("openai responses", "POST", "/v1/responses", {}, {"model": "gpt-5"}, "openai"),
    Call("openai models", "GET", "/v1/models", {}, None, "openai", shared=True),
    Call(
        "gemini generateContent",
        "POST",
        "/v1beta/models/gemini-2.5-pro:generateContent",
        {},
        GEMINI_BODY,
        "gemini",
    ),
    Call(
        "gemini stream",
        "POST",
        "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
        {"alt": "sse"},
        GEMINI_BODY,
        "gemini",
    ),
    Call(
        "gemini countTokens",
        "POST",
        "/v1beta/models/gemini-2.5-flash:countTokens",
        {},
        GEMINI_BODY,
        "gemini",
    ),
    Call(
        "gemini v1", "POST", "/v1/models/gemini-2.5-pro:generateContent", {}, GEMINI_BODY, "gemini"
    ),
    Call("ollama", "POST", "/api/chat", {}, {"model": "llama3"}, None),
    Call(
        "azure",
        "POST",
        "/openai/deployments/gpt-4o/chat/completions",
        {"api-version": "2024-10-21"},
        {"messages": []},
        None,
    ),
    Call("another version", "POST", "/v2/chat", {}, {"messages": []}, None),
]
OWN_CREDENTIAL = {"anthropic": "anthropic", "openai": "openai", "gemini": "gemini"}


@dataclass
class Recorder:
    """An upstream that records each request it gets (path, headers, query) and answers 200."""

    name: str
    seen: list[tuple[str, dict[str, str], dict[str, str]]] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._answer)
        return app

    async def _answer(self, request: web.Request) -> web.Response:
        await request.read()
        self.seen.append((request.path, dict(request.headers), dict(request.query)))
        return web.json_response({"upstream": self.name})


@dataclass
class Three:
    proxy: Proxy
    recorders: dict[str, Recorder]


@pytest.fixture
async def three(tmp_path: Path) -> AsyncIterator[Three]:
    recorders = {name: Recorder(name) for name in ("anthropic", "openai", "gemini")}
    runners, urls = [], {}
    for name, recorder in recorders.items():
        runner = web.AppRunner(recorder.app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        urls[name] = f"http://127.0.0.1:{runner.addresses[0][1]}"
    storage = tmp_path / "storage"
    prepare_folder(storage)
    daemon = Daemon(_NoEditor(), storage, IdeSettings())
    await daemon.start()
    proxy = Proxy(
        daemon, anthropic=urls["anthropic"], openai=urls["openai"] + "/v1", gemini=urls["gemini"]
    )
    await proxy.start("127.0.0.1", 0)
    try:
        yield Three(proxy, recorders)
    finally:
        await proxy.stop()
        await daemon.shutdown()
        await daemon.store.close()
        for runner in runners:
            await runner.cleanup()


async def _send(
    client: aiohttp.ClientSession, base: str, call: Call, credential: str
) -> tuple[int, bytes]:
    headers, query = CREDENTIALS[credential]
    async with client.request(
        call.method,
        base + call.path,
        params={**call.query, **query},
        headers=headers,
        data=None if call.body is None else json.dumps(call.body),
    ) as response:
        return response.status, await response.read()


def _credentials_in(headers: dict[str, str], query: dict[str, str]) -> set[str]:
    """The providers whose secret a request that reached an upstream carries."""
    text = json.dumps([headers, query])
    return {provider for provider, secret in SECRETS.items() if secret in text}


def _keys_in(headers: dict[str, str], query: dict[str, str]) -> set[str]:
    """The providers whose own kind of key a request carries: Anthropic's ``x-api-key``,
    Google's ``x-goog-api-key`` or ``key=``. (``Authorization: Bearer`` is every provider's
    scheme, Anthropic's OAuth included: it goes where the path says.)"""
    return _credentials_in(headers, query) - {"openai"}


async def test_every_api_with_its_own_credential_reaches_its_own_upstream(three: Three) -> None:
    """The twelve calls of the issue's probe, each with its provider's credential as its SDK
    sends it: each of the nine of a served API reaches its own upstream, with its key, at the
    path it named; the three of other APIs are answered by the proxy (404, naming the APIs it
    serves) and reach no upstream."""
    async with aiohttp.ClientSession() as client:
        for call in CALLS:
            for recorder in three.recorders.values():
                recorder.seen.clear()
            credential = OWN_CREDENTIAL.get(call.api or "", "openai")
            status, body = await _send(client, three.proxy.url, call, credential)
            reached = {n: r.seen for n, r in three.recorders.items() if r.seen}
            if call.api is None:
                assert (status, reached) == (404, {}), call.name
                message = json.loads(body)["error"]["message"]
                assert "Gemini" in message and "/v1/chat/completions" in message
                assert "Nothing was forwarded" in message
                continue
            assert status == 200, call.name
            assert list(reached) == [call.api], call.name
            [(path, headers, query)] = reached[call.api]
            assert path.endswith(call.path.removeprefix("/v1")), call.name
            assert _credentials_in(headers, query) == {call.api}, call.name


async def test_no_credential_reaches_another_providers_upstream(three: Three) -> None:
    """Every call with every provider's credential (the header and, for Google, the ``key=``
    parameter): a provider's own kind of key reaches that provider's upstream only; a call
    that carries one on another provider's path is refused by the proxy (400) and forwarded
    nowhere; a bearer token goes where the path says."""
    async with aiohttp.ClientSession() as client:
        for call, credential in itertools.product(CALLS, CREDENTIALS):
            for recorder in three.recorders.values():
                recorder.seen.clear()
            status, _ = await _send(client, three.proxy.url, call, credential)
            for name, recorder in three.recorders.items():
                for _, headers, query in recorder.seen:
                    assert _keys_in(headers, query) <= {name}, (call.name, credential)
            arrived = [n for n, r in three.recorders.items() if r.seen]
            owner = OWNER[credential]
            if call.api is None:
                assert (status, arrived) == (404, []), (call.name, credential)
            elif call.shared:
                assert (status, arrived) == (200, [owner]), (call.name, credential)
            elif owner in (call.api, "openai"):
                assert (status, arrived) == (200, [call.api]), (call.name, credential)
            else:
                assert (status, arrived) == (400, []), (call.name, credential)


async def test_refusals_are_counted_and_quote_nothing(three: Three) -> None:
    """A request forwarded nowhere is counted on the savings page's figures with its reason,
    and neither the answer nor the figures hold a key or the path's long tail."""
    secret_path = "/v2/" + "x" * 40 + "/do-not-echo-this-part"
    async with aiohttp.ClientSession() as client:
        async with client.post(
            three.proxy.url + secret_path, params={"key": GOOGLE_KEY}, data=b"{}"
        ) as response:
            assert response.status == 404
            answer = await response.text()
        for _ in range(2):
            status, _ = await _send(client, three.proxy.url, CALLS[2], "gemini")
            assert status == 400
        async with client.get(three.proxy.url + "/hdcontext/stats.json") as response:
            figures = await response.json()
    live = figures["proxy"]
    assert live["notForwarded"] == 3
    assert sorted(r["requests"] for r in live["notForwardedReasons"]) == [1, 2]
    shown = answer + json.dumps(live)
    assert GOOGLE_KEY not in shown and "do-not-echo" not in shown


@pytest.mark.parametrize(
    ("path", "headers", "query", "api"),
    [
        ("/v1/models", {"x-api-key": "k"}, {}, "anthropic"),
        ("/v1/models", {"anthropic-version": "2023-06-01"}, {}, "anthropic"),
        ("/v1/models", {"authorization": "Bearer k"}, {}, "openai"),
        ("/v1/models", {"x-goog-api-key": "k"}, {}, "gemini"),
        ("/v1/models", {}, {"key": "k"}, "gemini"),
        ("/v1/models/gemini-2.5-pro", {"x-goog-api-key": "k"}, {}, "gemini"),
        # An OpenAI fine-tuned model's id holds colons; no Gemini method follows the last one.
        ("/v1/models/ft:gpt-4o-mini:acme:x:abc1", {"authorization": "Bearer k"}, {}, "openai"),
        ("/v1/models/gemini-2.5-pro:countTokens", {"authorization": "Bearer k"}, {}, "gemini"),
        ("/v1beta/models", {"x-goog-api-key": "k"}, {}, "gemini"),
        ("/upload/v1beta/files", {"x-goog-api-key": "k"}, {}, "gemini"),
        ("/v1beta/openai/chat/completions", {"authorization": "Bearer k"}, {}, "gemini"),
        ("/v1/files", {"x-api-key": "k"}, {}, "anthropic"),
        ("/v1/files", {"authorization": "Bearer k"}, {}, "openai"),
        ("/v1/messages/batches", {"x-api-key": "k"}, {}, "anthropic"),
        ("/v1/responses/resp_1/input_items", {"authorization": "Bearer k"}, {}, "openai"),
        ("/v1", {"authorization": "Bearer k"}, {}, None),
        ("/", {}, {}, None),
        ("/v1/unknown-resource", {"authorization": "Bearer k"}, {}, None),
        ("/v1beta", {"x-goog-api-key": "k"}, {}, None),
        ("/v1/chat/completions", {"x-goog-api-key": "k"}, {}, None),
        ("/v1/chat/completions", {"x-api-key": "k"}, {}, None),
        ("/v1/messages", {"x-goog-api-key": "k"}, {}, None),
        ("/v1beta/models/gemini-2.5-pro:generateContent", {"x-api-key": "k"}, {}, None),
    ],
)
def test_placed_by_path_then_credential(
    path: str, headers: dict[str, str], query: dict[str, str], api: str | None
) -> None:
    assert place(path, headers, query).api == api


async def test_what_is_not_carried_reaches_hdcontext_stats(three: Three) -> None:
    """Every request hdcontext did not carry is counted on disk by outcome and reason, for
    ``hdcontext stats`` (a later day, another process) as for the page: one it answered
    itself, one of no model call passed through, one that went as it came."""
    async with aiohttp.ClientSession() as client:
        for call in (CALLS[-1], CALLS[1], CALLS[1]):
            await _send(client, three.proxy.url, call, "anthropic")
        async with client.post(
            three.proxy.url + "/v1/messages",
            data=b"not json",
            headers={"x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01"},
        ) as response:
            assert response.status == 200
    await three.proxy.state.store_uncarried()
    counted = uncarried(three.proxy.state.compactor.daemon.location)
    assert counted["notForwarded"] == 1
    assert counted["passedThrough"] == 2
    assert counted["passedThroughReasons"] == [
        {"why": "POST /v1/messages/count_tokens", "requests": 2}
    ]
    assert counted["asSent"] == 1
    assert counted["reasons"][0]["why"].startswith("anthropic the body is not JSON")


@pytest.mark.parametrize(
    ("method", "path", "kind"),
    [
        (
            "POST",
            "/v1beta/models/gemini-2.5-pro:countTokens",
            "POST /v1beta/models/{model}:countTokens",
        ),
        ("GET", "/v1/models/gpt-4.1", "GET /v1/models/{model}"),
        ("GET", "/v1/files/file-abc123def", "GET /v1/files/{id}"),
        ("DELETE", "/v1/responses/resp_0123456789abcdef", "DELETE /v1/responses/{id}"),
        ("POST", "/v1/messages/count_tokens", "POST /v1/messages/count_tokens"),
    ],
)
def test_a_path_is_named_by_its_kind(method: str, path: str, kind: str) -> None:
    """What a count names of a path: ids and model names made placeholders, so that the
    reasons stay few and hold nothing the caller wrote at length."""
    assert path_kind(method, path) == kind
