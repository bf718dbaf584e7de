"""The pygls language server: the LSP lifecycle, PROTOCOL.md's methods, and the editor's events.

This module (with transport.py, which feeds it) is where pygls is known. It maps each
``history/*`` request to daemon.py, pulls the ``hdcontext`` settings section after
``initialized`` and on every ``workspace/didChangeConfiguration`` (registering for that
notification when the client allows dynamic registration), keeps the workspace folders
current, and passes ``didSave`` on as a file write. Writes on disk come from the daemon's own
watcher (watcher.py), so the client is not asked for ``workspace/didChangeWatchedFiles``.

One ``HdServer`` serves one connection (stdio has one; TCP one per connection, tcp.py): its
lifecycle, its settings, its daemon. Connections share the store of a folder, and a session
is held by one connection at a time (claims.py): a session another connection holds is
unknown here.

Three things pygls does by default are changed here, for the privacy and the integrity of the
conversation. pygls logs every message it sends at INFO, so its logger stays at WARNING. Its
default converter turns the params of methods it does not know into namedtuples, renaming keys
that are not Python identifiers (``class``, ``x-trace``…), so the plain lsprotocol converter is
used and ``history/*`` params arrive as the JSON the client sent. And it decodes every JSON
object that has a ``jsonrpc`` key as a JSON-RPC message, also inside params (a tool result that
happens to be a JSON-RPC message would be mangled), so here only a message's outermost object
is decoded as one.

And replies never carry more than they should: an error answered -32603 says the exception's
type and nothing else (pygls puts its text and a traceback in ``data``), whatever raised it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import json
import logging
import traceback
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import Future
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, Literal

import platformdirs
from cattrs import Converter
from lsprotocol import types
from lsprotocol.converters import get_converter
from lsprotocol.types import ResponseError
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from ...core.content import validation_messages
from ...core.tools.files import resolve_path
from ..daemon.daemon import SETTINGS_WAIT_S, Daemon
from ..daemon.ide_settings import IdeSettings
from ..daemon.json_text import encode, holds_text
from ..daemon.retention import Retention
from ..daemon.summarizer import SessionSummarizer
from ..daemon.watcher import now_ms, write_time
from ..daemon.wire import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    SERVER_NOT_INITIALIZED,
    UNKNOWN_SESSION,
    InitOptions,
    ProxyOptions,
    WireError,
    storage_unusable,
)
from ..storage.folder import NOTICE_NAME, folder_problem, mark_once
from ..storage.location import Location
from ..storage.records import StoreError
from .claims import CLAIMS

log = logging.getLogger("hdcontext.server")

PROTOCOL_VERSION = 2
SETTINGS_SECTION = "hdcontext"


def _version() -> str:
    try:
        return version("hdcontext")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"


class HdProtocol(LanguageServerProtocol):
    """pygls' protocol, decoding only the outermost object of a message (see the module doc)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        # Called by json.loads for every object, innermost first: leave them all as they are.
        return data

    def handle_message(self, message: Any) -> None:
        if isinstance(message, dict):
            request = "id" in message and "method" in message
            try:
                structured = super().structure_message(message)
            except JsonRpcException as exc:
                # pygls would drop the message; a request deserves an answer (-32602).
                if request:
                    self._send_response(message["id"], error=exc.to_response_error())
                    return
                raise
            if request and not hasattr(structured, "id"):
                # LSP's type for the method is a notification: pygls would drop the id and
                # never answer the request.
                why = f"'{message['method']}' is a notification: send it without an id"
                self.reply_error(message["id"], INVALID_REQUEST, why)
                return
            message = structured
        super().handle_message(message)

    def _lifecycle(self) -> Lifecycle:
        server = self._server
        assert isinstance(server, HdServer)
        return server.lifecycle

    def reply_error(self, msg_id: Any, code: int, message: str) -> None:
        """An error reply written directly (``id`` may be null, which pygls cannot write)."""
        body = json.dumps(
            {"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}}
        ).encode("ascii")
        self._write(self._framed(body))

    def _framed(self, body: bytes) -> bytes:
        if not self._include_headers:
            return body
        header = (
            f"Content-Length: {len(body)}\r\n"
            f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
        )
        return header.encode("ascii") + body

    def _send_handler_result(self, future: Future[Any], *, msg_id: Any) -> None:
        """pygls answers an exception that is not a JsonRpcException with its text and its
        traceback; here with its type only (its text may quote the conversation)."""
        exc = None if future.cancelled() else future.exception()
        if exc is None or isinstance(exc, JsonRpcException):
            super()._send_handler_result(future, msg_id=msg_id)
            return
        self._request_futures.pop(msg_id, None)
        frames = "".join(traceback.format_tb(exc.__traceback__))
        log.error("internal error: %s\n%s", type(exc).__name__, frames)
        self._send_response(msg_id, error=_internal(type(exc).__name__))

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """Replies holding JSON text (a whole history) are written here, without pygls'
        converter pass; everything else as pygls writes it (json_text.py says why).

        Every reply passes here: the answer to ``initialize`` settles the lifecycle, and a
        -32603 leaves with a message of our own making and no ``data``.
        """
        life = self._lifecycle()
        if life.state == "pending" and msg_id == life.initialize_id:
            life.state = "done" if error is None else "none"
        if error is not None and error.code == INTERNAL_ERROR:
            mine = isinstance(error.message, str) and error.message.startswith("internal error (")
            error = ResponseError(
                code=INTERNAL_ERROR,
                message=error.message if mine else "internal error; see the daemon's log",
            )
        if error is not None or not holds_text(result):
            super()._send_response(msg_id, result, error)
            return
        self._result_types.pop(msg_id, None)
        body = [
            b'{"id":',
            json.dumps(msg_id).encode("ascii"),
            b',"jsonrpc":"2.0","result":',
            *encode(result),
            b"}",
        ]
        self._write(self._framed(b"".join(body)))

    def _write(self, data: bytes) -> None:
        """What pygls' ``_send_data`` does with a message once it is bytes."""
        if self.writer is None:
            log.error("Unable to send data, no available transport!")
            return
        try:
            res = self.writer.write(data)
            if inspect.isawaitable(res):
                _background(res, "sending a reply")
        except (BrokenPipeError, ConnectionError):
            log.info("the client is gone; a reply was not sent")
        except Exception as error:
            log.error("sending a reply failed: %s", type(error).__name__)
            self._server._report_server_error(error, JsonRpcInternalError)

    def _send_data(self, data: Any) -> None:
        """pygls' writer, for everything but history replies; a client gone is no error."""
        try:
            super()._send_data(data)
        except (BrokenPipeError, ConnectionError):
            log.info("the client is gone; a message was not sent")

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"hdcontext": {"protocolVersion": PROTOCOL_VERSION}}
        return result


