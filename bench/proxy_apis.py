"""``python -m bench.proxy_apis``: the proxy's added time per request through each API it
carries, the same conversation in each, side by side in one run.

Issue 42 asks that a Responses API request cost the proxy no more than a chat completions
request of the same size. So the largest real session (at 1× and at 10×, as ``bench.proxy``
takes it) is sent as each API's agent sends it (Anthropic Messages, OpenAI chat completions,
OpenAI Responses items, written by the project's own exporters), one read or edit added per
turn, straight to a fake upstream and through one ``hdcontext proxy`` process, in an order that
turns; each API's overhead is its proxied time minus its direct time of the same turn (p50,
p99), and its bytes per request. Prints a table; writes ``bench/results/proxy_apis.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web

from hdcontext.core.content import IContent, TextBlock, ToolCallBlock, ToolResponseBlock
from hdcontext.formats.conversation import Conversation
from hdcontext.formats.exporters import anthropic as anthropic_exporter
from hdcontext.formats.exporters import openai as chat_exporter
from hdcontext.formats.exporters import openai_responses as responses_exporter

from . import transcripts
from .latency import percentile
from .proxy import ANSWER, SYSTEM, TOOLS, _Proxy, largest
from .transcripts import Transcript, repeated

TURNS = 30
WARMUP = 3
RESULTS = Path(__file__).resolve().parent / "results"
HEADERS = {
    "anthropic": {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"},
    "openai": {"Authorization": "Bearer sk-bench"},
    "responses": {"Authorization": "Bearer sk-bench"},
}
PATHS = {
    "anthropic": "/v1/messages",
    "openai": "/v1/chat/completions",
    "responses": "/v1/responses",
}
APIS = tuple(PATHS)


def _anthropic(entries: list[IContent]) -> bytes:
    exported = anthropic_exporter.export(Conversation(tuple(entries))).payload
    assert isinstance(exported, dict)
    body = {
        "model": "claude-sonnet-4-5",
        "messages": exported["messages"],
        "system": SYSTEM,
        "tools": TOOLS,
        "max_tokens": 32000,
        "stream": True,
    }
    return _compact(body)


def _chat(entries: list[IContent]) -> bytes:
    messages = chat_exporter.export(Conversation(tuple(entries))).payload
    assert isinstance(messages, list)
    tools = [{"type": "function", "function": {"name": t["name"], "parameters": {}}} for t in TOOLS]
    body = {
        "model": "gpt-4.1",
        "messages": [{"role": "system", "content": SYSTEM[0]["text"]}, *messages],
        "tools": tools,
        "stream": True,
    }
    return _compact(body)


def _responses(entries: list[IContent]) -> bytes:
    items = responses_exporter.export(Conversation(tuple(entries))).payload
    assert isinstance(items, list)
    tools = [{"type": "function", "name": t["name"], "parameters": {}} for t in TOOLS]
    body = {
        "model": "gpt-4.1",
        "instructions": SYSTEM[0]["text"],
        "input": items,
        "tools": tools,
        "store": False,
        "stream": True,
    }
    return _compact(body)


WRITERS: dict[str, Callable[[list[IContent]], bytes]] = {
    "anthropic": _anthropic,
    "openai": _chat,
    "responses": _responses,
}


def _compact(body: dict[str, Any]) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def _turn(k: int, root: str) -> list[IContent]:
    """One read or edit of a file and its result, as entries."""
    path = f"{root.rstrip('/')}/bench/file_{(k // 2) % 5}.py"
    call = f"call_bench_{k}"
    if k % 2 == 0:
        name, params = "Read", {"file_path": path}
        result = "\n".join(f"{i}\tline {i}: some code = {i} * 2" for i in range(1, 61))
    else:
        name = "Edit"
        params = {"file_path": path, "old_string": "line 1:", "new_string": "line one:"}
        result = f"The file {path} has been updated successfully."
    return [
        IContent(speaker="ai", blocks=(ToolCallBlock(id=call, name=name, parameters=params),)),
        IContent(
            speaker="tool",
            blocks=(ToolResponseBlock(call_id=call, tool_name=name, result=result),),
        ),
    ]


def _ending(entries: list[IContent]) -> list[IContent]:
    """The entries ending with a person's line, as every request of an agent's ends with
    something the model has to answer."""
    return [*entries, IContent(speaker="human", blocks=(TextBlock(text="go on"),))]


async def _answer(request: web.Request) -> web.StreamResponse:
    await request.read()
    response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await response.prepare(request)
    await response.write(ANSWER)
    await response.write_eof()
    return response


async def _post(client: aiohttp.ClientSession, url: str, api: str, body: bytes) -> float:
    headers = {**HEADERS[api], "Content-Type": "application/json"}
    start = time.perf_counter()
    async with client.post(url + PATHS[api], data=body, headers=headers) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"{api}: status {response.status}")
    return time.perf_counter() - start


def _ms(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {
        "p50_ms": round(statistics.median(ms), 2),
        "p99_ms": round(percentile(ms, 0.99), 2),
    }


async def measure(t: Transcript, times: int, turns: int = TURNS) -> dict[str, Any]:
    """Each API's overhead over ``turns`` turns of the session at ``times``×."""
    base = list(repeated(t.entries, times))
    app = web.Application(client_max_size=1 << 30)
    for path in PATHS.values():
        app.router.add_post(path, _answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    upstream = f"http://127.0.0.1:{runner.addresses[0][1]}"
    overhead: dict[str, list[float]] = {api: [] for api in APIS}
    sizes: dict[str, int] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="hdcontext-bench-apis-") as scratch:
            async with (
                _Proxy(upstream, Path(scratch) / "storage") as proxy,
                aiohttp.ClientSession() as client,
            ):
                entries = base
                for k in range(WARMUP + turns):
                    entries = [*entries, *_turn(k, t.root)]
                    request = _ending(entries)
                    order = APIS[k % 3 :] + APIS[: k % 3]
                    for api in order:
                        body = WRITERS[api](request)
                        sizes[api] = len(body)
                        direct = await _post(client, upstream, api, body)
                        proxied = await _post(client, proxy.url, api, body)
                        if k >= WARMUP:
                            overhead[api].append(proxied - direct)
    finally:
        await runner.cleanup()
    return {
        "times": times,
        "entries": len(base),
        "turns": turns,
        "apis": {
            api: {**_ms(overhead[api]), "body_mb": round(sizes[api] / 1e6, 2)} for api in APIS
        },
    }


def table(report: dict[str, Any]) -> str:
    lines = [
        "| scale | API | body | added p50 | added p99 |",
        "|---|---|---|---|---|",
    ]
    for scale in report["scales"]:
        for api, figures in scale["apis"].items():
            lines.append(
                f"| {scale['times']}× | {api} | {figures['body_mb']} MB | "
                f"{figures['p50_ms']} ms | {figures['p99_ms']} ms |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.proxy_apis", description=__doc__)
    parser.add_argument("--turns", type=int, default=TURNS)
    args = parser.parse_args(argv)
    found = transcripts.find().transcripts
    if not found:
        print("no transcripts in ../shared/data/transcripts", file=sys.stderr)
        return 1
    t = largest(found)
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    scales = [asyncio.run(measure(t, times, args.turns)) for times in (1, 10)]
    report = {
        "session": t.name,
        "scales": scales,
        "load": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    print(table(report))
    print(f"(load average {report['load'][0]} before, {report['load'][1]} after)")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "proxy_apis.json"
    path.write_text(json.dumps(report, indent=1))
    print(f"(wrote {path} in {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
