"""Every request of PROTOCOL.md over the real stdio transport, with both client profiles."""

from __future__ import annotations

import asyncio
import json
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types

from .harness import (
    SERVER_MODULE,
    SERVER_SCRIPT,
    VSCODE,
    call,
    make_client,
    read_pair,
    start_daemon,
    stop,
    text,
    tool_call,
    tool_response,
    write_pair,
)
from .raw import tcp_daemon

STATUS_KEYS = {
    "sessionId",
    "version",
    "entryCount",
    "totalTokens",
    "contextLimit",
    "threshold",
    "percent",
    "strategy",
    "savedTokens",
    "pendingTokens",
    "usage",
    "maskedOutputs",
    "predicted",
    "mispredicted",
    "pricedAs",
    "maskedTokens",
}


def _command(profile: str) -> list[str]:
    # The console script with one profile, ``python -m hdcontext`` with the other.
    return SERVER_SCRIPT if profile == VSCODE else SERVER_MODULE


async def test_initialize_announces_the_protocol(profile: str, storage: Path) -> None:
    async with start_daemon(storage, profile=profile, command=_command(profile)) as d:
        result = d.initialize_result
        assert result is not None
        assert result.capabilities.experimental == {"hdcontext": {"protocolVersion": 2}}
        assert result.server_info is not None and result.server_info.name == "hdcontext"
        assert result.server_info.version == version("hdcontext")
        assert (storage / "hdcontext.sqlite3").is_file()


