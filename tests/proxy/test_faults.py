"""Faults between the proxy and the provider, each as the client would meet it: never worse
than no proxy. An upstream that breaks off an event stream (a raw socket, cut mid-event), a
JSON answer short of its length, the routing of other paths, and the debug log."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import anthropic
import openai
import pytest

from hdcontext.edges.proxy import compactor
from hdcontext.edges.proxy.run import Proxy

from .cli_proxy import proxy_process
from .conftest import proxy_in_front_of, start, stop
from .raw_upstream import Cut, RawUpstream
from .test_proxy_http import ANTHROPIC_HEADERS, BEARER, KEY, SECRET_TEXT, anthropic_body

MESSAGES = [{"role": "user", "content": "hello"}]


@dataclass
class Broken:
    """A raw upstream that breaks off, and the proxy in front of it."""

    raw: RawUpstream
    raw_url: str
    proxy: Proxy


@pytest.fixture
async def broken(tmp_path: Path, request: pytest.FixtureRequest) -> AsyncIterator[Broken]:
    cut: Cut = request.param
    raw = RawUpstream(cut)
    url = await raw.start()
    try:
        async with proxy_in_front_of(url, tmp_path / "storage") as (proxy, _):
            yield Broken(raw, url, proxy)
    finally:
        await raw.stop()


async def _call(
    api: str, base: str, stream: bool, messages: list[dict[str, str]] = MESSAGES
) -> tuple[list[str], BaseException | None]:
    """One call with the provider's official client (no retries): the events it read, and
    what it raised (``None``: it finished)."""
    events: list[str] = []
    try:
        if api == "anthropic":
            claude = anthropic.AsyncAnthropic(api_key="k", base_url=base, max_retries=0)
            if not stream:
                await claude.messages.create(model="m", max_tokens=5, messages=messages)  # type: ignore[arg-type]
                return events, None
            answer = await claude.messages.create(
                model="m",
                max_tokens=5,
                messages=messages,  # type: ignore[arg-type]
                stream=True,
            )
            async for event in answer:
                events.append(event.type)
        else:
            gpt = openai.AsyncOpenAI(api_key="k", base_url=base + "/v1", max_retries=0)
            if not stream:
                await gpt.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
                return events, None
            chunks = await gpt.chat.completions.create(
                model="m",
                messages=messages,  # type: ignore[arg-type]
                stream=True,
            )
            async for chunk in chunks:
                events.append(chunk.object)
    except Exception as exc:
        return events, exc
    return events, None


@pytest.mark.parametrize("broken", ["stream"], indirect=True)
@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_stream_cut_mid_event_breaks_off_for_the_client_too(
    broken: Broken, api: str
) -> None:
    """Without the proxy the client's SDK raises on the broken transfer (and may retry);
    through it, it must raise the same, after the same events, not end as if finished."""
    direct_events, direct = await _call(api, broken.raw_url, stream=True)
    proxied_events, proxied = await _call(api, broken.proxy.url, stream=True)
    assert direct is not None  # the raw upstream does break off
    assert proxied is not None, "through the proxy, a cut-off answer looked finished"
    assert type(proxied) is type(direct)
    assert type(proxied.__cause__) is type(direct.__cause__)
    assert "incomplete chunked read" in repr(proxied) + repr(proxied.__cause__)
    assert proxied_events == direct_events and proxied_events  # what came before, all of it


@pytest.mark.parametrize("broken", ["stream"], indirect=True)
@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_stream_cut_breaks_off_on_every_path_of_a_conversation(
    broken: Broken, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first request of a conversation the proxy has not seen goes as it came while it is
    taken in (the bulk path); the next ones are read from where the previous one ended (the
    previous request's bytes kept). A cut stream breaks off for the client on each."""
    found: list[bool] = []
    real = compactor.best_match

    def spied(*args: Any) -> Any:
        match = real(*args)
        found.append(match is not None)
        return match

    monkeypatch.setattr(compactor, "best_match", spied)
    broken.proxy.state.compactor.pass_bytes = 1  # any conversation not seen goes as it came
    conversation = list(MESSAGES)
    for turn in range(4):
        direct_events, direct = await _call(api, broken.raw_url, True, conversation)
        proxied_events, proxied = await _call(api, broken.proxy.url, True, conversation)
        assert direct is not None
        assert proxied is not None, f"turn {turn}: a cut-off answer looked finished"
        assert type(proxied) is type(direct)
        assert proxied_events == direct_events and proxied_events
        conversation += [
            {"role": "assistant", "content": f"answer {turn}"},
            {"role": "user", "content": f"go on {turn}"},
        ]
    # Not seen, then a body that resumes at no answer of the previous one (it had none), then
    # read from where the previous body's last answer began.
    assert found == [False, False, True, True]
    assert broken.proxy.state.unchanged == 1  # the first one went as it came
    assert broken.proxy.state.compacted == 3


