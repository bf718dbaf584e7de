"""``python -m bench.proxy``: what the proxy adds to a model call, and what it holds, in one run.

The proxy runs as a user starts it (``hdcontext proxy`` in its own process, its own storage);
a fake Anthropic upstream in this process answers every request with the same short event
stream, after reading the whole body, as a provider would. The conversation is the largest
real session, at 1× and at 10× its length (the session repeated with fresh call ids), sent as
Claude Code sends it: the whole conversation every time, streamed, with a system prompt and
tools, and the client's own breakpoint on its last message. The context limit is set high
enough that compression never runs (as in the latency part of ``make bench``): what is timed
is the path every turn takes.

What it reports, each side by side with a direct call to the same upstream:

* **added latency per request** at 1× and 10×: each turn appends one tool call and its result,
  then sends the request three times, straight to the upstream, through a bare aiohttp relay
  (``relay.py``: the floor of any proxy on this stack) and through the proxy, in an order that
  turns (a slow spell of the machine falls on all); the overhead of a turn is the proxied (or
  relayed) time minus the direct time of that same turn (p50, p99); and the proxy process's
  CPU time per request over those turns, which the machine's other work does not inflate as
  it does wall times (the load average is printed before and after);
* **a new conversation's first request** (the proxy, warmed by another conversation, has never
  seen it: a resumed chat), and at 10× the first request after **a restart** of the proxy on
  the same storage: made as soon as the proxy listens (it waits for its conversation to be
  taken in: the stopped proxy kept its last request, ``Compactor.keep_for_restart``), and made
  once the proxy has settled (its CPU idle: the conversations of its last run taken in);
* **the proxy's memory**: RSS once warm, after 100, 250 and 500 requests of one growing
  conversation, and after 20 more conversations of two requests each (what an agent's day
  looks like: the memory should stop growing once the conversations are held);
* **the daemon's memory per session against its JSON**: ``hdcontext serve`` taking sessions in
  (``history/append`` of the whole conversation, then a compaction), RSS above a warm idle
  daemon over the sessions' IContent JSON (at 1×, ten sessions, so that RSS's granularity does
  not swamp one small session), once the daemon is idle (it packs what a compaction let go of
  ``PACK_AFTER_S`` after it: what a person sees between two turns), and right after the last
  compaction's answer. What a connection keeps to skip a resent sync's bytes
  (``lsp/resent.py``) is the connection's, not the session's, and is left out this way.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from hdcontext.core.content import IContent, dump_entries
from hdcontext.edges.daemon.packing import PACK_AFTER_S
from hdcontext.formats.conversation import Conversation
from hdcontext.formats.exporters import anthropic as exporter

from . import transcripts
from .daemon import idle_rss, serve_command
from .latency import CONTEXT_LIMIT, percentile
from .rpc import Client, rss_bytes
from .transcripts import Transcript, repeated

TURNS = 60
WARMUP = 3
NEAR_LIMIT = {1: 20_000, 10: 200_000}
"""Context limits the 1× and 10× histories stay above once every old output is a one-liner:
each of their turns is compressed (``near`` in the report)."""
NEAR_TURNS = 20
MEMORY_REQUESTS = 500
MEMORY_MARKS = (100, 250, 500)
MORE_CONVERSATIONS = 20
DAEMON_SESSIONS_1X = 10
SYSTEM = [
    {
        "type": "text",
        "text": "You are a coding agent. " * 200,
        "cache_control": {"type": "ephemeral"},
    }
]
TOOLS = [
    {"name": name, "description": f"{name} tool " * 40, "input_schema": {"type": "object"}}
    for name in ("Read", "Edit", "Write", "Bash", "Grep", "Glob")
]
CC = {"type": "ephemeral"}
ANSWER = "".join(
    f"event: {name}\ndata: {json.dumps(data)}\n\n"
    for name, data in (
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_bench",
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-bench",
                    "content": [],
                    "stop_reason": None,
                    "usage": {
                        "input_tokens": 50,
                        "cache_read_input_tokens": 90000,
                        "cache_creation_input_tokens": 900,
                        "output_tokens": 1,
                    },
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "ok"},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 2},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    )
).encode()


async def _answer(request: web.Request) -> web.StreamResponse:
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(ANSWER)
    await response.write_eof()
    return response


def _turn(k: int, root: str) -> list[dict[str, Any]]:
    """One tool call and its result, as Claude Code sends them (a read, then an edit)."""
    path = f"{root.rstrip('/')}/bench/file_{(k // 2) % 5}.py"
    call = f"toolu_bench_{k}"
    if k % 2 == 0:
        name, params = "Read", {"file_path": path}
        result = "\n".join(f"{i}\tline {i}: some code = {i} * 2" for i in range(1, 61))
    else:
        name = "Edit"
        params = {"file_path": path, "old_string": "line 1:", "new_string": "line one:"}
        result = f"The file {path} has been updated successfully."
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call, "name": name, "input": params}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call, "content": result}],
        },
    ]


def _marked_last(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages with the client's breakpoint on the last block of the last one, as Claude
    Code sends them (the mark moves every request: the previous body's bytes differ there)."""
    last = dict(messages[-1])
    content = last["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
    blocks[-1] = {**blocks[-1], "cache_control": CC}
    last["content"] = blocks
    return [*messages[:-1], last]


def _body(messages: list[dict[str, Any]]) -> bytes:
    """The request as Claude Code writes it (JavaScript's ``JSON.stringify``: compact, UTF-8;
    the messages first, then the system prompt and the tools)."""
    body = {
        "model": "claude-sonnet-4-5",
        "messages": _marked_last(messages),
        "system": SYSTEM,
        "tools": TOOLS,
        "max_tokens": 32000,
        "stream": True,
    }
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _messages(entries: list[IContent], tag: str = "") -> list[dict[str, Any]]:
    """The entries as Anthropic messages ending with a user message; ``tag`` makes the first
    message (and so the conversation's session) its own."""
    exported = exporter.export(Conversation(tuple(entries))).payload
    assert isinstance(exported, dict)
    messages: list[dict[str, Any]] = exported["messages"]
    if messages and messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": "go on"})
    if tag:
        first = messages[0]
        content = first["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        messages[0] = {**first, "content": [{"type": "text", "text": f"({tag})"}, *blocks]}
    return messages


class _Upstream:
    """The fake provider, on a free loopback port of this process."""

    def __init__(self) -> None:
        app = web.Application(client_max_size=1 << 30)
        app.router.add_post("/v1/messages", _answer)
        self.runner = web.AppRunner(app, access_log=None)
        self.url = ""

    async def __aenter__(self) -> _Upstream:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.runner.cleanup()


class _Proxy:
    """``hdcontext proxy`` in its own process, over ``storage``."""

    def __init__(self, upstream: str, storage: Path, context_limit: int = CONTEXT_LIMIT) -> None:
        self.upstream = upstream
        self.storage = storage
        self.context_limit = context_limit
        self.process: asyncio.subprocess.Process | None = None
        self.url = ""

    def command(self) -> list[str]:
        return [
            "-m",
            "hdcontext",
            "proxy",
            "--port",
            "0",
            "--anthropic-upstream",
            self.upstream,
            "--openai-upstream",
            self.upstream + "/v1",
            "--gemini-upstream",
            self.upstream,
            "--storage-dir",
            str(self.storage),
            "--context-limit",
            str(self.context_limit),
            "--log-level",
            "WARNING",
        ]

    async def __aenter__(self) -> _Proxy:
        process = await asyncio.create_subprocess_exec(
            sys.executable, *self.command(), stderr=asyncio.subprocess.PIPE
        )
        assert process.stderr is not None
        self.process = process
        # The first line that names the address (a first start may say other things first).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
            found = re.search(r"listening on (http://\S+)", line)
            if found is not None:
                self.url = found.group(1)
                asyncio.get_running_loop().create_task(_drain(process.stderr))
                return self
            if not line:
                break
        process.kill()
        raise RuntimeError("the proxy did not start")

    @property
    def rss(self) -> int:
        assert self.process is not None
        return rss_bytes(self.process.pid)

    @property
    def cpu_s(self) -> float:
        """CPU time the proxy has used, all its threads (SQLite's too), from /proc (Linux)."""
        assert self.process is not None
        return cpu_seconds(self.process.pid)

    async def __aexit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            await self.process.wait()


class _Relay(_Proxy):
    """``bench/relay.py`` in its own process: the floor of a proxy on hdcontext's stack."""

    def command(self) -> list[str]:
        return ["-m", "bench.relay", "--upstream", self.upstream]


def cpu_seconds(pid: int) -> float:
    """User plus system time of a process so far: what it costs whatever the machine's load
    (the wall time of a request grows with the other work on the cores; this does not)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _drain(stream: asyncio.StreamReader) -> None:
    """Read the proxy's log as it comes, so that its pipe never fills."""
    while await stream.readline():
        pass


async def _post(client: aiohttp.ClientSession, url: str, body: bytes) -> float:
    headers = {
        "x-api-key": "sk-bench",
        "anthropic-version": "2023-06-01",
        "Content-Type": "application/json",
    }
    start = time.perf_counter()
    async with client.post(url + "/v1/messages", data=body, headers=headers) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"status {response.status}")
    return time.perf_counter() - start


async def _pair(
    client: aiohttp.ClientSession, direct: str, proxy: str, body: bytes, k: int
) -> tuple[float, float]:
    """(direct, proxied) times of one body, in the order ``k`` says."""
    order = (direct, proxy) if k % 2 else (proxy, direct)
    took = {url: await _post(client, url, body) for url in order}
    return took[direct], took[proxy]


async def _trio(
    client: aiohttp.ClientSession, direct: str, relay: str, proxy: str, body: bytes, k: int
) -> tuple[float, float, float]:
    """(direct, relayed, proxied) times of one body, in an order that turns with ``k``."""
    urls = (direct, relay, proxy)
    order = urls[k % 3 :] + urls[: k % 3]
    took = {url: await _post(client, url, body) for url in order}
    return took[direct], took[relay], took[proxy]


def _ms(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "max_ms": round(max(ms), 2),
    }


def _first(direct: float, proxied: float) -> dict[str, float]:
    return {
        "direct_ms": round(direct * 1000, 1),
        "proxied_ms": round(proxied * 1000, 1),
        "added_ms": round((proxied - direct) * 1000, 1),
    }


SETTLED_CPU_S = 0.005
"""A proxy that used less CPU than this over ``SETTLED_EVERY_S`` has settled."""
SETTLED_EVERY_S = 0.25


async def _settled(proxy: _Proxy, limit_s: float = 60.0) -> None:
    """Wait until the proxy's CPU is idle (what it does at start is done)."""
    start = time.monotonic()
    used = proxy.cpu_s
    while time.monotonic() - start < limit_s:
        await asyncio.sleep(SETTLED_EVERY_S)
        now = proxy.cpu_s
        if now - used < SETTLED_CPU_S:
            return
        used = now


async def _warm(client: aiohttp.ClientSession, proxy: str, t: Transcript) -> None:
    """Another, short conversation through the proxy first (a valid one, so that it is
    carried): modules, the tokenizer and the store are loaded before anything is timed, as
    in a proxy that has been running."""
    messages = [{"role": "user", "content": "(warm-up) read the files"}, *_turn(0, t.root)]
    await _post(client, proxy, _body(messages))
    await _post(client, proxy, _body([*messages, *_turn(1, t.root)]))


async def measure(
    t: Transcript, times: int, turns: int = TURNS, context_limit: int = CONTEXT_LIMIT
) -> dict[str, Any]:
    """Latency at one scale: a new conversation's first request, then ``turns`` paired turns;
    at 10×, the next request after a restart of the proxy as well. With a ``context_limit``
    the history stays above, every turn is compressed as well."""
    entries = repeated(t.entries, times)
    messages = _messages(entries)
    direct: list[float] = []
    relayed: list[float] = []
    proxied: list[float] = []
    report: dict[str, Any] = {
        "times": times,
        "entries": len(entries),
        "turns": turns,
        "context_limit": context_limit,
    }
    with tempfile.TemporaryDirectory(prefix="hdcontext-bench-proxy-") as scratch:
        storage = Path(scratch) / "storage"
        async with _Upstream() as upstream, aiohttp.ClientSession() as client:
            async with (
                _Proxy(upstream.url, storage, context_limit) as proxy,
                _Relay(upstream.url, storage) as relay,
            ):
                await _warm(client, proxy.url, t)
                await _warm(client, relay.url, t)
                report["first_request"] = _first(
                    *await _pair(client, upstream.url, proxy.url, _body(messages), 1)
                )
                cpu = relay_cpu = 0.0
                for k in range(WARMUP + turns):
                    messages = [*messages, *_turn(k, t.root)]
                    body = _body(messages)
                    if k == WARMUP:
                        cpu = proxy.cpu_s
                    if k == WARMUP:
                        relay_cpu = relay.cpu_s
                    took = await _trio(client, upstream.url, relay.url, proxy.url, body, k)
                    if k >= WARMUP:
                        direct.append(took[0])
                        relayed.append(took[1])
                        proxied.append(took[2])
                report["proxy_cpu_ms_per_request"] = round((proxy.cpu_s - cpu) * 1000 / turns, 1)
                report["relay_cpu_ms_per_request"] = round(
                    (relay.cpu_s - relay_cpu) * 1000 / turns, 1
                )
                report["rss_after_turns_bytes"] = proxy.rss
            if times > 1 and context_limit == CONTEXT_LIMIT:
                async with _Proxy(upstream.url, storage) as proxy:  # no warm-up: at once
                    messages = [*messages, *_turn(WARMUP + turns, t.root)]
                    report["after_restart"] = _first(
                        *await _pair(client, upstream.url, proxy.url, _body(messages), 1)
                    )
                async with _Proxy(upstream.url, storage) as proxy:
                    listened = time.monotonic()
                    await _warm(client, proxy.url, t)
                    await _settled(proxy)
                    report["restart_settled_s"] = round(time.monotonic() - listened, 2)
                    messages = [*messages, *_turn(WARMUP + turns + 1, t.root)]
                    report["after_restart_settled"] = _first(
                        *await _pair(client, upstream.url, proxy.url, _body(messages), 1)
                    )
    overhead = [p - d for p, d in zip(proxied, direct, strict=True)]
    report.update(
        body_mb=round(len(body) / 1e6, 2),
        direct=_ms(direct),
        relayed=_ms(relayed),
        proxied=_ms(proxied),
        overhead=_ms(overhead),
        relay_overhead=_ms([r - d for r, d in zip(relayed, direct, strict=True)]),
    )
    return report


async def memory(
    t: Transcript, requests: int = MEMORY_REQUESTS, conversations: int = MORE_CONVERSATIONS
) -> dict[str, Any]:
    """The proxy's RSS: warm, along ``requests`` requests of one growing 1× conversation, and
    after ``conversations`` more (two requests each)."""
    report: dict[str, Any] = {"requests": requests, "conversations": conversations}
    marks: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="hdcontext-bench-proxy-") as scratch:
        async with (
            _Upstream() as upstream,
            aiohttp.ClientSession() as client,
            _Proxy(upstream.url, Path(scratch) / "storage") as proxy,
        ):
            await _warm(client, proxy.url, t)
            report["rss_warm_bytes"] = proxy.rss
            messages = _messages(list(t.entries), "grown")
            for k in range(requests):
                messages = [*messages, *_turn(k, t.root)]
                await _post(client, proxy.url, _body(messages))
                if k + 1 in MEMORY_MARKS:
                    marks[str(k + 1)] = proxy.rss
            report["body_mb_at_end"] = round(len(_body(messages)) / 1e6, 2)
            report["rss_after_requests_bytes"] = marks
            for n in range(conversations):
                other = _messages(repeated(t.entries, 1, f"~c{n}"), f"conversation {n}")
                await _post(client, proxy.url, _body(other))
                await _post(client, proxy.url, _body([*other, *_turn(0, t.root)]))
            report["rss_after_conversations_bytes"] = proxy.rss
    return report


