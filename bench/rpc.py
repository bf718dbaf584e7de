"""A minimal JSON-RPC client over a subprocess's stdio, with LSP framing.

The benchmark times the daemon as a client sees it, so the client must add as little as
possible: no event loop, no model conversion. It answers the requests the daemon sends
(``workspace/configuration``, ``client/registerCapability``) with empty results and ignores
notifications.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any


class RpcError(RuntimeError):
    pass


@dataclass
class Reply:
    result: Any
    seconds: float
    """From the first byte written to the last byte of the reply read (the request's encoding
    and the reply's parsing excluded)."""
    size: int
    """Bytes of the reply body."""


@dataclass
class Client:
    process: subprocess.Popen[bytes]
    _next_id: int = 0
    notifications: list[tuple[str, Any]] = field(default_factory=list)

    @classmethod
    def start(cls, command: Sequence[str], cwd: Path, stderr: IO[bytes]) -> Client:
        process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
        )
        return cls(process)

    @property
    def pid(self) -> int:
        return self.process.pid

    def _write(self, message: dict[str, Any]) -> None:
        self._send(self._encode(message))

    @staticmethod
    def _encode(message: dict[str, Any]) -> bytes:
        body = json.dumps(message, ensure_ascii=False).encode("utf-8")
        return b"Content-Length: %d\r\n\r\n" % len(body) + body

    def _send(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def _read_body(self) -> bytes:
        stdout = self.process.stdout
        assert stdout is not None
        length = None
        while True:
            line = stdout.readline()
            if not line:
                raise RpcError("the daemon closed its output")
            line = line.strip()
            if not line:
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        if length is None:
            raise RpcError("a message without Content-Length")
        return stdout.read(length)

    def notify(self, method: str, params: Any = None) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any = None) -> Reply:
        self._next_id += 1
        request_id = self._next_id
        # Encoded before the clock starts: what is timed is the daemon, not this client.
        data = self._encode(
            {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        )
        start = time.perf_counter()
        self._send(data)
        while True:
            body = self._read_body()
            elapsed = time.perf_counter() - start
            message = json.loads(body)
            if "method" in message and "id" in message:
                self._answer(message)
            elif "method" in message:
                self.notifications.append((message["method"], message.get("params")))
            elif message.get("id") == request_id:
                if "error" in message:
                    raise RpcError(f"{method}: {message['error']}")
                return Reply(message.get("result"), elapsed, len(body))

    def _answer(self, message: dict[str, Any]) -> None:
        if message["method"] == "workspace/configuration":
            items = (message.get("params") or {}).get("items") or []
            result: Any = [None for _ in items]
        else:
            result = None
        self._write({"jsonrpc": "2.0", "id": message["id"], "result": result})

    def close(self, timeout: float = 30) -> None:
        try:
            self.request("shutdown")
            self.notify("exit")
            # pygls reads stdin in a worker thread and joins it on the way out: the daemon
            # leaves only once its input is closed, as every LSP client does after exit.
            assert self.process.stdin is not None
            self.process.stdin.close()
            self.process.wait(timeout)
        except (RpcError, BrokenPipeError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()


def rss_bytes(pid: int) -> int:
    """Resident set size of a process, from /proc (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RpcError(f"no VmRSS for pid {pid}")
