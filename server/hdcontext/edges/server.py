"""The pygls language server: the LSP lifecycle, PROTOCOL.md's methods, and the editor's events.

Only this module knows pygls. It maps each ``history/*`` request to daemon.py, pulls the
``hdcontext`` settings section after ``initialized`` and on every
``workspace/didChangeConfiguration`` (registering for that notification when the client allows
dynamic registration), keeps the workspace folders current, and passes ``didSave`` and
``didChangeWatchedFiles`` on as file writes.

Three things pygls does by default are changed here, for the privacy and the integrity of the
conversation. pygls logs every message it sends at INFO, so its logger stays at WARNING. Its
default converter turns the params of methods it does not know into namedtuples, renaming keys
that are not Python identifiers (``class``, ``x-trace``…), so the plain lsprotocol converter is
used and ``history/*`` params arrive as the JSON the client sent. And it decodes every JSON
object that has a ``jsonrpc`` key as a JSON-RPC message, also inside params (a tool result that
happens to be a JSON-RPC message would be mangled), so here only a message's outermost object
is decoded as one.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import sys
import uuid
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import platformdirs
from lsprotocol import types
from lsprotocol.converters import get_converter
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException, JsonRpcInternalError
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path

from ..core.content import validation_messages
from ..core.tools import resolve_path
from . import memory
from .daemon import SETTINGS_WAIT_S, Daemon
from .ide_settings import IdeSettings
from .json_text import encode, holds_text
from .store import StoreError
from .summarizer import SessionSummarizer
from .watcher import ignored, now_ms, write_time
from .wire import (
    INTERNAL_ERROR,
    SERVER_NOT_INITIALIZED,
    InitOptions,
    WireError,
)

log = logging.getLogger("hdcontext.server")

PROTOCOL_VERSION = 1
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
            try:
                message = super().structure_message(message)
            except JsonRpcException as exc:
                # pygls would drop the message; a request deserves an answer (-32602).
                if "id" in message and "method" in message:
                    self._send_response(message["id"], error=exc.to_response_error())
                    return
                raise
        super().handle_message(message)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        """Replies holding JSON text (a whole history) are written here, without pygls'
        converter pass; everything else as pygls writes it (json_text.py says why)."""
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
        if self._include_headers:
            length = sum(len(part) for part in body)
            header = (
                f"Content-Length: {length}\r\n"
                f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n"
            )
            body.insert(0, header.encode("ascii"))
        self._write(b"".join(body))

    def _write(self, data: bytes) -> None:
        """What pygls' ``_send_data`` does with a message once it is bytes."""
        if self.writer is None:
            log.error("Unable to send data, no available transport!")
            return
        try:
            res = self.writer.write(data)
            if inspect.isawaitable(res):
                _background(res, "sending a reply")
        except BrokenPipeError:
            log.exception("Error sending data. BrokenPipeError")
            raise
        except Exception as error:
            log.exception("Error sending data")
            self._server._report_server_error(error, JsonRpcInternalError)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        result.capabilities.experimental = {"hdcontext": {"protocolVersion": PROTOCOL_VERSION}}
        return result


class HdServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__(
            "hdcontext",
            _version(),
            text_document_sync_kind=types.TextDocumentSyncKind.None_,
            protocol_cls=HdProtocol,
            converter_factory=get_converter,
        )
        self.ide_settings = IdeSettings()
        self.daemon: Daemon | None = None

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
    client = PyglsClient(ls)
    options = _init_options(ls, params.initialization_options)
    for error in ls.ide_settings.set_initial(options.settings or {}):
        client.warn(f"hdcontext: initializationOptions.settings: {error}; the default stands")
    storage = (
        Path(options.storage_dir).expanduser()
        if options.storage_dir
        else Path(platformdirs.user_data_dir("hdcontext", appauthor=False))
    )
    daemon = Daemon(client, storage.resolve(), ls.ide_settings, options.retrieve_tool)
    try:
        await daemon.start()
    except StoreError as exc:
        raise WireError(message=str(exc), code=INTERNAL_ERROR) from None
    daemon.roots = _roots(params)
    ls.daemon = daemon
    log.info("storage at %s; workspace folders: %d", daemon.storage_dir, len(daemon.roots))


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
    if _can_register(ls, "did_change_watched_files"):
        registrations.append(
            types.Registration(
                id=str(uuid.uuid4()),
                method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                register_options=types.DidChangeWatchedFilesRegistrationOptions(
                    watchers=[types.FileSystemWatcher(glob_pattern="**/*")]
                ),
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


def _note_uri(ls: HdServer, uri: str, deleted: bool, filtered: bool) -> None:
    daemon = ls.daemon
    path = to_fs_path(uri)
    if daemon is None or not path:
        return
    path = resolve_path(path, "")
    if filtered and ignored(path, daemon.roots):
        return
    daemon.note_write(path, now_ms() if deleted else write_time(path))


def on_did_save(ls: HdServer, params: types.DidSaveTextDocumentParams) -> None:
    _note_uri(ls, params.text_document.uri, deleted=False, filtered=False)


def on_did_change_watched_files(ls: HdServer, params: types.DidChangeWatchedFilesParams) -> None:
    for change in params.changes:
        deleted = change.type == types.FileChangeType.Deleted
        _note_uri(ls, change.uri, deleted=deleted, filtered=True)


async def on_shutdown(ls: HdServer, params: None) -> None:
    if ls.daemon is not None:
        await ls.daemon.shutdown()


# -- history/* ------------------------------------------------------------------------------------

Handler = Callable[[Daemon, object], Awaitable[Any]]

METHODS: dict[str, Handler] = {
    "history/open": Daemon.open,
    "history/append": Daemon.append,
    "history/sync": Daemon.sync,
    "history/usage": Daemon.usage,
    "history/retrieve": Daemon.retrieve,
    "history/compact": Daemon.compact,
    "history/get": Daemon.get,
    "history/setOverride": Daemon.set_override,
    "history/settings": Daemon.settings_of,
    "history/todos": Daemon.todos,
    "history/clear": Daemon.clear,
    "history/close": Daemon.close,
    "history/delete": Daemon.delete,
    "history/list": Daemon.list,
}


def _register_method(ls: HdServer, method: str, handler: Handler) -> None:
    async def run(ls: HdServer, params: Any) -> Any:
        daemon = ls.require_daemon()
        return await daemon.request(method, params, lambda raw: handler(daemon, raw))

    ls.feature(method)(run)


def build_server() -> HdServer:
    ls = HdServer()
    ls.feature(types.INITIALIZE)(on_initialize)
    ls.feature(types.INITIALIZED)(on_initialized)
    ls.feature(types.SHUTDOWN)(on_shutdown)
    ls.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)(on_did_change_configuration)
    ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(on_did_change_workspace_folders)
    ls.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))(on_did_save)
    ls.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)(on_did_change_watched_files)
    for method, handler in METHODS.items():
        _register_method(ls, method, handler)
    return ls


# -- logging and entry points -------------------------------------------------------------------


class _ExpectedErrors(logging.Filter):
    """Drop pygls' tracebacks for errors answered on purpose (bad input is not a crash)."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, WireError)


def configure_logging(level: int = logging.INFO) -> None:
    """Log to stderr (stdout is the protocol). pygls stays at WARNING: at INFO and below it
    logs whole messages, and messages carry the conversation."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("hdcontext").setLevel(level)
    logging.getLogger("pygls").setLevel(logging.WARNING)
    handler.addFilter(_ExpectedErrors())


def serve_stdio() -> None:
    memory.configure()
    build_server().start_io()


def serve_tcp(host: str, port: int) -> None:
    memory.configure()
    build_server().start_tcp(host, port)
