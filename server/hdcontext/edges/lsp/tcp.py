"""``hdcontext serve --tcp``: a socket any local process can reach, so it asks for a token.

Before, any local process, or a web page posting ``text/plain`` to the port, could read
every chat, and all connections shared one client state, so one connection's close ended the
daemon for all. Now (PROTOCOL.md "TCP"):

- The daemon takes its storage folder's lock before it listens (a second daemon on the folder
  stops with exit code 3) and uses ``HDCONTEXT_TOKEN`` from the environment as the token, or
  makes one up and writes it to ``<storageDir>/tcp-token`` (0600). It prints
  ``hdcontext listening on HOST:PORT (token …)`` on stderr, naming where the token is.
- Every connection is a ``Connection`` of its own (transport.py) over a server of its own
  (its ``initialize``, settings, workspace folders, watcher and sessions); the first message
  must carry the token, and HTTP closes the connection. A connection ending, by ``exit`` or
  not, ends only itself.
- Connections that name the same storage folder share its store, and a session is held by
  one connection at a time (claims.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import sys
from pathlib import Path

from ..daemon import memory
from ..daemon.retention import Retention
from ..storage import storage_lock
from ..storage.folder import PRIVATE_UMASK, TOKEN_NAME, folder_problem, prepare_folder
from ..storage.location import Location
from ..storage.records import StoreError
from .framing import StreamSource
from .server import build_server
from .transport import Connection

log = logging.getLogger(__name__)

TOKEN_ENV = "HDCONTEXT_TOKEN"
EXIT_STORAGE_LOCKED = 3
EXIT_UNUSABLE = 2


def serve_tcp(
    host: str,
    port: int,
    *,
    storage: Location,
    max_body: int,
    retention: Retention | None = None,
    token_folder: Path | None = None,
) -> int:
    """Listen until interrupted; the exit code (3 when another daemon has the folder). With
    a database, no folder is locked (its processes share it), and a token made up is written
    to ``token_folder`` (the default storage folder)."""
    memory.configure()
    os.umask(PRIVATE_UMASK)
    folder = storage.folder or token_folder
    try:
        if folder is None:
            raise ValueError("no folder for the token: set HDCONTEXT_TOKEN")
        prepare_folder(folder)
        if storage.folder is not None:
            storage_lock.acquire(storage.folder)
        token, where = _token(folder)
    except storage_lock.StorageLocked as exc:
        print(f"hdcontext: {exc}", file=sys.stderr, flush=True)
        return EXIT_STORAGE_LOCKED
    except (StoreError, OSError, ValueError) as exc:
        if isinstance(exc, StoreError) or folder is None:
            message = str(exc)
        else:
            message = folder_problem(folder, exc)
        print(f"hdcontext: {message}", file=sys.stderr, flush=True)
        return EXIT_UNUSABLE
    try:
        return asyncio.run(_listen(host, port, storage, max_body, token, where, retention))
    except KeyboardInterrupt:
        return 0


def _token(storage: Path) -> tuple[str, str]:
    """The token, and where it is, as the listening line says it."""
    given = os.environ.get(TOKEN_ENV, "").strip()
    if given:
        return given, f"from {TOKEN_ENV}"
    token = secrets.token_urlsafe(32)
    path = storage / TOKEN_NAME
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        os.fchmod(out.fileno(), 0o600)
        out.write(token + "\n")
    return token, f"in {path}"


def address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _listen(
    host: str,
    port: int,
    storage: Location,
    max_body: int,
    token: str,
    where: str,
    retention: Retention | None,
) -> int:
    async def connected(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ls = build_server(storage, retention)
        ls.protocol.set_writer(writer)
        connection = Connection(ls, StreamSource(reader), max_body=max_body, token=token)
        try:
            await connection.run()
        except Exception as exc:  # one connection's trouble is never the daemon's
            log.warning("a connection ended on %s", type(exc).__name__)
        finally:
            await connection.finish()
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    try:
        server = await asyncio.start_server(connected, host, port)
    except OSError as exc:
        print(
            f"hdcontext: cannot listen on {address(host, port)}: {exc.strerror}",
            file=sys.stderr,
            flush=True,
        )
        return EXIT_UNUSABLE
    bound = server.sockets[0].getsockname()
    print(
        f"hdcontext listening on {address(bound[0], bound[1])} (token {where})",
        file=sys.stderr,
        flush=True,
    )
    async with server:
        await server.serve_forever()
    return 0  # pragma: no cover - serve_forever ends by an exception
