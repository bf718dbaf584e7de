"""``python -m bench.litellm``: what hdcontext adds to a model call through LiteLLM's proxy.

Two LiteLLM proxies run side by side as a gateway runs them (LiteLLM 1.108.7 from the
environment ``make litellm`` makes, ``tests/gateway/litellm_env.py``; no database of its own,
one worker each), in front of the same fake Anthropic upstream in this process
(``bench/proxy.py``'s: every request read whole, then answered with the same short event
stream): one as it comes, one with ``callbacks: hdcontext.litellm.handler``. The conversation
is the real session whose request is nearest 0.4 MB at 1× (``--size-mb``; ``--session`` names
another), sent as ``bench/proxy.py`` sends it, as Claude Code does: through ``/v1/messages``,
streamed, the whole conversation every time, the client's breakpoint on its last message; a context
limit high enough that compression never runs, so that what is timed is the path every turn
takes). Each turn appends one tool call and its result, then goes straight to the upstream,
through LiteLLM alone and through LiteLLM with hdcontext, in an order that turns (a slow spell
of the machine falls on all).

What it reports: **the added time of hdcontext** per turn, LiteLLM with hdcontext minus LiteLLM
alone on that same turn (p50, p99; the target is a p50 of at most 10 ms), each beside the
direct call; the CPU time per request of each LiteLLM process (the machine's other work does
not inflate it as it does wall times); and the first request of the conversation, new to
hdcontext (taken in meanwhile: it goes as it came). Prints the figures and writes
``bench/results/litellm.json`` (git-ignored).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

from tests.gateway import litellm_env

from . import transcripts
from .latency import CONTEXT_LIMIT
from .proxy import (
    WARMUP,
    _body,
    _first,
    _messages,
    _ms,
    _post,
    _turn,
    _Upstream,
    cpu_seconds,
)
from .transcripts import Transcript, repeated

TURNS = 60
SIZE_MB = 0.4
"""The issue's 1×: a conversation of 0.4 MB (the session whose request is nearest it)."""
TARGET_P50_MS = 10.0
MODEL = "claude-sonnet-4-5"
MASTER_KEY = "sk-bench-master"
START_TIMEOUT_S = 120.0


def _config(upstream: str, callback: bool) -> str:
    callbacks = "  callbacks: hdcontext.litellm.handler\n" if callback else ""
    return (
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        f"    litellm_params: {{model: anthropic/{MODEL}, api_base: '{upstream}', "
        "api_key: sk-upstream}\n"
        "litellm_settings:\n"
        f"{callbacks}"
        "  num_retries: 0\n"
        "general_settings:\n"
        f"  master_key: {MASTER_KEY}\n"
    )


