"""How the proxy reaches its upstreams: through the HTTP proxy the environment names, and
trusting the certificates the system trusts, as the agent's own client would have.

An agent behind a company's proxy reaches the provider through it: the Anthropic and OpenAI
SDKs, Claude Code and most HTTP clients read ``HTTPS_PROXY``, ``HTTP_PROXY``, ``ALL_PROXY``
and ``NO_PROXY``. hdcontext in front of such an agent must do the same, or an agent that
works without it gets a 502 with it. So each upstream's route is read from those variables
(either case) when the proxy starts: ``https_proxy`` for an ``https`` upstream,
``http_proxy`` for an ``http`` one, ``all_proxy`` for either when that is unset; none when
``no_proxy`` names the upstream's host (or is ``*``), and none for an upstream on loopback (a
local server is not reached through a remote proxy).

aiohttp speaks plain HTTP to the proxy and tunnels an ``https`` upstream through it
(``CONNECT``), so the conversation and the key stay inside TLS from end to end. A proxy URL of
another scheme (``https://``, ``socks5://``) is not one aiohttp can use: it is said, and the
upstream is reached directly. Credentials in the proxy's URL go in its
``Proxy-Authorization`` header and are never logged.

An ``https`` upstream's certificate is checked against the system's trust store
(``truststore``: the macOS keychain, Windows' certificate store, the distribution's bundle on
Linux, with ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` read as OpenSSL reads them), which holds
the company's own authority when its proxy inspects TLS. Python's default context reads only
its OpenSSL's build-time folders: empty on macOS for python.org's builds, missing on Linux for
a Python built for another distribution, so a proxy on such a Python could reach no provider
at all while the agent, with a store of its own, could.
"""

from __future__ import annotations

import base64
import logging
import os
import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field

import truststore
from yarl import URL

from .guard import is_loopback

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Route:
    """How requests to one upstream go out: directly (``via`` None) or through a proxy."""

    via: URL | None = None
    """The proxy, without its credentials."""
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    """For the proxy: its ``Proxy-Authorization``, from the credentials in its URL."""
    variable: str = ""
    """The environment variable it came from (for the log)."""

    def connect_headers(self, url: URL) -> Mapping[str, str] | None:
        """What the ``CONNECT`` that tunnels to an https ``url`` carries for the proxy."""
        return self.headers if self.via is not None and url.scheme == "https" else None

    def request_headers(self, url: URL) -> Mapping[str, str]:
        """What a request to an http ``url`` carries for the proxy, which reads it and
        passes it on (there is no tunnel for the credentials to go in)."""
        if self.via is None or url.scheme == "https" or self.headers is None:
            return {}
        return self.headers


DIRECT = Route()


def tls_context() -> ssl.SSLContext:
    """How the proxy checks an upstream's certificate: against the system's trust store."""
    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


def route(base: URL, environ: Mapping[str, str] | None = None) -> Route:
    """The route to the upstream at ``base``, by the environment's proxy variables."""
    host = base.host
    if host is None or is_loopback(host):
        return DIRECT
    env = os.environ if environ is None else environ
    found = _variable(env, base.scheme) or _variable(env, "all")
    if found is None:
        return DIRECT
    name, value = found
    no_proxy = _variable(env, "no")
    if no_proxy is not None and bypassed(host, base.port, no_proxy[1]):
        return DIRECT
    try:
        proxy = URL(value if "://" in value else f"http://{value}")
    except ValueError:
        proxy = None
    if proxy is None or proxy.scheme != "http" or not proxy.host:
        log.warning(
            "%s names a proxy hdcontext cannot use (only http:// proxies); the upstream %s "
            "is reached directly",
            name,
            base.with_user(None),
        )
        return DIRECT
    headers = None
    if proxy.user is not None:
        pair = f"{proxy.user}:{proxy.password or ''}".encode()
        headers = {"Proxy-Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}
    return Route(proxy.with_user(None), headers, name)


def _variable(env: Mapping[str, str], scheme: str) -> tuple[str, str] | None:
    """``{scheme}_proxy`` from ``env``, lower case first (as curl and urllib read them), with
    the name it was found under; None when unset or empty."""
    for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY"):
        value = env.get(name, "").strip()
        if value:
            return name, value
    return None


def bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether ``no_proxy`` (comma-separated: ``*``, host names that match themselves and
    their subdomains, with or without a leading ``.`` or ``*.``, addresses, each with an
    optional ``:port``) names ``host``."""
    host = host.lower().strip("[]").rstrip(".")
    for entry in no_proxy.lower().split(","):
        entry = entry.strip()
        if entry == "*":
            return True
        name, entry_port = entry, None
        head, colon, tail = entry.rpartition(":")
        if colon and tail.isdigit() and (head.count(":") == 0 or head.endswith("]")):
            name, entry_port = head, int(tail)
        name = name.strip("[]").lstrip("*").lstrip(".").rstrip(".")
        if not name or (entry_port is not None and entry_port != port):
            continue
        if host == name or host.endswith("." + name):
            return True
    return False