def _internal(kind: str) -> ResponseError:
    message = f"internal error ({kind}); see the daemon's log"
    return ResponseError(code=INTERNAL_ERROR, message=message)


@dataclass
class Lifecycle:
    """Where a connection is in LSP's lifecycle (transport.py enforces it)."""

    state: Literal["none", "pending", "done"] = "none"
    """``initialize``: not received (or failed), answered soon, answered with a result."""
    initialize_id: int | str | None = None
    shutdown: bool = False


@functools.cache
def shared_converter() -> Converter:
    """One converter for every connection of the process.

    Building lsprotocol's converter takes about 80 ms, and it generates the code that reads
    ``initialize`` (about 90 ms more) the first time it meets one: every TCP connection paid
    both, with a converter of its own. Its hooks are fixed once registered, and every connection
    runs on the one event loop, so they share it."""
    return get_converter()


class HdServer(LanguageServer):
    def __init__(
        self, default_storage: Location | None = None, retention: Retention | None = None
    ) -> None:
        super().__init__(
            "hdcontext",
            _version(),
            text_document_sync_kind=types.TextDocumentSyncKind.None_,
            protocol_cls=HdProtocol,
            converter_factory=shared_converter,
        )
        self.ide_settings = IdeSettings()
        self.daemon: Daemon | None = None
        self.proxy: Any = None
        """The proxy this daemon serves (``initializationOptions.proxy``), once it listens."""
        self.default_storage = default_storage
        """The storage folder when ``initialize`` names none (``serve --storage``); a
        database's URL there is used whatever ``initialize`` names (the daemon's operator
        chose it for every client)."""
        self.retention = retention or Retention()
        """How long idle sessions are kept when ``initialize`` does not say
        (``serve --retention-days``)."""
        self.lifecycle = Lifecycle()
        self.holder = CLAIMS.new_holder()

    @property
    def hd_protocol(self) -> HdProtocol:
        protocol = self.protocol
        assert isinstance(protocol, HdProtocol)
        return protocol

    def require_daemon(self) -> Daemon:
        if self.daemon is None:
            raise WireError(
                message="server not initialized: send initialize first",
                code=SERVER_NOT_INITIALIZED,
            )
        return self.daemon