def daemon_memory(t: Transcript) -> dict[str, Any]:
    """RSS a daemon holds per session over the session's JSON, each session appended whole
    and compacted once: ten at 1×, one at 10×."""
    out: dict[str, Any] = {}
    for times, sessions in ((1, DAEMON_SESSIONS_1X), (10, 1)):
        with tempfile.TemporaryDirectory(prefix="hdcontext-bench-daemon-") as scratch:
            base = Path(scratch)
            (base / "workspace").mkdir()
            with (base / "stderr.log").open("wb") as stderr:
                client = Client.start(serve_command(), base, stderr)
                try:
                    client.request(
                        "initialize",
                        {
                            "processId": None,
                            "rootUri": (base / "workspace").as_uri(),
                            "capabilities": {},
                            "initializationOptions": {"storageDir": str(base / "storage")},
                        },
                    )
                    client.notify("initialized", {})
                    _, idle = idle_rss(client)
                    json_bytes = 0
                    for n in range(sessions):
                        entries = dump_entries(repeated(t.entries, times, f"~d{n}"))
                        json_bytes += len(json.dumps(entries, ensure_ascii=False).encode())
                        session = f"bench-{n}"
                        client.request(
                            "history/open", {"sessionId": session, "contextLimit": CONTEXT_LIMIT}
                        )
                        client.request("history/append", {"sessionId": session, "entries": entries})
                        client.request("history/compact", {"sessionId": session})
                    at_once = rss_bytes(client.pid)
                    time.sleep(PACK_AFTER_S + 0.5)  # the daemon idle, its packing done
                    loaded = rss_bytes(client.pid)
                finally:
                    client.close()
        out[f"{times}x"] = {
            "sessions": sessions,
            "json_bytes": json_bytes,
            "rss_idle_bytes": idle,
            "rss_loaded_bytes": loaded,
            "rss_over_json": round((loaded - idle) / json_bytes, 2),
            "rss_over_json_at_once": round((at_once - idle) / json_bytes, 2),
        }
    return out


