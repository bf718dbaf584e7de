"""One client connection: frames in, decoded, held to the lifecycle, then handed to pygls.

pygls' own loop (``pygls.io_.run_async``) is not used: it trusted ``Content-Length``, handed
bytes straight to ``json.loads``, and dropped, unanswered, every message it could not make
sense of, so a client waiting for its reply hung. This loop answers each bad message at once
with PROTOCOL.md's code (framing.py, decode.py) and enforces the rules pygls leaves to the
server:

- ``initialize`` once: a second one is -32600 (it would switch the storage folder under the
  sessions), unless the first failed, when the client may try again;
- no request but ``initialize`` before it has succeeded (-32002);
- after ``shutdown``, requests get -32600 and notifications are dropped, until ``exit``;
- ``exit`` ends this connection; over stdio that ends the daemon (0 after ``shutdown``,
  else 1, as LSP says), over TCP never (tcp.py);
- a ``history/*`` request sent as a notification (no id) is dropped: it could change a
  session with nobody to hear whether it did, and PROTOCOL.md defines them as requests;
- over TCP, the first message must be ``initialize`` carrying the token in
  ``initializationOptions.token``; anything else is answered -32005 and the connection closes,
  and the token goes no further than this check.

Every message that passes goes to pygls' protocol as it would have, so handlers, replies and
the daemon's own requests to the client work as before.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import os
import sys
from typing import Any

from pygls.io_ import StdoutWriter

from ..daemon import memory
from ..daemon.retention import Retention
from ..daemon.wire import (
    INVALID_REQUEST,
    SERVER_NOT_INITIALIZED,
    UNAUTHORIZED,
)
from ..storage.folder import PRIVATE_UMASK
from ..storage.location import Location
from .claims import CLAIMS
from .decode import Incoming, MsgId, Refused
from .framing import (
    BadHeader,
    Body,
    ByteSource,
    FdSource,
    FrameReader,
    HttpRequest,
    TooLarge,
)
from .resent import Resends
from .server import METHODS, HdServer, build_server

log = logging.getLogger(__name__)

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
UNAUTHORIZED_MAX_BYTES = 1024 * 1024
"""The largest message a TCP connection may send before it has shown the token."""
FINISH_WAIT_S = 10.0
"""How long a closing connection waits for its requests in flight to finish saving."""


class Connection:
    def __init__(
        self,
        ls: HdServer,
        source: ByteSource,
        *,
        max_body: int = DEFAULT_MAX_MESSAGE_BYTES,
        token: str | None = None,
    ) -> None:
        self.ls = ls
        self._max_body = max_body
        self._token = token
        self._authorized = token is None
        limit = max_body if self._authorized else min(max_body, UNAUTHORIZED_MAX_BYTES)
        self._reader = FrameReader(source, limit)
        self._resends = Resends()

    @property
    def _tcp(self) -> bool:
        return self._token is not None

    async def run(self) -> int:
        """Serve until the input ends (0), ``exit`` (0 after ``shutdown``, else 1), or, over
        TCP, a reason to close the connection (0)."""
        while True:
            frame = await self._reader.next()
            if frame is None:
                return 0
            if isinstance(frame, HttpRequest):
                if self._tcp:
                    log.warning("closing a TCP connection that speaks HTTP")
                    return 0
                self._error(None, INVALID_REQUEST, "not an LSP message: an HTTP request")
                continue
            if not self._authorized and not isinstance(frame, Body):
                self._error(None, UNAUTHORIZED, "unauthorized")
                return 0
            if isinstance(frame, BadHeader):
                self._error(None, INVALID_REQUEST, f"not an LSP message: {frame.why}")
                continue
            if isinstance(frame, TooLarge):
                self._error(
                    None,
                    INVALID_REQUEST,
                    f"message too large: {frame.length} bytes, over the limit of "
                    f"{self._max_body} (serve --max-message-bytes)",
                )
                if self._tcp or not await self._reader.skip(frame.length):
                    return 0
                continue
            code = self._take(self._resends.decode(frame.data))
            if code is not None:
                return code

    def _take(self, item: Incoming | Refused) -> int | None:
        """Act on one decoded message; an exit code when the connection ends with it."""
        if not self._authorized:
            if isinstance(item, Incoming) and self._shows_token(item):
                self._authorized = True
                self._reader.max_body = self._max_body
            else:
                reply_to = item.reply_to if isinstance(item, Refused) else item.id
                self._error(reply_to, UNAUTHORIZED, "unauthorized")
                log.warning("closing a TCP connection without the token")
                return 0
        if isinstance(item, Refused):
            if item.answer:
                self._error(item.reply_to, item.code, item.message)
            log.info("refused a message (%d)", item.code)
            return None
        life = self.ls.lifecycle
        method = item.method
        if item.kind == "request":
            msg_id = item.id
            assert msg_id is not None  # decode.py: a request has a valid id
            if method == "initialize":
                if life.state != "none":
                    self._error(msg_id, INVALID_REQUEST, "initialize was already received")
                    return None
                life.state, life.initialize_id = "pending", msg_id
            elif life.shutdown:
                self._error(msg_id, INVALID_REQUEST, "shutdown was received: only exit is accepted")
                return None
            elif life.state != "done":
                self._error(
                    msg_id, SERVER_NOT_INITIALIZED, "server not initialized: send initialize first"
                )
                return None
            elif method == "shutdown":
                life.shutdown = True
        elif item.kind == "notification":
            if method == "exit":
                return 0 if life.shutdown else 1
            if life.shutdown:
                return None
            if method in METHODS:
                log.warning("dropped %s sent as a notification: it is a request", method)
                return None
        try:
            self.ls.hd_protocol.handle_message(item.message)
        except Exception as exc:  # pygls could not take it: say so without the message
            log.warning("could not handle a %s: %s", item.kind, type(exc).__name__)
        return None

    def _shows_token(self, item: Incoming) -> bool:
        """Whether ``item`` is ``initialize`` with the right token (which is then removed)."""
        if item.kind != "request" or item.method != "initialize" or self._token is None:
            return False
        params = item.message.get("params")
        options = params.get("initializationOptions") if isinstance(params, dict) else None
        token = options.pop("token", None) if isinstance(options, dict) else None
        if not isinstance(token, str):
            return False
        return hmac.compare_digest(token.encode("utf-8"), self._token.encode("utf-8"))

    def _error(self, msg_id: MsgId | None, code: int, message: str) -> None:
        self.ls.hd_protocol.reply_error(msg_id, code, message)

    async def finish(self) -> None:
        """The connection is over: let its requests in flight end (a change being saved is
        saved), stop its watcher, close its store, and free its sessions for others."""
        protocol = self.ls.protocol
        pending: list[Any] = list(protocol._request_futures.values())
        for future in pending:
            future.cancel()
        tasks = [f for f in pending if isinstance(f, asyncio.Future)]
        if tasks:
            await asyncio.wait(tasks, timeout=FINISH_WAIT_S)
        daemon = self.ls.daemon
        if daemon is not None:
            with contextlib.suppress(Exception):
                await daemon.shutdown()
            with contextlib.suppress(Exception):
                await daemon.store.close()
        CLAIMS.release_all(self.ls.holder)


def serve_stdio(
    default_storage: Location | None = None,
    max_body: int = DEFAULT_MAX_MESSAGE_BYTES,
    retention: Retention | None = None,
) -> int:
    """The daemon over stdin/stdout, until ``exit`` or the end of stdin; its exit code."""
    memory.configure()
    os.umask(PRIVATE_UMASK)
    return asyncio.run(_stdio(default_storage, max_body, retention))


async def _stdio(
    default_storage: Location | None, max_body: int, retention: Retention | None
) -> int:
    ls = build_server(default_storage, retention)
    ls.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    connection = Connection(ls, FdSource(sys.stdin.fileno()), max_body=max_body)
    try:
        return await connection.run()
    finally:
        await connection.finish()