class PyglsClient:
    """daemon.Client over a pygls server: notifications, warnings, summaries."""

    def __init__(self, ls: HdServer) -> None:
        self._ls = ls

    def notify(self, method: str, params: Any) -> None:
        self._ls.protocol.notify(method, params)

    def warn(self, message: str) -> None:
        self._ls.window_log_message(
            types.LogMessageParams(type=types.MessageType.Warning, message=message)
        )

    def summarizer(self, session_id: str) -> SessionSummarizer:
        return SessionSummarizer(session_id, lambda: self._ls.protocol)


# -- lifecycle ------------------------------------------------------------------------------------


def _roots(params: types.InitializeParams) -> list[str]:
    """Workspace folders first (all of them), else rootUri, else rootPath."""
    roots: list[str] = []
    for folder in params.workspace_folders or []:
        path = to_fs_path(folder.uri)
        if path:
            roots.append(resolve_path(path, ""))
    if not roots and params.root_uri:
        path = to_fs_path(params.root_uri)
        if path:
            roots.append(resolve_path(path, ""))
    if not roots and params.root_path:
        roots.append(resolve_path(params.root_path, ""))
    return roots


def _init_options(ls: HdServer, raw: object) -> InitOptions:
    if raw is None:
        return InitOptions()
    if not isinstance(raw, dict):
        PyglsClient(ls).warn("hdcontext: initializationOptions ignored: expected an object")
        return InitOptions()
    try:
        return InitOptions.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(validation_messages(exc, "initializationOptions"))
        PyglsClient(ls).warn(f"hdcontext: initializationOptions ignored: {problems}")
        return InitOptions()


async def on_initialize(ls: HdServer, params: types.InitializeParams) -> None:
    """Open the storage folder first: if it cannot be used (-32004), nothing has changed."""
    client = PyglsClient(ls)
    options = _init_options(ls, params.initialization_options)
    storage = _storage(ls, options.storage_dir)
    retention = ls.retention
    if options.retention_days is not None:
        days = options.retention_days
        retention = Retention(None if days == "forever" else days)
    daemon = Daemon(client, storage, ls.ide_settings, options.retrieve_tool, retention)
    daemon.store.warn = client.warn
    # Sessions another connection holds are its daemon's to prune (it has them loaded).
    daemon.held_elsewhere = lambda session_id: (
        not CLAIMS.visible(daemon.location, session_id, ls.holder)
    )
    try:
        await daemon.start()
    except StoreError as exc:
        await daemon.store.close()
        raise storage_unusable(str(exc)) from None
    for error in ls.ide_settings.set_initial(options.settings or {}):
        client.warn(f"hdcontext: initializationOptions.settings: {error}; the default stands")
    daemon.roots = _roots(params)
    ls.daemon = daemon
    if options.proxy is not None:
        await _start_proxy(ls, daemon, options.proxy, client)
    log.info("storage at %s; workspace folders: %d", daemon.location, len(daemon.roots))


async def _start_proxy(
    ls: HdServer, daemon: Daemon, options: ProxyOptions, client: PyglsClient
) -> None:
    """Serve ``hdcontext proxy`` on loopback over this daemon's sessions; a port that cannot
    be had is a warning, not a failed start (the editor's own requests still work)."""
    from ..proxy.run import ANTHROPIC_UPSTREAM, OPENAI_UPSTREAM, Proxy, storage_notice

    proxy = Proxy(
        daemon,
        anthropic=options.anthropic_upstream or ANTHROPIC_UPSTREAM,
        openai=options.openai_upstream or OPENAI_UPSTREAM,
        context_limit=options.context_limit,
        # Refresh calls go out only for sessions whose cache.refresh is on: the user's
        # setting is the consent (the chat panel's twins turn it off for their sessions).
        keep_warm=True,
    )
    try:
        await proxy.start("127.0.0.1", options.port)
    except OSError as exc:
        client.warn(f"hdcontext: the proxy cannot listen on port {options.port}: {exc.strerror}")
        return
    ls.proxy = proxy
    ls.window_log_message(
        types.LogMessageParams(
            type=types.MessageType.Info, message=f"hdcontext proxy listening on {proxy.url}"
        )
    )
    folder = daemon.storage_dir
    if folder is not None and mark_once(folder, NOTICE_NAME):
        kept = daemon.retention or Retention(None)
        notice = storage_notice(folder, kept, "initializationOptions.retentionDays")
        ls.window_log_message(types.LogMessageParams(type=types.MessageType.Info, message=notice))