async def test_every_request_round_trips(profile: str, storage: Path) -> None:
    async with start_daemon(storage, profile=profile, command=_command(profile)) as d:
        status = await d.call("history/open", {"sessionId": "s1", "model": "some-model"})
        assert set(status) == STATUS_KEYS
        assert status["sessionId"] == "s1" and status["version"] == 0
        assert status["entryCount"] == 0 and status["contextLimit"] == 200000
        assert d.tokens[-1] == status

        entries = [
            text("human", "Read a.py", id="m1", custom={"kept": [1, 2]}),
            {
                "speaker": "ai",
                "providerMetadata": {"signature": "abc"},
                "blocks": [
                    {"type": "thinking", "thought": "look first", "signature": "sig"},
                    {
                        "type": "tool_call",
                        "id": "c1",
                        "name": "read_file",
                        "parameters": {"file_path": "a.py"},
                    },
                ],
            },
            tool_response("c1", "read_file", {"content": "print(1)"}),
            {"speaker": "ai", "blocks": [{"type": "text", "text": "  "}]},  # empty AI turn
        ]
        status = await d.call("history/append", {"sessionId": "s1", "entries": entries})
        assert status["version"] == 1 and status["entryCount"] == 3  # curated: empty AI left out
        assert status["totalTokens"] > 0
        assert d.tokens[-1] == status

        raw = await d.call("history/get", {"sessionId": "s1", "view": "raw"})
        assert len(raw["entries"]) == 4 and raw["status"] == status
        for sent, got in zip(entries, raw["entries"], strict=True):
            stamped = got["metadata"].pop("timestamp")
            assert isinstance(stamped, int) and stamped > 0
            if not got["metadata"]:
                del got["metadata"]
            assert got == sent  # unknown keys kept, nothing added but the timestamp
        curated = await d.call("history/get", {"sessionId": "s1"})
        assert len(curated["entries"]) == 3
        transcript = await d.call("history/get", {"sessionId": "s1", "view": "transcript"})
        assert len(transcript["entries"]) == 4

        status = await d.call(
            "history/append", {"sessionId": "s1", "entries": write_pair("w1", "a.py", "x")}
        )
        result = await d.call("history/compact", {"sessionId": "s1", "pendingTokens": 10})
        assert set(result) == {
            "history",
            "revision",
            "cache",
            "status",
            "density",
            "compression",
            "overLimit",
        }
        assert result["density"]["metadata"]["readWritePairsPruned"] >= 1
        assert "c1" not in json.dumps(result["history"])
        assert result["compression"] is None and result["overLimit"] is False
        assert result["status"]["savedTokens"] > 0
        assert d.tokens[-1] == result["status"]

        settings = await d.call(
            "history/setOverride",
            {"sessionId": "s1", "key": "compression.density.recencyPruning", "value": True},
        )
        assert settings["values"]["compression.density.recencyPruning"] is True
        assert settings["sources"]["compression.density.recencyPruning"] == "override"
        assert settings["sources"]["contextLimit"] == "default"
        assert await d.call("history/settings", {"sessionId": "s1"}) == settings
        removed = await d.call(
            "history/setOverride",
            {"sessionId": "s1", "key": "compression.density.recencyPruning", "value": None},
        )
        assert removed["sources"]["compression.density.recencyPruning"] == "default"

        before = d.tokens[-1]["version"]
        status = await d.call(
            "history/todos",
            {
                "sessionId": "s1",
                "todos": [
                    {
                        "id": "1",
                        "content": "fix a.py",
                        "status": "in_progress",
                        "subtasks": [{"id": "1.1", "content": "read it"}],
                    },
                ],
            },
        )
        assert status["version"] == before + 1 and d.tokens[-1] == status

        status = await d.call("history/clear", {"sessionId": "s1"})
        assert status["entryCount"] == 0 and status["totalTokens"] == 0
        assert d.tokens[-1] == status
        transcript = await d.call("history/get", {"sessionId": "s1", "view": "transcript"})
        assert len(transcript["entries"]) == 6  # clear empties the working view only

        await d.call("history/open", {"sessionId": "s2", "contextLimit": 50000})
        s2 = await d.call("history/settings", {"sessionId": "s2"})
        assert s2["values"]["contextLimit"] == 50000 and s2["sources"]["contextLimit"] == "override"
        listed = await d.call("history/list", {})
        assert {s["sessionId"] for s in listed["sessions"]} == {"s1", "s2"}
        assert all(set(s) == STATUS_KEYS for s in listed["sessions"])

        assert await d.call("history/close", {"sessionId": "s1"}) is None
        again = await d.call("history/get", {"sessionId": "s1", "view": "transcript"})
        assert again == transcript  # closed sessions stay in storage and load on demand
        assert await d.call("history/delete", {"sessionId": "s1"}) is None
        gone = await d.fails("history/get", {"sessionId": "s1"})
        assert gone.code == -32001
        listed = await d.call("history/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == ["s2"]


async def test_open_resumes_and_keeps_the_context_limit_override(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await d.call("history/open", {"sessionId": "s", "contextLimit": 64000})
        await d.call("history/append", {"sessionId": "s", "entries": [text("human", "hi")]})
        resumed = await d.call("history/open", {"sessionId": "s"})
        assert resumed["entryCount"] == 1 and resumed["contextLimit"] == 64000
        changed = await d.call("history/open", {"sessionId": "s", "contextLimit": 32000})
        assert changed["contextLimit"] == 32000 and changed["entryCount"] == 1


async def test_errors_name_the_problem_and_change_nothing(profile: str, storage: Path) -> None:
    async with start_daemon(storage, profile=profile) as d:
        await d.call("history/open", {"sessionId": "s"})
        await d.call("history/append", {"sessionId": "s", "entries": [text("human", "hello")]})
        before = await d.call("history/get", {"sessionId": "s", "view": "raw"})
        notified = len(d.tokens)

        bad_entries = [
            text("human", "ok"),
            {
                "speaker": "tool",
                "blocks": [{"type": "tool_response", "toolName": "x", "result": 1}],
            },
        ]
        cases: list[tuple[str, Any, str]] = [
            (
                "history/append",
                {"sessionId": "s", "entries": bad_entries},
                "entries[1].blocks[0].callId: field required",
            ),
            (
                "history/append",
                {"sessionId": "s", "entries": [{"speaker": "robot", "blocks": []}]},
                "entries[0].speaker: ",
            ),
            ("history/append", {"sessionId": "s", "entries": "nope"}, "entries: "),
            ("history/open", {}, "sessionId: field required"),
            ("history/open", {"sessionId": 5}, "sessionId: input should be a valid string"),
            ("history/open", {"sessionId": "s", "contextLimit": -1}, "contextLimit: "),
            ("history/get", {"sessionId": "s", "view": "everything"}, "view: "),
            ("history/compact", {"sessionId": "s", "pendingTokens": -5}, "pendingTokens: "),
            ("history/compact", {"sessionId": "s", "pendingTokens": "5"}, "pendingTokens: "),
            (
                "history/setOverride",
                {"sessionId": "s", "key": "contextLimit", "value": "big"},
                "value: setting 'contextLimit': \"big\" is not valid, expected a positive integer",
            ),
            ("history/setOverride", {"sessionId": "s", "key": "no.such", "value": 1}, "key: "),
            (
                "history/setOverride",
                {"sessionId": "s", "key": "contextLimit"},
                "value: field required",
            ),
            (
                "history/todos",
                {"sessionId": "s", "todos": [{"id": "1", "status": "pending"}]},
                "todos[0].content: field required",
            ),
            ("history/list", [1, 2], "params: expected an object"),
        ]
        for method, params, message in cases:
            error = await d.fails(method, params)
            assert error.code == -32602, (method, error.code, error.message)
            assert error.message.startswith(message), (method, error.message)
        assert await d.call("history/get", {"sessionId": "s", "view": "raw"}) == before
        assert len(d.tokens) == notified

        for method in (
            "history/append",
            "history/compact",
            "history/get",
            "history/setOverride",
            "history/settings",
            "history/todos",
            "history/clear",
            "history/close",
            "history/delete",
        ):
            unknown: dict[str, Any] = {
                "sessionId": "abc",
                "entries": [],
                "todos": [],
                "key": "contextLimit",
                "value": 1,
            }
            error = await d.fails(method, unknown)
            assert (error.code, error.message) == (-32001, "unknown session 'abc'"), method

        # An LLM strategy with no summarizer the client can run: -32002, saying which and why.
        await d.call(
            "history/setOverride",
            {"sessionId": "s", "key": "compression.strategy", "value": "one-shot"},
        )
        await d.call("history/setOverride", {"sessionId": "s", "key": "contextLimit", "value": 60})
        await d.call(
            "history/append",
            {
                "sessionId": "s",
                "entries": [
                    text("human" if i % 2 == 0 else "ai", f"message number {i} " * 8)
                    for i in range(10)
                ],
            },
        )
        before = await d.call("history/get", {"sessionId": "s", "view": "raw"})
        notified = len(d.tokens)
        error = await d.fails("history/compact", {"sessionId": "s"})
        assert error.code == -32002
        assert "client" in error.message and "history/summarize" in error.message
        after = await d.call("history/get", {"sessionId": "s", "view": "raw"})
        assert after == before and len(d.tokens) == notified

        # Still serving.
        listed = await d.call("history/list", None)
        assert [s["sessionId"] for s in listed["sessions"]] == ["s"]


class RawClient:
    """A bare JSON-RPC client over the daemon's stdio: bytes in, JSON out, no LSP library.

    pygls' own client decodes results into its own types; this one shows exactly what the
    daemon sent.
    """

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.next_id = 0

    def send(self, message: dict[str, Any]) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        length = 0
        while (line := await self.proc.stdout.readline()) not in (b"\r\n", b""):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        message: dict[str, Any] = json.loads(await self.proc.stdout.readexactly(length))
        return message

    async def request(self, method: str, params: Any) -> Any:
        self.next_id += 1
        my_id = self.next_id
        self.send({"id": my_id, "method": method, "params": params})
        while True:
            message = await self.read()
            if message.get("id") == my_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]
            if "method" in message and "id" in message:  # a request from the daemon
                result = [None] if message["method"] == "workspace/configuration" else None
                self.send({"id": message["id"], "result": result})


async def test_a_request_before_initialize_is_refused() -> None:
    proc = await asyncio.create_subprocess_exec(
        *SERVER_MODULE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    client = RawClient(proc)
    try:
        client.send({"id": 1, "method": "history/list", "params": {}})
        answer = await client.read()
        assert answer["id"] == 1 and answer["error"]["code"] == -32002
        assert "not initialized" in answer["error"]["message"]
        # A client that goes away without shutdown: the daemon ends when its stdin closes.
        assert proc.stdin is not None
        proc.stdin.close()
        await asyncio.wait_for(proc.wait(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_content_that_looks_like_json_rpc_comes_back_unchanged(storage: Path) -> None:
    proc = await asyncio.create_subprocess_exec(
        *SERVER_MODULE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    client = RawClient(proc)
    try:
        await client.request(
            "initialize",
            {
                "processId": None,
                "rootUri": None,
                "capabilities": {},
                "initializationOptions": {"storageDir": str(storage)},
            },
        )
        client.send({"method": "initialized", "params": {}})
        await client.request("history/open", {"sessionId": "raw"})
        tricky = [
            tool_call(
                "c1",
                "fetch",
                {"class": "A", "x-trace": 1, "_private": True, "def": []},
                **{"x-trace": "t", "class": "k"},
            ),
            tool_response(
                "c1",
                "fetch",
                {
                    "jsonrpc": "2.0",
                    "id": 7,
                    "method": "textDocument/hover",
                    "params": {"jsonrpc": "2.0", "result": {"for": 1}},
                },
            ),
        ]
        # A standard LSP request with malformed params is answered, not dropped.
        client.send({"id": 99, "method": "workspace/executeCommand", "params": {"command": 5}})
        answer = await client.read()
        assert answer["id"] == 99 and answer["error"]["code"] == -32602
        await client.request("history/append", {"sessionId": "raw", "entries": tricky})
        got = await client.request("history/get", {"sessionId": "raw", "view": "raw"})
        for entry in got["entries"]:
            del entry["metadata"]["timestamp"]
        tricky[1].pop("metadata", None)
        got["entries"][1].pop("metadata")
        assert got["entries"] == tricky
        await client.request("shutdown", None)
        client.send({"method": "exit", "params": None})
        await asyncio.wait_for(proc.wait(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()


async def test_serve_over_tcp(storage: Path) -> None:
    async with tcp_daemon(storage) as daemon:
        client = make_client()
        await client.start_tcp(daemon.host, daemon.port)
        try:
            result = await client.initialize_session(
                types.InitializeParams(
                    capabilities=types.ClientCapabilities(),
                    initialization_options={"storageDir": str(storage), "token": daemon.token},
                )
            )
            assert result.capabilities.experimental == {"hdcontext": {"protocolVersion": 2}}
            await call(client, "history/open", {"sessionId": "tcp"})
            status = await call(
                client,
                "history/append",
                {"sessionId": "tcp", "entries": read_pair("r", "a", "x")},
            )
            assert status["entryCount"] == 2
            await client.shutdown_session()
        finally:
            await asyncio.wait_for(stop(client), 30)
        # The connection's exit ended the connection, not the daemon.
        assert daemon.proc.returncode is None


async def test_compact_replies_in_full_as_a_delta_or_not_at_all(storage: Path) -> None:
    """PROTOCOL v2: ``reply`` and ``base``; every delta, applied to what the client holds,
    gives the full reply's history."""
    async with start_daemon(storage) as d:
        await d.call("history/open", {"sessionId": "s"})
        held: list[dict[str, Any]] = []
        revision: str | None = None
        for turn in range(6):
            entries = [
                text("human", f"question {turn}"),
                *read_pair(f"r{turn}", "/w/a.py", f"content {turn}"),
                text("ai", f"answer {turn}"),
            ]
            await d.call("history/append", {"sessionId": "s", "entries": entries})
            params: dict[str, Any] = {"sessionId": "s", "reply": "delta", "at": 1_000 * turn}
            if revision is not None and turn != 3:  # turn 3: the client lost track
                params["base"] = revision
            result = await d.call("history/compact", params)
            assert "history" not in result and set(result["delta"]) == {"base", "keep", "entries"}
            delta = result["delta"]
            if turn == 3 or revision is None:
                assert delta["base"] is None and delta["keep"] == 0
            else:
                assert delta["base"] == revision
            held = held[: delta["keep"]] + delta["entries"]
            full = await d.call("history/get", {"sessionId": "s"})
            assert held == full["entries"]
            revision = result["revision"]
        none = await d.call("history/compact", {"sessionId": "s", "reply": "none"})
        assert "history" not in none and "delta" not in none and none["revision"] != revision
        assert none["cache"]["pricing"] == "anthropic"  # no model named: the strictest prices


@pytest.mark.parametrize(
    "params",
    [
        {"reply": "some"},
        {"base": 3, "reply": "delta"},
        {"at": -5},
        {"at": "now"},
        {"at": 1.5},
    ],
)
async def test_bad_compact_params_are_refused_and_change_nothing(
    storage: Path, params: dict[str, Any]
) -> None:
    async with start_daemon(storage) as d:
        await d.call("history/open", {"sessionId": "s"})
        await d.call("history/append", {"sessionId": "s", "entries": [text("human", "hi")]})
        before = await d.call("history/get", {"sessionId": "s"})
        err = await d.fails("history/compact", {"sessionId": "s", **params})
        assert err.code == -32602
        assert await d.call("history/get", {"sessionId": "s"}) == before
