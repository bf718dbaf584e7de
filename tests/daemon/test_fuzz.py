"""Fuzzing the daemon over its real stdio: no input kills it, hangs it, gets -32603 or
changes what a failed request must not change (issue 12).

One daemon serves every example. Each example sends one to three frames built by hypothesis
(JSON-RPC messages, plausible or not, mutated bytes, broken headers, bodies over the limit),
then ``history/list`` as a ping. It checks that the daemon is alive, that the ping and every
request it can match by id are answered in time, that no answer is -32603 or carries a
traceback, NaN or a lone surrogate, and that when every answer was an error, ``history/list``
is what it was (the session ``keep``, which no example names, never changes).

``make fuzz`` runs it with ``HDCONTEXT_FUZZ_EXAMPLES`` examples (50,000 there; ``make test``: 400).
"""

from __future__ import annotations

import itertools
import json
import os
import queue
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from .jsonish import JSON, ODD, Raw, write_json
from .raw import GUARD_S, SERVE, START_S, frame

EXAMPLES = int(os.environ.get("HDCONTEXT_FUZZ_EXAMPLES", "400"))
LIMIT = 65536
KEEP = "keep"

METHODS = [
    "history/open",
    "history/append",
    "history/compact",
    "history/get",
    "history/setOverride",
    "history/settings",
    "history/todos",
    "history/clear",
    "history/close",
    "history/delete",
    "history/list",
    "stats/savings",
    "initialize",
    "initialized",
    "$/cancelRequest",
    "textDocument/didSave",
    "workspace/executeCommand",
    "textDocument/hover",
]
SESSIONS = ["f1", "f2", "f3"]
KEYS = [
    "compression.strategy",
    "compression.threshold",
    "contextLimit",
    "compression.density.recencyPruning",
    "watch.enabled",
    "no.such.key",
]


# -- the client ---------------------------------------------------------------------------------