def _storage(ls: HdServer, given: str | None) -> Location:
    """Where the connection's sessions are: ``serve --storage``'s database if it named one,
    else ``initialize``'s ``storageDir``, else ``serve``'s folder, else the default one."""
    default = ls.default_storage
    if default is not None and default.url is not None:
        return default
    if given is not None and "\x00" in given:
        raise storage_unusable("storageDir cannot be used: it contains a NUL character")
    if given:
        folder = Path(given).expanduser()
    elif default is not None and default.folder is not None:
        folder = default.folder
    else:
        folder = Path(platformdirs.user_data_dir("hdcontext", appauthor=False))
    try:
        return Location(folder=folder.resolve())
    except (OSError, RuntimeError) as exc:  # a loop of links, a path too long
        raise storage_unusable(folder_problem(folder, exc)) from None


def _client_pulls(ls: HdServer) -> bool:
    workspace = ls.client_capabilities.workspace
    return bool(workspace and workspace.configuration)


def _can_register(ls: HdServer, capability: str) -> bool:
    workspace = ls.client_capabilities.workspace
    option = getattr(workspace, capability, None) if workspace else None
    return bool(option and option.dynamic_registration)


async def on_initialized(ls: HdServer, params: types.InitializedParams) -> None:
    daemon = ls.require_daemon()
    registrations: list[types.Registration] = []
    if _can_register(ls, "did_change_configuration"):
        registrations.append(
            types.Registration(
                id=str(uuid.uuid4()),
                method=types.WORKSPACE_DID_CHANGE_CONFIGURATION,
                register_options={"section": SETTINGS_SECTION},
            )
        )
    if registrations:
        _background(
            ls.client_register_capability_async(
                types.RegistrationParams(registrations=registrations)
            ),
            "client/registerCapability",
        )
    pull = _start_pull(ls, daemon)
    if pull is not None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(asyncio.shield(pull), SETTINGS_WAIT_S)
    # The daemon's own watcher (watchfiles over every workspace folder) is the one source of
    # writes seen on disk, beside the editor's didSave: the client is not asked to register
    # workspace/didChangeWatchedFiles, which reported the same writes a second time.
    await daemon.update_watcher()


_BACKGROUND: set[asyncio.Future[None]] = set()


def _background(work: Awaitable[Any], what: str) -> None:
    """Fire and forget (kept referenced until done, as asyncio requires)."""

    async def run() -> None:
        try:
            await work
        except Exception as exc:
            log.info("%s failed: %s", what, type(exc).__name__)

    task = asyncio.ensure_future(run())
    _BACKGROUND.add(task)
    task.add_done_callback(_BACKGROUND.discard)


def _start_pull(ls: HdServer, daemon: Daemon) -> asyncio.Future[None] | None:
    """Pull section ``hdcontext`` when the client can be asked; requests wait for it."""
    if not _client_pulls(ls):
        return None

    async def pull() -> None:
        request = types.ConfigurationParams(
            items=[types.ConfigurationItem(section=SETTINGS_SECTION)]
        )
        try:
            answer = await asyncio.wait_for(
                ls.workspace_configuration_async(request), SETTINGS_WAIT_S
            )
        except Exception as exc:
            log.warning("workspace/configuration failed: %s", type(exc).__name__)
            return
        section = answer[0] if answer else None
        if section is None:
            return  # the editor has no such section: initializationOptions stand
        if not isinstance(section, dict):
            PyglsClient(ls).warn("hdcontext: the settings section is not an object; ignored")
            return
        await daemon.apply_settings(section)

    task = asyncio.ensure_future(pull())
    daemon.settings_pull_started(task)
    return task


def _pushed_section(settings: Any) -> dict[str, Any] | None:
    """The ``hdcontext`` part of pushed settings: ``{"hdcontext": {...}}`` or dotted keys."""
    if not isinstance(settings, dict):
        return None
    section = settings.get(SETTINGS_SECTION)
    if isinstance(section, dict):
        return section
    prefix = SETTINGS_SECTION + "."
    dotted = {k[len(prefix) :]: v for k, v in settings.items() if k.startswith(prefix)}
    return dotted or None