def run(t: Transcript, turns: int = TURNS, requests: int = MEMORY_REQUESTS) -> dict[str, Any]:
    async def proxied() -> tuple[dict[str, Any], ...]:
        return (
            await measure(t, 1, turns),
            await measure(t, 10, turns),
            await measure(t, 1, NEAR_TURNS, NEAR_LIMIT[1]),
            await measure(t, 10, NEAR_TURNS, NEAR_LIMIT[10]),
            await memory(t, requests),
        )

    one, ten, near_one, near_ten, held = asyncio.run(proxied())
    daemon = daemon_memory(t)
    return {
        "session": t.name,
        "one": one,
        "ten": ten,
        "near": {"one": near_one, "ten": near_ten},
        "memory": held,
        "daemon": daemon,
        "targets": _targets(one, ten, held, daemon),
    }


def _targets(
    one: dict[str, Any], ten: dict[str, Any], held: dict[str, Any], daemon: dict[str, Any]
) -> dict[str, Any]:
    """The issue's targets (this machine, ratios from this one run), each with its value."""

    def ratio(m: dict[str, Any]) -> float:
        p50 = m["overhead"]["p50_ms"]
        return round(m["overhead"]["p99_ms"] / p50, 2) if p50 > 0 else float("inf")

    rss_mib = held["rss_after_conversations_bytes"] / 2**20
    return {
        "added_p50_ms_1x": {"value": one["overhead"]["p50_ms"], "target": 5.0},
        "added_p50_ms_10x": {"value": ten["overhead"]["p50_ms"], "target": 15.0},
        "p99_over_p50_1x": {"value": ratio(one), "target": 3.0},
        "p99_over_p50_10x": {"value": ratio(ten), "target": 3.0},
        "new_conversation_10x_s": {
            "value": round(ten["first_request"]["proxied_ms"] / 1000, 3),
            "target": 0.3,
        },
        # The "a new conversation (resume, restart)": a restarted proxy's, settled.
        "after_restart_settled_10x_s": {
            "value": round(ten["after_restart_settled"]["proxied_ms"] / 1000, 3),
            "target": 0.3,
        },
        "proxy_rss_mib": {"value": round(rss_mib, 1), "target": 120.0},
        "daemon_rss_over_json_1x": {"value": daemon["1x"]["rss_over_json"], "target": 2.0},
        "daemon_rss_over_json_10x": {"value": daemon["10x"]["rss_over_json"], "target": 2.0},
    }


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB"


