"""Start the real daemon over stdio and drive it with pytest-lsp's client.

The client uses the plain lsprotocol converter: pygls' default one turns results of methods it
does not know into namedtuples, and the tests want the JSON the daemon sent. Everything the
daemon sends on its own (``history/tokens``, ``window/logMessage``, ``history/summarize``,
``client/registerCapability``, ``workspace/configuration``) is recorded for the tests to check.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException
from pygls.io_ import run_async
from pytest_lsp import client_capabilities
from pytest_lsp.client import LanguageClient, register_lsp_features

from .spawn import spawn

SERVER_MODULE = [sys.executable, "-m", "hdcontext", "serve"]
SERVER_SCRIPT = [str(Path(sys.executable).with_name("hdcontext")), "serve"]

VSCODE = "visual-studio-code"
NEOVIM = "neovim"  # the newest Neovim profile pytest-lsp ships
PROFILES = [VSCODE, NEOVIM]

Summarize = Callable[[dict[str, Any]], Awaitable[Any]]


def text(speaker: str, body: str, **metadata: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"speaker": speaker, "blocks": [{"type": "text", "text": body}]}
    if metadata:
        entry["metadata"] = metadata
    return entry


def tool_call(call_id: str, name: str, parameters: Any, **metadata: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "speaker": "ai",
        "blocks": [{"type": "tool_call", "id": call_id, "name": name, "parameters": parameters}],
    }
    if metadata:
        entry["metadata"] = metadata
    return entry


def tool_response(call_id: str, name: str, result: Any, **metadata: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "speaker": "tool",
        "blocks": [
            {"type": "tool_response", "callId": call_id, "toolName": name, "result": result}
        ],
    }
    if metadata:
        entry["metadata"] = metadata
    return entry


def read_pair(call_id: str, path: str, content: str, **metadata: Any) -> list[dict[str, Any]]:
    return [
        tool_call(call_id, "read_file", {"file_path": path}, **metadata),
        tool_response(call_id, "read_file", content, **metadata),
    ]


def write_pair(call_id: str, path: str, content: str) -> list[dict[str, Any]]:
    return [
        tool_call(call_id, "write_file", {"file_path": path, "content": content}),
        tool_response(call_id, "write_file", "ok"),
    ]


def call_ids(entries: list[dict[str, Any]]) -> set[str]:
    """Every tool call id and response callId in a list of entries."""
    out: set[str] = set()
    for entry in entries:
        for block in entry["blocks"]:
            if block["type"] == "tool_call":
                out.add(block["id"])
            elif block["type"] == "tool_response":
                out.add(block["callId"])
    return out


@dataclass
class Daemon:
    client: LanguageClient
    storage: Path
    initialize_result: types.InitializeResult | None = None
    tokens: list[dict[str, Any]] = field(default_factory=list)
    summarize_calls: list[dict[str, Any]] = field(default_factory=list)
    registrations: list[Any] = field(default_factory=list)
    stderr: bytearray = field(default_factory=bytearray)
    killed: bool = False

    async def call(self, method: str, params: Any = None) -> Any:
        return await call(self.client, method, params)

    async def fails(self, method: str, params: Any) -> JsonRpcException:
        """The error a request is answered with (AssertionError if it succeeds)."""
        try:
            result = await self.call(method, params)
        except JsonRpcException as exc:
            return exc
        raise AssertionError(f"{method} succeeded: {result!r}")

    def notify(self, method: str, params: Any) -> None:
        self.client.protocol.notify(method, params)

    def warnings(self) -> list[str]:
        return [m.message for m in self.client.log_messages if m.type == types.MessageType.Warning]

    @property
    def pid(self) -> int:
        assert self.client._server is not None
        return self.client._server.pid

    async def kill(self) -> None:
        """SIGKILL the daemon, as a crash or an OOM killer would."""
        server = self.client._server
        assert server is not None
        os.kill(server.pid, signal.SIGKILL)
        await server.wait()
        self.killed = True


async def call(client: LanguageClient, method: str, params: Any = None) -> Any:
    """A request and its result (pytest-lsp's protocol methods are not annotated)."""
    send: Callable[[str, Any], Awaitable[Any]] = client.protocol.send_request_async
    return await send(method, params)


async def stop(client: LanguageClient) -> None:
    await client.stop()  # type: ignore[no-untyped-call]


def make_client() -> LanguageClient:
    client = LanguageClient(converter_factory=get_converter)
    register_lsp_features(client)
    return client


def uri(path: Path) -> str:
    return path.resolve().as_uri()


@asynccontextmanager
async def start_daemon(
    storage: Path,
    *,
    profile: str = VSCODE,
    folders: list[Path] | None = None,
    init_settings: dict[str, Any] | None = None,
    configuration: dict[str, Any] | None = None,
    command: list[str] | None = None,
    env: dict[str, str] | None = None,
    summarize: Summarize | None = None,
    init_options: dict[str, Any] | None = None,
) -> AsyncIterator[Daemon]:
    """A daemon started over stdio and initialized with the given client profile.

    ``configuration`` is what the client answers for section ``hdcontext``;
    ``summarize`` answers ``history/summarize`` (without it the client has no such method).
    """
    client = make_client()
    daemon = Daemon(client=client, storage=storage)
    if configuration is not None:
        client.set_configuration(configuration, section="hdcontext")

    def on_tokens(params: Any) -> None:
        daemon.tokens.append(params)

    def on_register(params: types.RegistrationParams) -> None:
        daemon.registrations.extend(params.registrations)

    client.feature("history/tokens")(on_tokens)
    client.feature(types.CLIENT_REGISTER_CAPABILITY)(on_register)
    if summarize is not None:
        handler = summarize

        async def on_summarize(params: Any) -> Any:
            daemon.summarize_calls.append(params)
            return await handler(params)

        client.feature("history/summarize")(on_summarize)

    full_env = {**os.environ, **(env or {})}
    await _start_io(client, command or SERVER_MODULE, full_env)
    _capture_stderr(client, daemon.stderr)
    options: dict[str, Any] = {"storageDir": str(storage), **(init_options or {})}
    if init_settings is not None:
        options["settings"] = init_settings
    roots = folders or []
    params = types.InitializeParams(
        capabilities=client_capabilities(profile),
        root_uri=uri(roots[0]) if roots else None,
        workspace_folders=[types.WorkspaceFolder(uri=uri(p), name=p.name) for p in roots] or None,
        initialization_options=options,
    )
    try:
        daemon.initialize_result = await client.initialize_session(params)
        yield daemon
    finally:
        if not daemon.killed:
            await asyncio.wait_for(client.shutdown_session(), 30)
        await asyncio.wait_for(stop(client), 30)


async def _start_io(client: LanguageClient, command: list[str], env: dict[str, str]) -> None:
    """pygls' ``start_io`` with the process from spawn.py (forked when it can be)."""
    server = await spawn(command, env=env)
    assert server.stdin is not None and server.stdout is not None
    client.protocol.set_writer(server.stdin)
    connection = asyncio.create_task(
        run_async(
            stop_event=client._stop_event,
            reader=server.stdout,
            protocol=client.protocol,
            logger=logging.getLogger("pygls.client"),
            error_handler=client.report_server_error,
        )
    )
    notify_exit = asyncio.create_task(client._server_exit())  # type: ignore[no-untyped-call]
    client._server = server  # type: ignore[assignment]
    client._async_tasks.extend([connection, notify_exit])


def _capture_stderr(client: LanguageClient, sink: bytearray) -> None:
    """Keep the daemon's stderr (and still show it), to check what it logs."""
    if client._stderr_forwarder is not None:
        client._stderr_forwarder.cancel()
    server = client._server
    assert server is not None and server.stderr is not None
    stream = server.stderr

    async def forward() -> None:
        while line := await stream.readline():
            sink.extend(line)
            sys.stderr.buffer.write(line)

    client._stderr_forwarder = asyncio.ensure_future(forward())
