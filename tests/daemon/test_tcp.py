"""``serve --tcp``: a token before anything else, no HTTP, and every connection on its own
(issue 12; PROTOCOL.md "TCP")."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from hdcontext.edges.lsp.server import build_server

from .harness import text
from .raw import Gone, Peer, TcpDaemon, dumps, frame, tcp_daemon


async def _authorized(daemon: TcpDaemon, storage: Path, **options: object) -> Peer:
    peer = await daemon.connect()
    answer = await peer.initialize(storage, token=daemon.token, **options)
    assert "result" in answer, answer
    assert answer["result"]["capabilities"]["experimental"] == {"hdcontext": {"protocolVersion": 2}}
    return peer


async def _sessions(daemon: TcpDaemon, storage: Path) -> list[str]:
    """Every session a new connection can see (nobody else holds one here)."""
    peer = await _authorized(daemon, storage)
    listed = await peer.call("history/list", {})
    assert isinstance(peer.writer, asyncio.StreamWriter)
    peer.writer.close()
    return [s["sessionId"] for s in listed["sessions"]]


async def test_the_listening_line_says_where_the_token_is(storage: Path) -> None:
    async with tcp_daemon(storage) as daemon:
        token_file = storage / "tcp-token"
        assert daemon.token_source == f"in {token_file}"
        assert daemon.host == "127.0.0.1" and daemon.port > 0
        assert stat.S_IMODE(os.stat(token_file).st_mode) == 0o600
        assert len(daemon.token) >= 32
        await _authorized(daemon, storage)


async def test_the_token_can_come_from_the_environment(storage: Path) -> None:
    env = {"HDCONTEXT_TOKEN": "a-token-the-user-chose"}
    async with tcp_daemon(storage, env=env) as daemon:
        assert daemon.token_source == "from HDCONTEXT_TOKEN"
        assert daemon.token == "a-token-the-user-chose"
        assert not (storage / "tcp-token").exists()
        await _authorized(daemon, storage)


async def test_no_token_no_service(storage: Path) -> None:
    async with tcp_daemon(storage) as daemon:
        tries: list[tuple[bytes, object]] = [
            (dumps(_initialize(storage, None)), 1),
            (dumps(_initialize(storage, "wrong")), 1),
            (
                dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": 2,
                        "method": "history/open",
                        "params": {"sessionId": "x"},
                    }
                ),
                2,
            ),
            (b"not json at all", None),
            (b"x" * (2 * 1024 * 1024), None),  # a large first message is not even read
        ]
        for body, reply_to in tries:
            peer = await daemon.connect()
            peer.send_bytes(frame(body))
            try:
                answer = await peer.read()
            except Gone:  # closed while the client still sent: the kernel resets it
                assert len(body) > 1024 * 1024
                continue
            assert answer == {
                "jsonrpc": "2.0",
                "id": reply_to,
                "error": {"code": -32005, "message": "unauthorized"},
            }
            assert await peer.closed()
        assert daemon.proc.returncode is None
        assert await _sessions(daemon, storage) == []  # history/open x was not run


def _initialize(storage: Path, token: str | None) -> dict[str, object]:
    options: dict[str, object] = {"storageDir": str(storage)}
    if token is not None:
        options["token"] = token
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"processId": None, "capabilities": {}, "initializationOptions": options},
    }


async def test_an_http_request_is_closed_without_running_anything(storage: Path) -> None:
    async with tcp_daemon(storage) as daemon:
        # What a web page can send with fetch(..., {method: "POST", body}) and text/plain: the
        # body carries LSP messages, token and all (a page could guess everything but that).
        inner = frame(dumps(_initialize(storage, daemon.token))) + frame(
            dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "history/open",
                    "params": {"sessionId": "web"},
                }
            )
        )
        request = (
            b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain;charset=UTF-8\r\n"
            b"Content-Length: %d\r\n\r\n" % len(inner) + inner
        )
        peer = await daemon.connect()
        peer.send_bytes(request)
        with pytest.raises(Gone):  # closed, with not a byte written back
            await peer.read()
        assert "web" not in await _sessions(daemon, storage)


async def test_each_connection_has_its_own_state_and_sessions(storage: Path) -> None:
    async with tcp_daemon(storage) as daemon:
        a = await _authorized(daemon, storage, settings={"contextLimit": 1000})
        b = await _authorized(daemon, storage)
        opened = await a.call("history/open", {"sessionId": "a-chat"})
        assert opened["contextLimit"] == 1000  # a's settings
        await a.call("history/append", {"sessionId": "a-chat", "entries": [text("human", "mine")]})
        assert (await b.call("history/open", {"sessionId": "b-chat"}))["contextLimit"] == 200000

        # b cannot see a's chat, nor reach it by name.
        listed = await b.call("history/list", {})
        assert [s["sessionId"] for s in listed["sessions"]] == ["b-chat"]
        for method in ("history/get", "history/open", "history/append", "history/delete"):
            error = await b.fails(method, {"sessionId": "a-chat", "entries": []})
            assert error["code"] == -32001, (method, error)
        # The status bar notifications of a's chat went to a alone.
        assert not [n for n in b.notifications if n["params"].get("sessionId") == "a-chat"]
        assert [n for n in a.notifications if n["params"].get("sessionId") == "a-chat"]

        # b leaves properly: its connection ends, the daemon and a go on.
        assert (await b.request("shutdown"))["result"] is None
        b.notify("exit")
        assert await b.closed()
        raw = await a.call("history/get", {"sessionId": "a-chat", "view": "raw"})
        assert len(raw["entries"]) == 1

        # a goes away without a word: its chat is free for whoever connects next.
        assert isinstance(a.writer, asyncio.StreamWriter)
        a.writer.close()
        c = await _authorized(daemon, storage)
        for _ in range(100):  # a's connection is being wound up
            answer = await c.request("history/get", {"sessionId": "a-chat", "view": "raw"})
            if "result" in answer:
                break
            await asyncio.sleep(0.05)
        assert [e["blocks"][0]["text"] for e in answer["result"]["entries"]] == ["mine"]
        assert daemon.proc.returncode is None


async def test_a_message_over_the_limit_closes_only_its_connection(storage: Path) -> None:
    async with tcp_daemon(storage, "--max-message-bytes", "4096") as daemon:
        for header in (b"Content-Length: 3000000000\r\n\r\n", frame(b" " * 5000)):
            peer = await _authorized(daemon, storage)
            peer.send_bytes(header)
            answer = await peer.reply()
            assert answer["id"] is None and answer["error"]["code"] == -32600
            assert await peer.closed()
        other = await _authorized(daemon, storage)
        assert await other.call("history/list", {}) == {"sessions": []}


def test_every_connection_of_the_process_reads_with_one_converter() -> None:
    """Each TCP connection builds a server of its own; lsprotocol's converter (80 ms to build,
    90 ms more to generate its reader of ``initialize``) is made once for all of them."""
    first, second = build_server(), build_server()
    assert first.protocol._converter is second.protocol._converter