def table(report: dict[str, Any]) -> str:
    one, ten, held, daemon = report["one"], report["ten"], report["memory"], report["daemon"]

    def head(m: dict[str, Any]) -> str:
        return f"{m['times']}× ({m['entries']:,} entries, {m['body_mb']} MB a request)"

    def cell(m: dict[str, Any], key: str) -> str:
        return f"{m[key]['p50_ms']} / {m[key]['p99_ms']} ms"

    def first(m: dict[str, Any], key: str) -> str:
        f = m.get(key)
        if f is None:
            return "–"
        return f"{f['direct_ms']} → {f['proxied_ms']} ms (+{f['added_ms']})"

    marks = ", ".join(f"{k}: {_mib(v)}" for k, v in held["rss_after_requests_bytes"].items())
    rows = [
        f"| per request, p50 / p99 | {head(one)} | {head(ten)} |",
        "|---|---|---|",
        f"| straight to the upstream | {cell(one, 'direct')} | {cell(ten, 'direct')} |",
        f"| through the proxy | {cell(one, 'proxied')} | {cell(ten, 'proxied')} |",
        f"| **added** (same turn, paired) | {cell(one, 'overhead')} | {cell(ten, 'overhead')} |",
        "| added by a bare aiohttp relay (bench/relay.py: the floor) | "
        f"{cell(one, 'relay_overhead')} | {cell(ten, 'relay_overhead')} |",
        "| the proxy's CPU time per request (whatever the load) | "
        f"{one['proxy_cpu_ms_per_request']} ms | {ten['proxy_cpu_ms_per_request']} ms |",
        "| the bare relay's CPU time per request | "
        f"{one['relay_cpu_ms_per_request']} ms | {ten['relay_cpu_ms_per_request']} ms |",
        "| a new conversation's first request (direct → proxied) | "
        f"{first(one, 'first_request')} | {first(ten, 'first_request')} |",
        "| the next request after a restart of the proxy, made as soon as it listens | "
        f"{first(one, 'after_restart')} | {first(ten, 'after_restart')} |",
        "| the same, made once the proxy has settled (the last run's conversations taken in: "
        f"idle {ten.get('restart_settled_s', '–')} s after it listened) | "
        f"{first(one, 'after_restart_settled')} | {first(ten, 'after_restart_settled')} |",
    ]
    near = report.get("near")
    if near is not None:
        rows.append(
            "| **added** when the history stays over the compression threshold (limit "
            f"{near['one']['context_limit']:,} / {near['ten']['context_limit']:,} tokens) | "
            f"{cell(near['one'], 'overhead')} | {cell(near['ten'], 'overhead')} |"
        )
    memory_rows = [
        f"proxy RSS: warm {_mib(held['rss_warm_bytes'])}; after requests of one growing "
        f"conversation ({held['body_mb_at_end']} MB at the end) {marks}; after "
        f"{held['conversations']} more conversations "
        f"{_mib(held['rss_after_conversations_bytes'])}",
        "daemon RSS per session over its JSON, idle (right after the last answer): "
        + "; ".join(
            f"{k} {v['rss_over_json']}× ({v['rss_over_json_at_once']}×; {v['sessions']} "
            f"session(s) of {v['json_bytes'] / v['sessions'] / 1e6:.2f} MB JSON)"
            for k, v in daemon.items()
        ),
    ]
    targets = ", ".join(
        f"{name} {value['value']} (≤ {value['target']})"
        for name, value in report["targets"].items()
    )
    return (
        f"session {report['session']}, {one['turns']} turns each\n"
        + "\n".join(rows)
        + "\n"
        + "\n".join(memory_rows)
        + f"\ntargets: {targets}"
    )


def largest(found: list[Transcript]) -> Transcript:
    return max(found, key=lambda t: (len(t.entries), len(json.dumps(dump_entries(t.entries)))))


def _load() -> str:
    """The load average: the machine's other work, which the wall times include."""
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.proxy", description=__doc__)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--requests", type=int, default=MEMORY_REQUESTS)
    args = parser.parse_args(argv)
    found = transcripts.find().transcripts
    if not found:
        print(f"bench.proxy: no transcripts under {transcripts.TRANSCRIPTS}", file=sys.stderr)
        return 2
    load = _load()
    print(f"proxy overhead · {os.cpu_count()} CPUs · load average {load}")
    report = run(largest(found), args.turns, args.requests)
    report["load_average"] = {"before": load, "after": _load()}
    print(table(report))
    print(f"load average after: {report['load_average']['after']}")
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "proxy.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
