"""The proxy reaches its upstreams through the HTTP proxy the environment names, as the
agent's own SDK would (egress.py): an agent behind a company's proxy that works without
hdcontext works with it."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import pytest
from yarl import URL

from hdcontext.edges.proxy.egress import DIRECT, bypassed, route

from .conftest import start, stop
from .test_proxy_http import ANTHROPIC_HEADERS, KEY, anthropic_body

API = URL("https://api.anthropic.com")


def test_an_https_upstream_goes_through_https_proxy() -> None:
    r = route(API, {"HTTPS_PROXY": "http://proxy.corp:3128", "HTTP_PROXY": "http://other:1"})
    assert r.via == URL("http://proxy.corp:3128")
    assert r.headers is None
    assert r.variable == "HTTPS_PROXY"


def test_an_http_upstream_goes_through_http_proxy_and_all_proxy_is_the_fallback() -> None:
    plain = URL("http://models.corp:8000/v1")
    assert route(plain, {"HTTP_PROXY": "http://p:1"}).via == URL("http://p:1")
    assert route(plain, {"ALL_PROXY": "http://q:2"}).via == URL("http://q:2")
    assert route(plain, {"HTTPS_PROXY": "http://p:1"}) == DIRECT


def test_the_lower_case_variable_comes_first_and_a_bare_host_is_http() -> None:
    r = route(API, {"https_proxy": "proxy.corp:8080", "HTTPS_PROXY": "http://other:1"})
    assert r.via == URL("http://proxy.corp:8080")
    assert r.variable == "https_proxy"


def test_credentials_go_to_the_proxy_header_not_the_url() -> None:
    r = route(API, {"HTTPS_PROXY": "http://me:s3cret@proxy.corp:3128"})
    assert r.via == URL("http://proxy.corp:3128")
    assert r.headers == {"Proxy-Authorization": "Basic " + base64.b64encode(b"me:s3cret").decode()}
    assert "s3cret" not in repr(r)


def test_the_credentials_go_in_the_tunnel_or_in_an_http_request() -> None:
    """To an https upstream the proxy only opens a tunnel (``CONNECT``), and its credentials
    go there, never inside TLS to the provider; to an http one they go in the request."""
    r = route(API, {"HTTPS_PROXY": "http://me:s3cret@proxy.corp:3128"})
    auth = {"Proxy-Authorization": "Basic " + base64.b64encode(b"me:s3cret").decode()}
    assert r.connect_headers(API / "v1/messages") == auth
    assert r.request_headers(API / "v1/messages") == {}
    plain = URL("http://models.corp:8000/v1/chat/completions")
    r = route(plain, {"HTTP_PROXY": "http://me:s3cret@proxy.corp:3128"})
    assert r.connect_headers(plain) is None
    assert r.request_headers(plain) == auth
    assert DIRECT.request_headers(plain) == {} and DIRECT.connect_headers(API) is None


def test_no_proxy_and_loopback_go_directly() -> None:
    env = {"HTTPS_PROXY": "http://proxy.corp:3128"}
    assert route(API, {**env, "NO_PROXY": "localhost,.anthropic.com"}) == DIRECT
    assert route(API, {**env, "no_proxy": "*"}) == DIRECT
    assert route(URL("https://127.0.0.1:9"), env) == DIRECT
    assert route(URL("https://localhost:9"), env) == DIRECT
    assert route(API, {**env, "NO_PROXY": "openai.com"}).via is not None


@pytest.mark.parametrize(
    ("host", "port", "no_proxy", "expected"),
    [
        ("api.anthropic.com", 443, "anthropic.com", True),
        ("api.anthropic.com", 443, "*.anthropic.com", True),
        ("anthropic.com", 443, ".anthropic.com", True),
        ("notanthropic.com", 443, "anthropic.com", False),
        ("api.anthropic.com", 443, "api.anthropic.com:8443", False),
        ("api.anthropic.com", 443, " api.anthropic.com:443 ", True),
        ("10.0.0.5", 80, "10.0.0.5", True),
        ("::1", 80, "[::1]:80", True),
        ("api.anthropic.com", 443, "", False),
    ],
)
def test_no_proxy_entries(host: str, port: int, no_proxy: str, expected: bool) -> None:
    assert bypassed(host, port, no_proxy) is expected


def test_a_proxy_aiohttp_cannot_speak_is_said_and_not_used(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING):
        assert route(API, {"HTTPS_PROXY": "socks5://proxy.corp:1080"}) == DIRECT
    assert "HTTPS_PROXY names a proxy hdcontext cannot use" in caplog.text


@dataclass
class _HttpProxy:
    """A forward proxy for plain HTTP: it records the request line and headers of each
    connection's first request and relays the connection to 127.0.0.1 at the target's
    port, so a host name only it knows reaches the test's fake upstream."""

    port: int = 0
    seen: list[tuple[str, str, dict[str, str]]] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, *lines = head.decode("latin-1").split("\r\n")
            method, target, _ = line.split(" ", 2)
            headers = dict(h.split(": ", 1) for h in lines if h)
            self.seen.append((method, target, headers))
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", URL(target).port)
            up_writer.write(head)
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            writer.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with suppress(ConnectionError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with suppress(OSError):
        writer.write_eof()


@asynccontextmanager
async def _http_proxy() -> AsyncIterator[_HttpProxy]:
    proxy = _HttpProxy()
    server = await asyncio.start_server(proxy.handle, "127.0.0.1", 0)
    proxy.port = server.sockets[0].getsockname()[1]
    try:
        yield proxy
    finally:
        server.close()


async def test_requests_reach_the_upstream_through_the_environments_proxy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The upstream is named by a host only the HTTP proxy knows: without a route through
    it, the request is a 502 (the name does not resolve)."""
    async with _http_proxy() as http_proxy:
        monkeypatch.setenv("HTTP_PROXY", f"http://me:s3cret@127.0.0.1:{http_proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        running, runners = await start(
            tmp_path, lambda body: [{"type": "text", "text": "fine"}], upstream_host="upstream.test"
        )
        try:
            async with aiohttp.ClientSession() as client:
                async with client.post(
                    running.url + "/v1/messages", json=anthropic_body(), headers=ANTHROPIC_HEADERS
                ) as answer:
                    assert answer.status == 200
                async with client.get(
                    running.url + "/v1/models", headers=ANTHROPIC_HEADERS
                ) as answer:
                    assert answer.status == 404  # the fake's answer to a path it does not serve
                    assert (await answer.json())["fake"] is True
        finally:
            await stop(running, runners)
    method, target, headers = http_proxy.seen[0]
    assert (method, URL(target).host, URL(target).path) == ("POST", "upstream.test", "/v1/messages")
    assert headers["Proxy-Authorization"] == "Basic " + base64.b64encode(b"me:s3cret").decode()
    (sent, other) = running.fake.seen
    assert sent.headers["x-api-key"] == KEY
    assert other.path == "/v1/models"