@pytest.mark.parametrize("broken", ["hang"], indirect=True)
async def test_a_client_that_goes_away_takes_its_upstream_call_with_it(broken: Broken) -> None:
    """An answer in one body that the client stops waiting for (an agent stopped, its process
    ended): without the proxy its connection to the provider closes, and the provider stops
    working for it. Through the proxy the upstream connection closes too, within a second or
    so, instead of waiting for an answer nobody reads (fails without ``_unless_gone``: the
    proxy would wait for the upstream for as long as its read timeout)."""
    async with aiohttp.ClientSession() as client:
        call = asyncio.ensure_future(
            client.post(
                broken.proxy.url + "/v1/messages",
                json=anthropic_body(),
                headers=ANTHROPIC_HEADERS,
            )
        )
        for _ in range(200):
            if broken.raw.requests:
                break
            await asyncio.sleep(0.02)
        assert broken.raw.requests == ["/v1/messages"]
        assert not broken.raw.closed.is_set()
        call.cancel()  # the client goes: its connection to the proxy closes
        with contextlib.suppress(asyncio.CancelledError):
            await call
    await asyncio.wait_for(broken.raw.closed.wait(), timeout=5)


@pytest.mark.parametrize("broken", ["json"], indirect=True)
@pytest.mark.parametrize("api", ["anthropic", "openai"])
async def test_a_json_answer_cut_short_is_a_502_naming_the_upstream(
    broken: Broken, api: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The proxy reads a JSON answer whole before it answers: one cut short becomes a 502 in
    the provider's error shape (which its SDK raises and retries as the provider's own
    error), never aiohttp's plain-text 500, and the log has one line, without a traceback."""
    caplog.set_level(logging.DEBUG)
    path = "/v1/messages" if api == "anthropic" else "/v1/chat/completions"
    headers = ANTHROPIC_HEADERS if api == "anthropic" else {"Authorization": BEARER}
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": SECRET_TEXT}]}
    async with (
        aiohttp.ClientSession() as client,
        client.post(broken.proxy.url + path, json=body, headers=headers) as response,
    ):
        status, content_type, data = response.status, response.content_type, await response.read()
    assert (status, content_type) == (502, "application/json")
    answer = json.loads(data)
    upstream = broken.raw_url + ("" if api == "anthropic" else "/v1")
    expected = f"hdcontext proxy: the {api} upstream ({upstream}) broke off its answer"
    if api == "anthropic":
        assert answer["type"] == "error"
        assert answer["error"]["type"] == "api_error"
    else:
        assert answer["error"]["code"] == 502
    assert answer["error"]["message"].startswith(expected)
    # The SDK reads it as the provider's error: a status error it would retry, not a crash.
    _, raised = await _call(api, broken.proxy.url, stream=False)
    assert getattr(raised, "status_code", None) == 502
    # The proxy's log (hdcontext's and its HTTP server's), not the test's client's.
    records = [r for r in caplog.records if r.name.startswith(("hdcontext", "aiohttp", "root"))]
    assert [r for r in records if r.exc_info is not None] == []
    logged = "\n".join(r.getMessage() for r in records)
    assert "Traceback" not in logged and "Error handling request" not in logged
    assert "broke off an answer" in logged
    for secret in (KEY, BEARER.split()[1], SECRET_TEXT):
        assert secret not in logged and secret not in data.decode()