async def on_did_change_configuration(
    ls: HdServer, params: types.DidChangeConfigurationParams
) -> None:
    daemon = ls.daemon
    if daemon is None:
        return
    if _client_pulls(ls):
        _start_pull(ls, daemon)
        return
    section = _pushed_section(params.settings)
    if section is not None:
        task = asyncio.ensure_future(daemon.apply_settings(section))
        daemon.settings_pull_started(task)


async def on_did_change_workspace_folders(
    ls: HdServer, params: types.DidChangeWorkspaceFoldersParams
) -> None:
    daemon = ls.daemon
    if daemon is None:
        return
    removed = {to_fs_path(f.uri) for f in params.event.removed}
    roots = [r for r in daemon.roots if r not in removed]
    for folder in params.event.added:
        path = to_fs_path(folder.uri)
        if path:
            roots.append(resolve_path(path, ""))
    await daemon.set_roots(roots)


def on_did_save(ls: HdServer, params: types.DidSaveTextDocumentParams) -> None:
    daemon = ls.daemon
    path = to_fs_path(params.text_document.uri)
    if daemon is None or not path:
        return
    path = resolve_path(path, "")
    daemon.note_write(path, write_time(path, now_ms()))


async def on_shutdown(ls: HdServer, params: None) -> None:
    if ls.proxy is not None:
        await ls.proxy.stop()
        ls.proxy = None
    if ls.daemon is not None:
        await ls.daemon.shutdown()


# -- history/* and stats/savings ----------------------------------------------------------------

Handler = Callable[[Daemon, object], Awaitable[Any]]

METHODS: dict[str, Handler] = {
    "history/open": Daemon.open,
    "history/append": Daemon.append,
    "history/sync": Daemon.sync,
    "history/usage": Daemon.usage,
    "history/retrieve": Daemon.retrieve,
    "history/refresh": Daemon.refresh,
    "history/compact": Daemon.compact,
    "history/get": Daemon.get,
    "history/setOverride": Daemon.set_override,
    "history/settings": Daemon.settings_of,
    "history/todos": Daemon.todos,
    "history/clear": Daemon.clear,
    "history/close": Daemon.close,
    "history/delete": Daemon.delete,
    "history/list": Daemon.list,
    # A daemon addition to PROTOCOL.md (docs/daemon.md): the savings page's figures.
    "stats/savings": Daemon.savings,
}


def _register_method(ls: HdServer, method: str, handler: Handler) -> None:
    async def run(ls: HdServer, params: Any) -> Any:
        daemon = ls.require_daemon()
        folder = daemon.location
        session_id = params.get("sessionId") if isinstance(params, dict) else None
        if not isinstance(session_id, str):
            session_id = None
        fresh = session_id is not None and not CLAIMS.holds(folder, session_id, ls.holder)
        if session_id is not None and fresh and not CLAIMS.take(folder, session_id, ls.holder):
            raise WireError(
                message=f"unknown session '{session_id}': another connection has it open",
                code=UNKNOWN_SESSION,
            )
        try:
            result = await daemon.request(method, params, lambda raw: handler(daemon, raw))
        except BaseException:
            if session_id is not None and fresh:
                CLAIMS.release(folder, session_id, ls.holder)  # a failed request holds nothing
            raise
        if method == "history/list":
            result["sessions"] = [
                s for s in result["sessions"] if CLAIMS.visible(folder, s["sessionId"], ls.holder)
            ]
        elif method in ("history/close", "history/delete") and session_id is not None:
            CLAIMS.release(folder, session_id, ls.holder)
        return result

    ls.feature(method)(run)


def build_server(
    default_storage: Location | None = None, retention: Retention | None = None
) -> HdServer:
    ls = HdServer(default_storage, retention)
    ls.feature(types.INITIALIZE)(on_initialize)
    ls.feature(types.INITIALIZED)(on_initialized)
    ls.feature(types.SHUTDOWN)(on_shutdown)
    ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(on_did_change_configuration)
    ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(on_did_change_workspace_folders)
    ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(on_did_save)
    for method, handler in METHODS.items():
        _register_method(ls, method, handler)
    return ls
