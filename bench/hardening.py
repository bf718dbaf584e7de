"""``python -m bench.hardening``: the resource figures of issue 12, measured, not assumed.

Two worst cases a client can hand the daemon:

- counting a 10 MB text of a single letter, tiktoken's worst case (its byte-pair merge is
  superlinear in the length of one pre-tokenizer piece, and a run of letters is one piece);
  measured in a fresh interpreter, as the peak RSS above an interpreter that has already
  loaded the tokenizer, and the seconds it takes;
- one ``history/append`` of 50 MB of prose in 500 entries, as the daemon's peak RSS (VmHWM)
  over the whole request, with its seconds.

Prints one JSON object; ``--only count`` or ``--only append`` runs one of them.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from .daemon import running
from .rpc import Client

MIB = 1024 * 1024
COUNT_CHARS = 10_000_000
APPEND_BYTES = 50_000_000
APPEND_ENTRIES = 500

_COUNT_SCRIPT = """
import json, time
from hdcontext.core.tokens import count_text
count_text("warm up the tokenizer")
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
before = hwm()
text = "a" * {chars}
start = time.perf_counter()
tokens = count_text(text)
seconds = time.perf_counter() - start
print(json.dumps({{"before": before, "after": hwm(), "seconds": seconds, "tokens": tokens}}))
"""


def count_figures() -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _COUNT_SCRIPT.format(chars=COUNT_CHARS)],
        capture_output=True,
        text=True,
        check=True,
    )
    raw = json.loads(out.stdout)
    return {
        "chars": COUNT_CHARS,
        "tokens": raw["tokens"],
        "seconds": round(raw["seconds"], 3),
        "peak_rss_mib": round(raw["after"] / MIB, 1),
        "peak_rss_added_mib": round((raw["after"] - raw["before"]) / MIB, 1),
    }


def _prose(rng: random.Random, size: int) -> str:
    words = ["the", "daemon", "keeps", "history", "dense", "while", "agent", "reads", "file"]
    parts: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(words) + rng.choice(["", "s", "ed", " 42", ",", "."])
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)[:size]


def _hwm(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmHWM for pid {pid}")


def append_figures() -> dict[str, Any]:
    rng = random.Random(12)
    per_entry = APPEND_BYTES // APPEND_ENTRIES
    entries = [
        {
            "speaker": "human" if i % 2 == 0 else "ai",
            "blocks": [{"type": "text", "text": _prose(rng, per_entry)}],
        }
        for i in range(APPEND_ENTRIES)
    ]
    body = len(json.dumps({"sessionId": "big", "entries": entries}))
    with running() as client:
        assert isinstance(client, Client)
        client.request("history/open", {"sessionId": "big", "contextLimit": 100_000_000})
        before = _hwm(client.pid)
        start = time.perf_counter()
        reply = client.request("history/append", {"sessionId": "big", "entries": entries})
        seconds = time.perf_counter() - start
        peak = _hwm(client.pid)
    return {
        "request_bytes": body,
        "entries": APPEND_ENTRIES,
        "seconds": round(seconds, 2),
        "total_tokens": reply.result["totalTokens"],
        "peak_rss_mib": round(peak / MIB, 1),
        "peak_rss_before_mib": round(before / MIB, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.hardening", description=__doc__)
    parser.add_argument("--only", choices=("count", "append"))
    args = parser.parse_args(argv)
    report: dict[str, Any] = {}
    if args.only in (None, "count"):
        report["count_10mb_single_letter"] = count_figures()
    if args.only in (None, "append"):
        report["append_50mb"] = append_figures()
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