async def test_a_models_list_with_an_anthropic_key_goes_to_anthropic(tmp_path: Path) -> None:
    """``GET /v1/models`` names no provider by its path: the key header does. Anthropic's SDK
    sends ``x-api-key`` (and may send no ``anthropic-version``); OpenAI's ``Authorization``."""
    running, runners = await start(tmp_path, lambda body: [], openai_base="/openai/v1")
    try:
        async with aiohttp.ClientSession() as client:
            for headers in ({"x-api-key": KEY}, {"Authorization": BEARER}):
                async with client.get(running.url + "/v1/models", headers=headers) as response:
                    assert response.status == 404  # the fake's answer, as it was
        claude = anthropic.AsyncAnthropic(api_key=KEY, base_url=running.url, max_retries=0)
        with pytest.raises(anthropic.NotFoundError):
            await claude.models.list()
    finally:
        await stop(running, runners)
    by_key, by_bearer, by_sdk = running.fake.seen
    assert (by_key.path, by_key.headers.get("x-api-key")) == ("/v1/models", KEY)
    assert (by_bearer.path, by_bearer.headers.get("Authorization")) == (
        "/openai/v1/models",
        BEARER,
    )
    assert by_sdk.path.startswith("/v1/models")


async def test_the_debug_log_says_what_was_decided_per_request(tmp_path: Path) -> None:
    """``hdcontext proxy --log-level DEBUG``, as run: each request's session, entries in and
    out, the daemon's decisions (sync, passes, cache, breakpoints), the upstream's answer, and
    why a request went as it came, without content, headers or keys."""
    answer = "the-answer-text-nobody-logs"
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": answer}])
    await running.proxy.stop()
    await running.daemon.shutdown()
    await running.daemon.store.close()  # the command's own proxy takes the folder
    try:
        async with (
            proxy_process(
                tmp_path / "cli-storage",
                "--log-level",
                "DEBUG",
                "--anthropic-upstream",
                running.fake_url,
                "--openai-upstream",
                running.fake_url + "/v1",
            ) as process,
            aiohttp.ClientSession() as client,
        ):
            for body in (anthropic_body(), anthropic_body(stream=True), b"{not json"):
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                async with client.post(
                    process.url + "/v1/messages", data=data, headers=ANTHROPIC_HEADERS
                ) as response:
                    await response.read()
            openai_body = {"model": "gpt", "messages": [{"role": "user", "content": "hi"}]}
            async with client.post(
                process.url + "/v1/chat/completions",
                json=openai_body,
                headers={"Authorization": BEARER},
            ) as response:
                await response.read()
    finally:
        for runner in runners:
            await runner.cleanup()
    log = process.log
    debug = [line for line in process.lines if " DEBUG " in line]
    assert debug, log
    session = re.search(r"(proxy-anthropic-[0-9a-f]+)", log)
    assert session is not None, log
    sid = session.group(1)
    said = "\n".join(debug)
    first = re.search(rf"sync {sid}: (\d+) entries sent, 0 held already, \1 appended", said)
    assert first is not None, said
    n = first.group(1)
    assert f"sync {sid}: {n} entries sent, {n} held already, 0 appended, no fork" in said
    assert f"compact {sid}: passes" in said and "breakpoints [" in said
    assert f"anthropic {sid}: hdcontext compacted in" in said
    assert f"anthropic {sid}: upstream answered 200 (body)" in said
    assert f"anthropic {sid}: upstream answered 200 (stream)" in said
    assert "usage 1300 in (1000 cache read, 200 cache write), 7 out" in said
    assert "hdcontext passed it on as it came" in said
    assert "request forwarded unchanged: the body is not JSON" in log  # the why, at WARNING
    assert re.search(r"anthropic /v1/messages: \d+ bytes in", said)
    assert re.search(r"openai proxy-openai-[0-9a-f]+: upstream answered 200", said)
    for secret in (KEY, BEARER.split()[1], SECRET_TEXT, "x = 1", "go on", answer):
        assert secret not in log, secret
    assert "x-api-key" not in log.lower() and "authorization" not in log.lower()
