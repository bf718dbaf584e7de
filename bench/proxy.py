"""``python -m bench.proxy``: what the proxy adds to a model call, measured side by side.

The proxy runs as a user starts it (``hdcontext proxy`` in its own process, its own storage);
a fake Anthropic upstream in this process answers every request with the same short event
stream, after reading the whole body, as a provider would. The conversation is the largest
real session, at 1× and at 10× its length (the session repeated with fresh call ids), sent as
Claude Code sends it: the whole conversation every time, streamed, with a system prompt and
tools. Each turn appends one tool call and its result, then sends the request twice, once
straight to the fake upstream and once through the proxy, in alternating order, so a slow
spell of the machine falls on both. The overhead of a turn is the proxied time minus the
direct time of that same turn. The first request of each session (the proxy takes in the
whole conversation, which only a new or resumed chat costs) is timed on its own. The context
limit is set high enough that compression never runs (as in the latency part of ``make
bench``): what is timed is the path every turn takes.
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

from hdcontext.formats.conversation import Conversation
from hdcontext.formats.exporters import anthropic as exporter

from . import transcripts
from .latency import CONTEXT_LIMIT, percentile
from .transcripts import Transcript, repeated

TURNS = 60
WARMUP = 3
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


def _body(messages: list[dict[str, Any]]) -> bytes:
    return json.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 32000,
            "stream": True,
            "system": SYSTEM,
            "tools": TOOLS,
            "messages": messages,
        }
    ).encode()


async def _start_proxy(upstream: str, scratch: Path) -> tuple[asyncio.subprocess.Process, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "hdcontext",
        "proxy",
        "--port",
        "0",
        "--anthropic-upstream",
        upstream,
        "--storage-dir",
        str(scratch / "storage"),
        "--context-limit",
        str(CONTEXT_LIMIT),
        "--log-level",
        "WARNING",
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stderr is not None
    line = (await asyncio.wait_for(process.stderr.readline(), 60)).decode()
    found = re.search(r"listening on (http://\S+)", line)
    if found is None:
        process.kill()
        raise RuntimeError(f"the proxy did not start: {line.strip()}")
    return process, found.group(1)


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


def _ms(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
        "max_ms": round(max(ms), 2),
    }


async def measure(t: Transcript, times: int, turns: int = TURNS) -> dict[str, Any]:
    entries = repeated(t.entries, times)
    exported = exporter.export(Conversation(tuple(entries))).payload
    assert isinstance(exported, dict)
    messages: list[dict[str, Any]] = exported["messages"]
    if messages and messages[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": "go on"})
    app = web.Application(client_max_size=1 << 30)
    app.router.add_post("/v1/messages", _answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    upstream = f"http://127.0.0.1:{runner.addresses[0][1]}"
    direct: list[float] = []
    proxied: list[float] = []
    with tempfile.TemporaryDirectory(prefix="hdcontext-bench-proxy-") as scratch:
        process, proxy = await _start_proxy(upstream, Path(scratch))
        try:
            async with aiohttp.ClientSession() as client:
                first_body = _body(messages)
                first_direct = await _post(client, upstream, first_body)
                first_proxied = await _post(client, proxy, first_body)
                for k in range(WARMUP + turns):
                    messages = [*messages, *_turn(k, t.root)]
                    body = _body(messages)
                    order = (upstream, proxy) if k % 2 else (proxy, upstream)
                    took = {url: await _post(client, url, body) for url in order}
                    if k >= WARMUP:
                        direct.append(took[upstream])
                        proxied.append(took[proxy])
        finally:
            process.terminate()
            await process.wait()
            await runner.cleanup()
    overhead = [p - d for p, d in zip(proxied, direct, strict=True)]
    return {
        "times": times,
        "entries": len(entries),
        "body_mb": round(len(body) / 1e6, 2),
        "turns": turns,
        "direct": _ms(direct),
        "proxied": _ms(proxied),
        "overhead": _ms(overhead),
        "first_request_ms": {
            "direct": round(first_direct * 1000, 1),
            "proxied": round(first_proxied * 1000, 1),
        },
    }


def run(t: Transcript, turns: int = TURNS) -> dict[str, Any]:
    async def both() -> list[dict[str, Any]]:
        return [await measure(t, 1, turns), await measure(t, 10, turns)]

    one, ten = asyncio.run(both())
    return {"session": t.name, "one": one, "ten": ten}


def table(report: dict[str, Any]) -> str:
    one, ten = report["one"], report["ten"]

    def head(m: dict[str, Any]) -> str:
        return f"{m['times']}× ({m['entries']:,} entries, {m['body_mb']} MB a request)"

    def cell(m: dict[str, Any], key: str) -> str:
        return f"{m[key]['p50_ms']} / {m[key]['p99_ms']} ms"

    rows = [
        f"| per request, p50 / p99 | {head(one)} | {head(ten)} |",
        "|---|---|---|",
        f"| straight to the upstream | {cell(one, 'direct')} | {cell(ten, 'direct')} |",
        f"| through the proxy | {cell(one, 'proxied')} | {cell(ten, 'proxied')} |",
        f"| **overhead** (same turn, paired) | {cell(one, 'overhead')} | {cell(ten, 'overhead')} |",
        "| first request of a session (direct → proxied) | "
        f"{one['first_request_ms']['direct']} → {one['first_request_ms']['proxied']} ms | "
        f"{ten['first_request_ms']['direct']} → {ten['first_request_ms']['proxied']} ms |",
    ]
    return f"session {report['session']}, {one['turns']} turns each\n" + "\n".join(rows)


def largest(found: list[Transcript]) -> Transcript:
    from hdcontext.core.content import dump_entries

    return max(found, key=lambda t: (len(t.entries), len(json.dumps(dump_entries(t.entries)))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.proxy", description=__doc__)
    parser.add_argument("--turns", type=int, default=TURNS)
    args = parser.parse_args(argv)
    found = transcripts.find().transcripts
    if not found:
        print(f"bench.proxy: no transcripts under {transcripts.TRANSCRIPTS}", file=sys.stderr)
        return 2
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"proxy overhead · {os.cpu_count()} CPUs · load average {load}")
    report = run(largest(found), args.turns)
    print(table(report))
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "proxy.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