@dataclass
class Fuzzed:
    proc: subprocess.Popen[bytes]
    inbox: queue.Queue[dict[str, Any] | None] = field(default_factory=queue.Queue)
    lock: threading.Lock = field(default_factory=threading.Lock)
    ids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    sent: int = 0
    frames: int = 0
    problems: list[str] = field(default_factory=list)
    answers: Counter[str] = field(default_factory=Counter)

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        with self.lock:
            self.proc.stdin.write(data)
            self.proc.stdin.flush()

    def read_loop(self) -> None:
        stdout = self.proc.stdout
        assert stdout is not None
        while True:
            length = None
            while True:
                line = stdout.readline()
                if not line:
                    self.inbox.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.partition(b":")
                if name.lower() == b"content-length":
                    length = int(value)
            if length is None:
                self.problems.append("a message without Content-Length")
                continue
            body = stdout.read(length)
            try:
                message = _strict(body)
            except ValueError as exc:
                self.problems.append(f"unreadable output: {exc}")
                continue
            if "method" in message and "id" in message:
                self._answer(message)
            self.inbox.put(message)

    def _answer(self, message: dict[str, Any]) -> None:
        method = message["method"]
        if method == "workspace/configuration":
            reply: dict[str, Any] = {"result": [None]}
        elif method == "history/summarize":
            reply = {"error": {"code": -32601, "message": "no model here"}}
        else:
            reply = {"result": None}
        self.write(frame(json.dumps({"jsonrpc": "2.0", "id": message["id"], **reply}).encode()))

    def request(self, method: str, params: Any, guard: float = GUARD_S) -> dict[str, Any]:
        msg_id = f"ping-{next(self.ids)}"
        body = {"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}
        self.write(frame(json.dumps(body).encode()))
        return self.wait_for({msg_id}, guard)[msg_id]

    def wait_for(self, ids: set[Any], guard: float = GUARD_S) -> dict[Any, dict[str, Any]]:
        """The answers to ``ids``, failing on a death or a hang (nothing for ``guard`` s)."""
        found: dict[Any, dict[str, Any]] = {}
        while ids - set(found):
            try:
                message = self.inbox.get(timeout=guard)
            except queue.Empty:
                missing = sorted(map(str, ids - set(found)))
                raise AssertionError(f"hung: no answer to {missing}") from None
            if message is None:
                raise AssertionError(f"the daemon died (exit code {self.proc.poll()})")
            if "method" not in message and message.get("id") in ids:
                found[message["id"]] = message
            self._check(message)
        return found

    def _check(self, message: dict[str, Any]) -> None:
        if "method" not in message and not str(message.get("id")).startswith("ping-"):
            error_code = message.get("error", {}).get("code") if "error" in message else None
            self.answers["result" if error_code is None else str(error_code)] += 1
        error = message.get("error")
        if isinstance(error, dict):
            assert error.get("code") != -32603, message
            assert "traceback" not in json.dumps(error), message


def _strict(body: bytes) -> dict[str, Any]:
    """JSON as a JavaScript client reads it: no NaN or Infinity, no lone surrogate."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} in the output")

    message = json.loads(body, parse_constant=refuse)
    json.dumps(message, ensure_ascii=False).encode("utf-8")  # a lone surrogate raises
    assert isinstance(message, dict)
    return message


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fuzzed]:
    storage = tmp_path_factory.mktemp("fuzz") / "storage"
    proc = subprocess.Popen(
        [*SERVE, "--max-message-bytes", str(LIMIT), "--log-level", "WARNING"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    client = Fuzzed(proc)
    threading.Thread(target=client.read_loop, daemon=True).start()
    init = client.request(
        "initialize",
        {
            "processId": None,
            "capabilities": {},
            "initializationOptions": {"storageDir": str(storage)},
        },
        guard=START_S,  # the process is still starting: see raw.START_S
    )
    assert "result" in init, init
    client.write(frame(b'{"jsonrpc":"2.0","method":"initialized","params":{}}'))
    client.request("history/open", {"sessionId": KEEP})
    entries = [{"speaker": "human", "blocks": [{"type": "text", "text": "keep me"}]}]
    client.request("history/append", {"sessionId": KEEP, "entries": entries})
    try:
        yield client
    finally:
        answers = ", ".join(f"{k} ×{n}" for k, n in client.answers.most_common())
        print(f"\nfuzz: {client.sent} examples, {client.frames} frames sent; answers: {answers}")
        client.write(frame(b'{"jsonrpc":"2.0","id":"bye","method":"shutdown"}'))
        client.write(frame(b'{"jsonrpc":"2.0","method":"exit"}'))
        try:
            proc.wait(GUARD_S)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


# -- what hypothesis builds -----------------------------------------------------------------------


TEXT_BLOCK = st.fixed_dictionaries({"type": st.just("text"), "text": st.one_of(st.text(), ODD)})
CALL_BLOCK = st.fixed_dictionaries(
    {
        "type": st.just("tool_call"),
        "id": st.sampled_from(["c1", "c2", "c3"]),
        "name": st.sampled_from(["read_file", "write_file", "Bash", "x"]),
        "parameters": JSON,
    }
)
RESPONSE_BLOCK = st.fixed_dictionaries(
    {
        "type": st.just("tool_response"),
        "callId": st.sampled_from(["c1", "c2", "c3"]),
        "toolName": st.sampled_from(["read_file", "write_file", "Bash"]),
        "result": JSON,
    }
)
BLOCK = st.one_of(
    TEXT_BLOCK, CALL_BLOCK, RESPONSE_BLOCK, st.dictionaries(st.text(max_size=6), JSON)
)
ENTRY = st.one_of(
    st.fixed_dictionaries(
        {
            "speaker": st.sampled_from(["human", "ai", "tool", "robot"]),
            "blocks": st.lists(BLOCK, max_size=3),
        },
        optional={"metadata": st.dictionaries(st.text(max_size=6), JSON, max_size=3)},
    ),
    JSON,
)
TODO = st.fixed_dictionaries(
    {"id": st.text(max_size=4), "content": st.one_of(st.text(max_size=10), ODD)},
    optional={"status": st.sampled_from(["pending", "in_progress", "completed", "x"])},
)
PARAMS = st.one_of(
    st.fixed_dictionaries(
        {"sessionId": st.one_of(st.sampled_from(SESSIONS), st.text(max_size=5), JSON)},
        optional={
            "entries": st.one_of(st.lists(ENTRY, max_size=3), JSON),
            "todos": st.one_of(st.lists(TODO, max_size=2), JSON),
            "key": st.one_of(st.sampled_from(KEYS), JSON),
            "value": JSON,
            "view": st.sampled_from(["raw", "curated", "transcript", "all"]),
            "pendingTokens": st.one_of(st.integers(-5, 10**6), JSON),
            "contextLimit": st.one_of(st.integers(-5, 10**7), JSON),
            "model": st.one_of(st.text(max_size=10), ODD),
            "textDocument": st.fixed_dictionaries({"uri": st.one_of(st.text(max_size=20), JSON)}),
            "id": JSON,
        },
    ),
    JSON,
)
BAD_IDS = st.sampled_from([None, {}, [], True, 1.5, Raw("9" * 30), Raw('"\\udc00"')])


@dataclass(frozen=True)
class Sent:
    data: bytes
    answered: str | int | None = None
    """The id of the answer that must come back."""


@st.composite
def messages(draw: st.DrawFn) -> tuple[dict[str, Any], str | None]:
    """A message, and the id its answer will carry when one must come back."""
    msg: dict[str, Any] = {}
    version = draw(st.sampled_from(["2.0"] * 8 + ["1.0", 2.0, None, "absent"]))
    if version != "absent":
        msg["jsonrpc"] = version
    kind = draw(st.sampled_from(["request"] * 6 + ["notification", "response", "odd"]))
    answered: str | None = None
    if kind in ("request", "odd"):
        if draw(st.integers(0, 9)) == 0:
            msg["id"] = draw(BAD_IDS)
        else:
            answered = f"fuzz-{draw(st.integers(0, 2**40))}"
            msg["id"] = answered
    if kind in ("request", "notification"):
        msg["method"] = draw(st.one_of(st.sampled_from(METHODS), st.text(max_size=12), JSON))
        if draw(st.booleans()):
            params = draw(PARAMS)
            if isinstance(params, dict) and params.get("sessionId") == KEEP:
                params["sessionId"] = SESSIONS[0]  # keep is the witness: nothing names it
            msg["params"] = params
    elif kind == "response":
        msg["id"] = draw(st.one_of(st.text(max_size=8), st.integers(), BAD_IDS))
        msg[draw(st.sampled_from(["result", "error"]))] = draw(JSON)
    return msg, answered


GOOD_ENTRIES = st.lists(
    st.one_of(
        st.builds(
            lambda who, words: {"speaker": who, "blocks": [{"type": "text", "text": words}]},
            st.sampled_from(["human", "ai"]),
            st.text(max_size=40),
        ),
        st.builds(
            lambda n, path: [
                {
                    "speaker": "ai",
                    "blocks": [
                        {
                            "type": "tool_call",
                            "id": f"r{n}",
                            "name": "read_file",
                            "parameters": {"file_path": path},
                        }
                    ],
                },
                {
                    "speaker": "tool",
                    "blocks": [
                        {
                            "type": "tool_response",
                            "callId": f"r{n}",
                            "toolName": "read_file",
                            "result": "contents",
                        }
                    ],
                },
            ],
            st.integers(0, 10**6),
            st.sampled_from(["/w/a.py", "/w/b.py", "b.py"]),
        ),
    ),
    max_size=3,
).map(lambda items: [e for item in items for e in (item if isinstance(item, list) else [item])])
OVERRIDES = st.sampled_from(
    [
        ("compression.strategy", "top-down-truncation"),
        ("compression.strategy", "middle-out"),
        ("compression.strategy", "high-density"),
        ("contextLimit", 300),
        ("contextLimit", 100000),
        ("compression.density.recencyPruning", True),
        ("compression.threshold", None),
    ]
)


@st.composite
def plausible(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    """A well-formed request of the protocol, sometimes with one value made odd."""
    method = draw(st.sampled_from([m for m in METHODS if m.startswith("history/")]))
    params: dict[str, Any] = {"sessionId": draw(st.sampled_from(SESSIONS))}
    if method == "history/append":
        params["entries"] = draw(GOOD_ENTRIES)
    elif method == "history/todos":
        params["todos"] = [{"id": "1", "content": draw(st.text(max_size=10)), "status": "pending"}]
    elif method == "history/setOverride":
        params["key"], params["value"] = draw(OVERRIDES)
    elif method == "history/get":
        params["view"] = draw(st.sampled_from(["raw", "curated", "transcript"]))
    elif method == "history/compact":
        params["pendingTokens"] = draw(st.integers(0, 1000))
    elif method == "history/open" and draw(st.booleans()):
        params["contextLimit"] = draw(st.integers(200, 10**6))
    if draw(st.integers(0, 2)) == 0:
        params[draw(st.sampled_from(sorted(params)))] = draw(ODD)
    answered = f"fuzz-{draw(st.integers(0, 2**40))}"
    return {"jsonrpc": "2.0", "id": answered, "method": method, "params": params}, answered


def _still_answered(body: bytes) -> str | int | None:
    """The id a mutated body will be answered with, if it is still a request (the mutation may
    have changed the id itself: the daemon answers whatever valid id it finds)."""
    try:
        message = json.loads(body.decode("utf-8"))
    except ValueError:
        return None
    if not isinstance(message, dict):
        return None
    if "method" not in message and ("result" in message or "error" in message):
        return None  # a response: nobody answers it
    msg_id = message.get("id")
    if len(body) > LIMIT:
        return None
    if isinstance(msg_id, str) and not any(0xD800 <= ord(c) <= 0xDFFF for c in msg_id):
        return msg_id
    if type(msg_id) is int and -(2**63) <= msg_id < 2**63:
        return msg_id
    return None


@st.composite
def frames(draw: st.DrawFn) -> Sent:
    """Bytes that leave the stream in step (no length longer than what follows)."""
    shape = draw(
        st.sampled_from(
            ["message"] * 10 + ["mutated", "bytes", "header", "over", "blank", "http", "long"]
        )
    )
    if shape in ("message", "mutated", "over"):
        message, answered = draw(st.one_of(messages(), plausible()))
        body = write_json(message).encode("utf-8")
        if shape == "mutated":
            cut = draw(st.integers(0, len(body)))
            body = body[:cut] + draw(st.binary(max_size=8)) + body[cut + draw(st.integers(0, 3)) :]
            answered = _still_answered(body)
        elif shape == "over":
            body += b" " * (LIMIT + 1 - len(body)) if len(body) <= LIMIT else b""
            answered = None
        elif len(body) > LIMIT:
            answered = None
        name = draw(st.sampled_from([b"Content-Length", b"content-length", b"CONTENT-LENGTH"]))
        extra = draw(st.sampled_from([b"", b"Content-Type: application/vscode-jsonrpc\r\n"]))
        end = draw(st.sampled_from([b"\r\n", b"\n"]))
        data = extra + name + b": %d" % len(body) + end + end + body
        return Sent(data, answered)
    if shape == "bytes":
        body = draw(st.binary(max_size=64))
        return Sent(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    if shape == "header":
        line = draw(
            st.sampled_from(
                [
                    b"Content-Length: nope",
                    b"Content-Length: -1",
                    b"Content-Length: " + b"9" * 40,
                    b"no colon here",
                    b"Content-Type: text/plain",
                ]
            )
        )
        return Sent(line + b"\r\n\r\n")
    if shape == "blank":
        return Sent(b"\r\n" * draw(st.integers(1, 3)))
    if shape == "http":
        return Sent(b"POST / HTTP/1.1\r\nHost: localhost\r\n\r\n")
    return Sent(b"X" * draw(st.integers(65_000, 70_000)) + b"\r\n\r\n")


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(st.lists(frames(), min_size=1, max_size=3))
def test_no_input_kills_hangs_or_changes_the_daemon(fuzzed: Fuzzed, sent: list[Sent]) -> None:
    ids = [item.answered for item in sent if item.answered is not None]
    assume(len(ids) == len(set(ids)))  # one answer an id, so that each tells its own outcome
    before = fuzzed.request("history/list", {})
    for item in sent:
        fuzzed.write(item.data)
    fuzzed.sent += 1
    fuzzed.frames += len(sent)
    answers = fuzzed.wait_for(set(ids))
    after = fuzzed.request("history/list", {})
    assert fuzzed.proc.poll() is None
    assert fuzzed.problems == [], fuzzed.problems
    assert "result" in after, after
    if all("error" in a for a in answers.values()):
        assert after["result"] == before["result"], (sent, answers)
    keep = [s for s in after["result"]["sessions"] if s["sessionId"] == KEEP]
    assert len(keep) == 1 and keep[0]["entryCount"] == 1 and keep[0]["version"] == 1