class _LiteLLM:
    """LiteLLM's proxy in its own process (``callback``: with hdcontext's)."""

    def __init__(self, command: Path, folder: Path, upstream: str, callback: bool) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.yaml").write_text(_config(upstream, callback))
        repo = litellm_env.REPO
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(folder),
            "XDG_DATA_HOME": str(folder / "xdg-data"),
            "LITELLM_MASTER_KEY": MASTER_KEY,
            "LITELLM_LOCAL_MODEL_COST_MAP": "True",
            "LITELLM_LOG": "ERROR",
            "PYTHONPATH": f"{repo / 'server'}{os.pathsep}{repo}",
            "HDCONTEXT_STORAGE": str(folder / "storage"),
            "NO_PROXY": "127.0.0.1,localhost",
        }
        self.command = command
        self.folder = folder
        with _socket() as port:
            self.port = port
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = (self.folder / "litellm.log").open("wb")
        self.process = subprocess.Popen(
            [str(self.command), "--config", "config.yaml", "--port", str(self.port)],
            cwd=self.folder,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )

    async def ready(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_S
        async with aiohttp.ClientSession() as client:
            while time.monotonic() < deadline:
                assert self.process is not None
                if self.process.poll() is not None:
                    raise RuntimeError(f"LiteLLM exited; see {self.folder / 'litellm.log'}")
                try:
                    async with client.get(f"{self.url}/health/liveliness") as answer:
                        if answer.status == 200:
                            return
                except (aiohttp.ClientError, OSError):
                    pass
                await asyncio.sleep(0.25)
        raise RuntimeError(f"LiteLLM did not start; see {self.folder / 'litellm.log'}")

    @property
    def cpu_s(self) -> float:
        assert self.process is not None
        return cpu_seconds(self.process.pid)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class _socket:
    """A free loopback port (the socket closed once the port is read)."""

    def __enter__(self) -> int:
        import socket

        self.s = socket.socket()
        self.s.bind(("127.0.0.1", 0))
        return int(self.s.getsockname()[1])

    def __exit__(self, *exc: object) -> None:
        self.s.close()


async def _send(client: aiohttp.ClientSession, url: str, body: bytes) -> float:
    """One request, its answer read whole; the time it took. The upstream is straight
    (``x-api-key``), LiteLLM takes its own key as a bearer."""
    if url.startswith("upstream:"):
        return await _post(client, url.removeprefix("upstream:"), body)
    headers = {"Authorization": f"Bearer {MASTER_KEY}", "Content-Type": "application/json"}
    start = time.perf_counter()
    async with client.post(url + "/v1/messages", data=body, headers=headers) as response:
        await response.read()
        if response.status != 200:
            raise RuntimeError(f"{url}: status {response.status}")
    return time.perf_counter() - start


async def _trio(
    client: aiohttp.ClientSession, urls: tuple[str, str, str], body: bytes, k: int
) -> tuple[float, float, float]:
    """(direct, LiteLLM, LiteLLM with hdcontext) of one body, in an order that turns."""
    order = urls[k % 3 :] + urls[: k % 3]
    took = {url: await _send(client, url, body) for url in order}
    return took[urls[0]], took[urls[1]], took[urls[2]]


def chosen(found: list[Transcript], size_mb: float, name: str | None) -> Transcript:
    """The session named, else the one whose first request is nearest ``size_mb``."""
    if name is not None:
        named = [t for t in found if t.name == name]
        if not named:
            raise SystemExit(f"bench.litellm: no session {name!r}")
        return named[0]
    return min(found, key=lambda t: abs(len(_body(_messages(t.entries))) - size_mb * 1e6))


async def measure(t: Transcript, turns: int = TURNS, database: str | None = None) -> dict[str, Any]:
    command, why = litellm_env.find()
    if command is None:
        raise RuntimeError(why)
    messages = _messages(repeated(t.entries, 1))
    report: dict[str, Any] = {
        "session": t.name,
        "turns": turns,
        "litellm_version": litellm_env.VERSION,
        "body_mb_at_start": round(len(_body(messages)) / 1e6, 2),
        "storage": "PostgreSQL (HDCONTEXT_DATABASE_URL)" if database else "a folder (SQLite)",
    }
    plain_times: list[float] = []
    hd_times: list[float] = []
    direct_times: list[float] = []
    with tempfile.TemporaryDirectory(prefix="hdcontext-bench-litellm-") as scratch:
        async with _Upstream() as upstream, aiohttp.ClientSession() as client:
            plain = _LiteLLM(command, Path(scratch) / "plain", upstream.url, callback=False)
            hd = _LiteLLM(command, Path(scratch) / "hdcontext", upstream.url, callback=True)
            hd.env["HDCONTEXT_CONTEXT_LIMIT"] = str(CONTEXT_LIMIT)
            if database is not None:
                hd.env["HDCONTEXT_DATABASE_URL"] = database
            try:
                plain.start()
                hd.start()
                await asyncio.gather(plain.ready(), hd.ready())
                # Warm both: LiteLLM's first call loads its modules, hdcontext starts.
                warm = [{"role": "user", "content": "(warm-up) read the files"}, *_turn(0, t.root)]
                for url in (plain.url, hd.url):
                    await _send(client, url, _body(warm))
                    await _send(client, url, _body([*warm, *_turn(1, t.root)]))
                first = _body(messages)
                direct = await _send(client, "upstream:" + upstream.url, first)
                report["first_request"] = _first(direct, await _send(client, hd.url, first))
                await _send(client, plain.url, first)
                urls = ("upstream:" + upstream.url, plain.url, hd.url)
                plain_cpu = hd_cpu = 0.0
                for k in range(WARMUP + turns):
                    messages = [*messages, *_turn(k, t.root)]
                    body = _body(messages)
                    if k == WARMUP:
                        plain_cpu, hd_cpu = plain.cpu_s, hd.cpu_s
                    took = await _trio(client, urls, body, k)
                    if k >= WARMUP:
                        direct_times.append(took[0])
                        plain_times.append(took[1])
                        hd_times.append(took[2])
                report["litellm_cpu_ms_per_request"] = round(
                    (plain.cpu_s - plain_cpu) * 1000 / turns, 1
                )
                report["hdcontext_cpu_ms_per_request"] = round(
                    (hd.cpu_s - hd_cpu) * 1000 / turns, 1
                )
            finally:
                plain.stop()
                hd.stop()
    added = [h - p for h, p in zip(hd_times, plain_times, strict=True)]
    report.update(
        body_mb=round(len(body) / 1e6, 2),
        direct=_ms(direct_times),
        litellm=_ms(plain_times),
        litellm_with_hdcontext=_ms(hd_times),
        added=_ms(added),
    )
    report["target"] = {
        "added_p50_ms": report["added"]["p50_ms"],
        "at_most_ms": TARGET_P50_MS,
        "met": report["added"]["p50_ms"] <= TARGET_P50_MS,
    }
    return report


def table(report: dict[str, Any]) -> str:
    def row(name: str, m: dict[str, float]) -> str:
        return f"  {name:<28} p50 {m['p50_ms']:>7.2f} ms   p99 {m['p99_ms']:>7.2f} ms"

    first = report["first_request"]
    target = report["target"]
    return "\n".join(
        [
            f"session {report['session']} at 1× ({report['body_mb_at_start']} MB a request at "
            f"the start, {report['body_mb']} at the end), {report['turns']} turns, LiteLLM "
            f"{report['litellm_version']}; hdcontext's sessions in {report['storage']}",
            row("direct to the upstream", report["direct"]),
            row("through LiteLLM", report["litellm"]),
            row("through LiteLLM + hdcontext", report["litellm_with_hdcontext"]),
            row("added by hdcontext", report["added"]),
            f"  CPU a request: LiteLLM {report['litellm_cpu_ms_per_request']} ms, "
            f"LiteLLM + hdcontext {report['hdcontext_cpu_ms_per_request']} ms",
            f"  first request of the conversation (new to hdcontext): "
            f"{first['proxied_ms']} ms against {first['direct_ms']} ms direct",
            f"target: added p50 {target['added_p50_ms']} ms (≤ {target['at_most_ms']:g} ms): "
            f"{'met' if target['met'] else 'NOT met'}",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.litellm", description=__doc__)
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--size-mb", type=float, default=SIZE_MB)
    parser.add_argument("--session", help="a session by its name (default: by --size-mb)")
    parser.add_argument(
        "--postgres",
        action="store_true",
        help="keep hdcontext's sessions in a throwaway PostgreSQL cluster (fsync on), as a "
        "team's replicas do, instead of a folder",
    )
    args = parser.parse_args(argv)
    found = transcripts.find().transcripts
    if not found:
        print(f"bench.litellm: no transcripts under {transcripts.TRANSCRIPTS}", file=sys.stderr)
        return 2
    _, why = litellm_env.find()
    if why:
        print(f"bench.litellm: {why}", file=sys.stderr)
        return 2
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"LiteLLM + hdcontext · {os.cpu_count()} CPUs · load average {load}")
    picked = chosen(found, args.size_mb, args.session)
    if args.postgres:
        from tests import postgres_cluster

        if (reason := postgres_cluster.why_not()) is not None:
            print(f"bench.litellm: {reason}", file=sys.stderr)
            return 2
        cluster = postgres_cluster.start(fsync=True)
        try:
            report = asyncio.run(measure(picked, args.turns, cluster.new_database()))
        finally:
            cluster.stop()
    else:
        report = asyncio.run(measure(picked, args.turns))
    report["load_average"] = {
        "before": load,
        "after": ", ".join(f"{x:.2f}" for x in os.getloadavg()),
    }
    print(table(report))
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(parents=True, exist_ok=True)
    (results / "litellm.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
