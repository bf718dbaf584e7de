"""Who may call the proxy: local programs, never a web page.

The proxy listens on loopback, but a page in a browser on the same machine can still reach
loopback: by a request that names another host which resolves to 127.0.0.1 (DNS rebinding), or
by a plain cross-origin request. Agents send neither: their ``Host`` is the address they were
given, and they send no ``Origin``. So a request whose ``Host`` is not one of the proxy's own
addresses, or that carries an ``Origin`` header, is refused before anything is read.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def allowed_hosts(host: str, port: int, extra: Iterable[str] = ()) -> frozenset[str]:
    """The ``Host`` values that name this proxy: its loopback names, the address it listens
    on, and any the user added, each with the port."""
    names = {*LOOPBACK_NAMES, *extra}
    if host not in ("0.0.0.0", "::", ""):
        names.add(f"[{host}]" if ":" in host else host)
    return frozenset(f"{name.lower()}:{port}" for name in names)


def refusal(host_header: str | None, origin: str | None, allowed: frozenset[str]) -> str | None:
    """Why a request is refused, or ``None``. The reason quotes nothing the caller sent."""
    if origin is not None:
        return "requests from web pages (with an Origin header) are refused"
    if host_header is None or host_header.strip().lower() not in allowed:
        return "the Host header does not name this proxy's address"
    return None
