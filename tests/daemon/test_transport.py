"""No input kills or hangs the daemon, and each bad one gets its error at once (issue 12).

Over the real stdio transport, byte for byte: PROTOCOL.md "Transport" says what each input
gets. Every test checks that the daemon still answers afterwards and that nothing changed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .raw import GUARD_S, Peer, StdioDaemon, dumps, ended, frame, stdio_daemon

SESSION = "s"
ENTRY = {"speaker": "human", "blocks": [{"type": "text", "text": "hello"}]}


async def _ready(d: StdioDaemon, storage: Path) -> dict[str, Any]:
    """Initialized, with one session of one entry: its raw view (what must not change)."""
    answer = await d.peer.initialize(storage)
    assert "result" in answer, answer
    await d.peer.call("history/open", {"sessionId": SESSION})
    await d.peer.call("history/append", {"sessionId": SESSION, "entries": [ENTRY]})
    return await _state(d.peer)


async def _state(peer: Peer) -> dict[str, Any]:
    raw = await peer.call("history/get", {"sessionId": SESSION, "view": "raw"})
    settings = await peer.call("history/settings", {"sessionId": SESSION})
    listed = await peer.call("history/list", {})
    return {"raw": raw, "settings": settings, "list": listed}


def _request(msg_id: Any, method: str, params: Any) -> bytes:
    return dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})


async def test_a_huge_content_length_is_refused_and_the_daemon_lives_on(storage: Path) -> None:
    async with stdio_daemon() as d:
        await _ready(d, storage)
        d.peer.send_bytes(b"Content-Length: 3000000000\r\n\r\n")
        answer = await d.peer.reply()
        assert answer["id"] is None and answer["error"]["code"] == -32600
        assert "3000000000" in answer["error"]["message"]
        assert "--max-message-bytes" in answer["error"]["message"]
        # Alive, and it took none of those three gigabytes: the body is skipped as it comes.
        assert await ended(d.proc, 1.0) is None
        rss_kib = _rss_kib(d.proc.pid)
        assert rss_kib < 400 * 1024, rss_kib
        assert d.proc.stdin is not None
        d.proc.stdin.close()
        assert await ended(d.proc) == 0


async def test_a_message_over_the_limit_is_skipped_and_the_next_one_answered(
    storage: Path,
) -> None:
    async with stdio_daemon("--max-message-bytes", "4096") as d:
        before = await _ready(d, storage)
        big = _request(7, "history/append", {"sessionId": SESSION, "entries": [ENTRY] * 100})
        assert len(big) > 4096
        d.peer.send_bytes(frame(big))
        answer = await d.peer.reply()
        assert answer == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": f"message too large: {len(big)} bytes, over the limit of 4096 "
                "(serve --max-message-bytes)",
            },
        }
        assert await _state(d.peer) == before


@pytest.mark.parametrize(
    ("header", "why"),
    [
        (b"Content-Type: application/json\r\n\r\n", "no Content-Length header"),
        (b"Content-Length: twelve\r\n\r\n", "Content-Length is not a byte count"),
        (b"Content-Length: -5\r\n\r\n", "Content-Length is not a byte count"),
        (b"Content-Length: " + b"9" * 5000 + b"\r\n\r\n", "Content-Length is not a byte count"),
        (b"just some words\r\n\r\n", "a header line without a colon"),
        (b"X" * 70_000 + b"\r\n\r\n", "a header"),  # line or block: how the bytes arrive
    ],
)
async def test_a_broken_header_is_answered_and_the_stream_goes_on(
    storage: Path, header: bytes, why: str
) -> None:
    async with stdio_daemon() as d:
        before = await _ready(d, storage)
        d.peer.send_bytes(header)
        answer = await d.peer.reply()
        assert answer["id"] is None and answer["error"]["code"] == -32600
        assert answer["error"]["message"].startswith(f"not an LSP message: {why}")
        assert await _state(d.peer) == before


NESTED = {"sessionId": SESSION, "model": "m"}


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


# Each body is a request with id 9 unless its id is the problem; ``code`` and the start of
# the message are what it must get.
BAD_BODIES: list[tuple[str, bytes, int, Any, str]] = [
    (
        "nesting 1,000 levels",
        b'{"jsonrpc":"2.0","id":9,"method":"history/open","params":{"sessionId":"s","x":'
        + _nested(1000).encode()
        + b"}}",
        -32602,
        9,
        "params.x[0][0][0][0][0][0][0]…(189 more)…[0][0][0]: nested deeper than 200 levels",
    ),
    (
        "nesting 5,000 levels, the id after it",
        b'{"jsonrpc":"2.0","method":"history/open","params":'
        + _nested(5000).encode()
        + b',"id":9}',
        -32602,
        9,
        "params[0][0][0][0][0][0][0][0]…(189 more)…[0][0][0]: nested deeper than 200 levels",
    ),
    (
        "nesting 201 levels",
        b'{"jsonrpc":"2.0","id":9,"method":"history/open","params":' + _nested(201).encode() + b"}",
        -32602,
        9,
        "params[0][0]",
    ),
    (
        "a 5,000-digit integer",
        b'{"jsonrpc":"2.0","id":9,"method":"history/open","params":{"sessionId":"s",'
        b'"contextLimit":' + b"7" * 5000 + b"}}",
        -32602,
        9,
        "params.contextLimit: integer beyond 64 bits",
    ),
    (
        "an integer of 2**63",
        _request(9, "history/open", {"sessionId": "s", "contextLimit": 2**63}),
        -32602,
        9,
        "params.contextLimit: integer beyond 64 bits",
    ),
    (
        "a 5,000-digit id",
        b'{"jsonrpc":"2.0","id":' + b"7" * 5000 + b',"method":"history/list","params":{}}',
        -32600,
        None,
        '"id" must be a string or an integer',
    ),
    (
        "jsonrpc missing",
        b'{"id":9,"method":"history/list","params":{}}',
        -32600,
        9,
        'not a JSON-RPC 2.0 message: "jsonrpc" must be "2.0"',
    ),
    (
        'jsonrpc "1.0"',
        b'{"jsonrpc":"1.0","id":9,"method":"history/list","params":{}}',
        -32600,
        9,
        'not a JSON-RPC 2.0 message: "jsonrpc" must be "2.0"',
    ),
    (
        "a batch",
        b'[{"jsonrpc":"2.0","id":9,"method":"history/list","params":{}}]',
        -32600,
        None,
        "batch messages are not supported",
    ),
    (
        "an id of {}",
        b'{"jsonrpc":"2.0","id":{},"method":"history/list","params":{}}',
        -32600,
        None,
        '"id" must be a string or an integer',
    ),
    (
        "an id of []",
        b'{"jsonrpc":"2.0","id":[],"method":"history/list","params":{}}',
        -32600,
        None,
        '"id" must be a string or an integer',
    ),
    (
        "an id of true",
        b'{"jsonrpc":"2.0","id":true,"method":"history/list","params":{}}',
        -32600,
        None,
        '"id" must be a string or an integer',
    ),
    (
        "a method that is not a string",
        b'{"jsonrpc":"2.0","id":9,"method":5,"params":{}}',
        -32600,
        9,
        '"method" must be a string',
    ),
    ("not JSON", b"hello, daemon", -32700, None, "parse error at byte 0"),
    (
        "JSON cut short",
        b'{"jsonrpc":"2.0","id":9,"method":"history/list","params":{',
        -32700,
        None,
        "parse error at byte 58: Expecting property name",
    ),
    ("an empty body", b"", -32700, None, "parse error at byte 0"),
    (
        "not UTF-8",
        b'{"jsonrpc":"2.0","id":9,"method":"\xff"}',
        -32700,
        None,
        "parse error at byte 34",
    ),
    (
        "a number, not an object",
        b"42",
        -32600,
        None,
        "not a JSON-RPC 2.0 message: expected an object",
    ),
]
for _name, _value in (("NaN", b"NaN"), ("Infinity", b"Infinity"), ("-Infinity", b"-Infinity")):
    BAD_BODIES.append(
        (
            _name,
            b'{"jsonrpc":"2.0","id":9,"method":"history/setOverride","params":{"sessionId":"s",'
            b'"key":"compression.threshold","value":' + _value + b"}}",
            -32602,
            9,
            f"params.value: {_name} is not a JSON number",
        )
    )
BAD_BODIES.append(
    (
        "1e400",
        b'{"jsonrpc":"2.0","id":9,"method":"history/setOverride","params":{"sessionId":"s",'
        b'"key":"compression.threshold","value":1e400}}',
        -32602,
        9,
        "params.value: a number beyond the range of a double",
    )
)


GROUPS = {
    "inputs that hung the daemon": [
        "nesting 1,000 levels",
        "nesting 5,000 levels, the id after it",
        "nesting 201 levels",
        "a 5,000-digit integer",
        "an integer of 2**63",
        "a 5,000-digit id",
        "jsonrpc missing",
        'jsonrpc "1.0"',
        "a batch",
        "a method that is not a string",
        "a number, not an object",
    ],
    "ids that are not a string or an integer": ["an id of {}", "an id of []", "an id of true"],
    "text that is not JSON": ["not JSON", "JSON cut short", "an empty body", "not UTF-8"],
    "NaN and Infinity": ["NaN", "Infinity", "-Infinity", "1e400"],
}


@pytest.mark.parametrize("group", list(GROUPS))
async def test_each_bad_body_gets_its_error_at_once_and_changes_nothing(
    storage: Path, group: str
) -> None:
    cases = [case for case in BAD_BODIES if case[0] in GROUPS[group]]
    assert len(cases) == len(GROUPS[group])
    async with stdio_daemon() as d:
        before = await _ready(d, storage)
        for name, body, code, reply_to, message in cases:
            d.peer.send_bytes(frame(body))
            answer = await d.peer.reply(GUARD_S)
            assert answer.get("id") == reply_to and answer["error"]["code"] == code, (name, answer)
            assert answer["error"]["message"].startswith(message), (name, answer)
            assert "data" not in answer["error"], (name, answer)
        assert await _state(d.peer) == before
        assert d.alive


SURROGATE_REQUESTS: list[tuple[str, bytes, str]] = [
    (
        "model",
        b'{"jsonrpc":"2.0","id":9,"method":"history/open","params":'
        b'{"sessionId":"s","model":"gpt-\\ud800"}}',
        "params.model: a lone UTF-16 surrogate",
    ),
    (
        "a settings value",
        b'{"jsonrpc":"2.0","id":9,"method":"history/setOverride","params":'
        b'{"sessionId":"s","key":"summarizer.model","value":"m\\udfff"}}',
        "params.value: a lone UTF-16 surrogate",
    ),
    (
        "a todo",
        b'{"jsonrpc":"2.0","id":9,"method":"history/todos","params":{"sessionId":"s",'
        b'"todos":[{"id":"1","content":"fix \\ud83d it","status":"pending"}]}}',
        "params.todos[0].content: a lone UTF-16 surrogate",
    ),
    (
        "an entry",
        b'{"jsonrpc":"2.0","id":9,"method":"history/append","params":{"sessionId":"s",'
        b'"entries":[{"speaker":"human","blocks":[{"type":"text","text":"\\udc00"}]}]}}',
        "params.entries[0].blocks[0].text: a lone UTF-16 surrogate",
    ),
    (
        "a key",
        b'{"jsonrpc":"2.0","id":9,"method":"history/append","params":{"sessionId":"s",'
        b'"entries":[{"speaker":"human","blocks":[],"metadata":{"k\\ud800":1}}]}}',
        'params.entries[0].metadata["k\\ufffd"]: a key with a lone UTF-16 surrogate',
    ),
]


async def test_lone_surrogates_are_refused_never_echoed(storage: Path) -> None:
    async with stdio_daemon() as d:
        before = await _ready(d, storage)
        for name, body, message in SURROGATE_REQUESTS:
            d.peer.send_bytes(frame(body))
            answer = await d.peer.reply()
            assert answer["id"] == 9 and answer["error"]["code"] == -32602, (name, answer)
            assert answer["error"]["message"].startswith(message), (name, answer)
        # A pair is a character, and welcome.
        model = await d.peer.call("history/open", {"sessionId": SESSION, "model": "m\U0001f600"})
        assert model["sessionId"] == SESSION
        after = await _state(d.peer)
        assert after == before
    # Nothing the daemon wrote held a lone surrogate: its output decodes as strict UTF-8.
    assert "\\ud8" not in d.log() and "\\udc" not in d.log()


async def test_a_paired_surrogate_round_trips(storage: Path) -> None:
    async with stdio_daemon() as d:
        await _ready(d, storage)
        body = (
            b'{"jsonrpc":"2.0","id":9,"method":"history/append","params":{"sessionId":"s",'
            b'"entries":[{"speaker":"human","blocks":[{"type":"text","text":"\\ud83d\\ude00"}]}]}}'
        )
        d.peer.send_bytes(frame(body))
        assert "result" in await d.peer.answer_to(9)
        raw = await d.peer.call("history/get", {"sessionId": SESSION, "view": "raw"})
        assert raw["entries"][-1]["blocks"][0]["text"] == "\U0001f600"


async def test_requests_after_shutdown_are_refused_and_exit_ends_it(storage: Path) -> None:
    async with stdio_daemon() as d:
        await _ready(d, storage)
        assert (await d.peer.request("shutdown"))["result"] is None
        for method, params in (
            ("history/list", {}),
            ("history/get", {"sessionId": SESSION}),
            ("shutdown", None),
            ("initialize", {"processId": None, "capabilities": {}}),
        ):
            error = await d.peer.fails(method, params)
            assert error == {
                "code": -32600,
                "message": "shutdown was received: only exit is accepted",
            } or (method == "initialize" and error["code"] == -32600), (method, error)
        d.peer.notify("history/whatever", {})  # a notification: dropped, no answer
        d.peer.notify("exit")
        assert await ended(d.proc) == 0


async def test_exit_without_shutdown_ends_with_code_1(storage: Path) -> None:
    async with stdio_daemon() as d:
        await _ready(d, storage)
        d.peer.notify("exit")
        assert await ended(d.proc) == 1


async def test_a_second_initialize_is_refused_and_the_storage_stays(
    storage: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    async with stdio_daemon() as d:
        before = await _ready(d, storage)
        again = await d.peer.initialize(other)
        assert again["error"] == {"code": -32600, "message": "initialize was already received"}
        assert not other.exists()
        assert await _state(d.peer) == before


@pytest.mark.parametrize("case", ["a file", "under a file", "unwritable", "NUL"])
async def test_a_storage_dir_that_cannot_be_used_is_refused_and_a_good_one_then_works(
    storage: Path, tmp_path: Path, case: str
) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("not a folder")
    bad = {
        "a file": str(a_file),
        "under a file": str(a_file / "storage"),
        "unwritable": "/sys/hdcontext-storage",  # even root cannot make a folder in sysfs
        "NUL": str(tmp_path / "st\x00orage"),
    }[case]
    async with stdio_daemon() as d:
        answer = await d.peer.initialize(bad)
        error = answer["error"]
        assert error["code"] == -32004, error
        assert "data" not in error  # pygls put a traceback there (the NUL was a ValueError)
        if case == "NUL":
            assert "NUL" in error["message"]
        else:
            assert error["message"].startswith(f"cannot use the storage folder {bad}: "), error
        assert a_file.read_text() == "not a folder"
        # Not initialized: requests are refused, and the client may try again.
        refused = await d.peer.fails("history/list", {})
        assert refused["code"] == -32002
        answer = await d.peer.initialize(storage)
        assert "result" in answer, answer
        assert await d.peer.call("history/list", {}) == {"sessions": []}


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def test_requests_and_notifications_in_the_wrong_shape(storage: Path) -> None:
    async with stdio_daemon() as d:
        before = await _ready(d, storage)
        # history/append without an id: nobody would hear whether it worked, so it does not.
        d.peer.notify("history/append", {"sessionId": SESSION, "entries": [ENTRY]})
        # initialized with an id: pygls took it for a notification and never answered.
        error = await d.peer.fails("initialized", {})
        assert error == {
            "code": -32600,
            "message": "'initialized' is a notification: send it without an id",
        }
        assert await _state(d.peer) == before


async def test_a_request_may_leave_params_out(storage: Path) -> None:
    """JSON-RPC 2.0: ``params`` may be omitted. A method that takes none is answered; one that
    needs some says what is missing, as it would for ``{}``."""
    async with stdio_daemon() as d:
        before = await _ready(d, storage)
        d.peer.send_bytes(frame(b'{"jsonrpc":"2.0","id":7,"method":"history/list"}'))
        listed = await d.peer.answer_to(7)
        assert listed.get("result") == before["list"], listed
        d.peer.send_bytes(frame(b'{"jsonrpc":"2.0","id":8,"method":"history/open"}'))
        opened = await d.peer.answer_to(8)
        assert opened["error"]["code"] == -32602, opened
        assert opened["error"]["message"] == "sessionId: field required"
        assert await _state(d.peer) == before
        d.peer.send_bytes(frame(b'{"jsonrpc":"2.0","id":9,"method":"shutdown"}'))
        assert (await d.peer.answer_to(9)).get("result", "missing") is None
