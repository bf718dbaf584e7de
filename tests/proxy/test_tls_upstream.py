"""An https upstream, as the providers are: its certificate is checked against the system's
trust store (egress.py), read as OpenSSL reads it here (``SSL_CERT_FILE``), and a certificate
nobody trusts is a 502 that names the upstream, never a connection made anyway."""

from __future__ import annotations

import ssl
from pathlib import Path

import aiohttp
import pytest
import trustme

from hdcontext.edges.proxy import egress

from .conftest import start, stop
from .test_proxy_http import ANTHROPIC_HEADERS, KEY, anthropic_body


def _server(ca: trustme.CA) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("localhost", "127.0.0.1").configure_cert(context)
    return context


def _fine(body: object) -> list[dict[str, str]]:
    return [{"type": "text", "text": "fine"}]


async def _post(url: str) -> tuple[int, bytes]:
    async with (
        aiohttp.ClientSession() as client,
        client.post(url + "/v1/messages", json=anthropic_body(), headers=ANTHROPIC_HEADERS) as r,
    ):
        return r.status, await r.read()


@pytest.fixture
def trusted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> trustme.CA:
    """An authority the system trusts: the only one in ``SSL_CERT_FILE``."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))
    return ca


async def test_an_https_upstream_the_system_trusts_is_reached(
    tmp_path: Path, trusted: trustme.CA
) -> None:
    running, runners = await start(tmp_path, _fine, tls=_server(trusted))
    try:
        assert running.fake_url.startswith("https://")
        status, _ = await _post(running.url)
        assert status == 200
        (seen,) = running.fake.api_requests
        assert seen.headers["x-api-key"] == KEY
        (session,) = await running.statuses()
        assert session["usage"]["calls"] == 1
    finally:
        await stop(running, runners)


async def test_an_https_upstream_nobody_trusts_is_a_502_naming_it(
    tmp_path: Path, trusted: trustme.CA
) -> None:
    running, runners = await start(tmp_path, _fine, tls=_server(trustme.CA()))
    try:
        status, body = await _post(running.url)
        assert status == 502
        assert b"anthropic upstream" in body and b"Certificate" in body
        assert running.fake.api_requests == []
    finally:
        await stop(running, runners)


def test_certificates_are_checked_against_the_system_trust_store() -> None:
    context = egress.tls_context()
    assert type(context).__module__.startswith("truststore")
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert context.check_hostname
