"""``python -m bench``: density on every real transcript, then latency, memory and a profile
of the daemon on the largest one. Prints the tables and writes them as JSON under
``bench/results/`` (``latest.json`` and a time-stamped copy), which git ignores: a run is a
measurement of one machine, not a source file."""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

from hdcontext.core.content import dump_entries
from hdcontext.core.tokens import ENCODING_NAME

from . import (
    density,
    holdout,
    latency,
    lifetimes,
    profile,
    protocol_v2,
    replay,
    scale,
    table,
    transcripts,
)
from . import proxy as proxy_bench

RESULTS = Path(__file__).resolve().parent / "results"


def _largest(found: list[transcripts.Transcript]) -> transcripts.Transcript:
    """The longest session (most entries, then most JSON): what a turn costs grows with the
    entries a session holds; a short one made large by a few images would time JSON copies."""
    return max(found, key=lambda t: (len(t.entries), len(json.dumps(dump_entries(t.entries)))))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer turns (a smoke run)")
    parser.add_argument("--density-only", action="store_true", help="skip the daemon")
    args = parser.parse_args(argv)

    corpus = transcripts.find()
    found = corpus.transcripts
    if not found:
        print(f"bench: no transcripts under {transcripts.TRANSCRIPTS}", file=sys.stderr)
        return 2
    report: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "encoding": ENCODING_NAME,
        "transcripts": str(transcripts.TRANSCRIPTS),
        "corpus": corpus.summary(),
    }
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    report["machine"]["load_average_at_start"] = os.getloadavg()
    print(
        f"hdcontext benchmark · tokens counted with {ENCODING_NAME} · {os.cpu_count()} CPUs"
        f" · load average {load} (timings move with other work on the machine)\n"
    )

    report["density"] = density.run(found)
    print("1. Density on the real transcripts (tokens)")
    print(table.corpus(report["corpus"]))
    print(table.density(report["density"]), end="\n\n", flush=True)

    report["replay"] = replay.run(found)
    print("2. Cost under prompt caching: every model call replayed (bench/replay.py, peers.py)")
    print(table.replay(report["replay"]), end="\n\n", flush=True)
    if not args.quick:
        report["holdout"] = holdout.run(found)
        print("   The same, each project priced with constants tuned on the others (holdout.py)")
        print(table.holdout(report["holdout"]), end="\n\n", flush=True)
        report["lifetimes"] = lifetimes.run(found)
        print("   The cache's lifetime, its constants chosen on the other projects (lifetimes.py)")
        print(lifetimes.table(report["lifetimes"]), end="\n\n", flush=True)

    if not args.density_only:
        largest = _largest(found)
        turns = 10 if args.quick else latency.TURNS
        one = latency.measure(largest, 1, turns)
        ten = latency.measure(largest, 10, turns)
        report["latency"] = latency.combine(largest, one, ten)
        print("3. Latency over the stdio transport")
        print(table.latency(report["latency"]), end="\n\n")
        print("4. Memory of the daemon")
        print(table.memory(report["latency"]), end="\n\n")
        print("Targets")
        print(table.targets(report["latency"]), end="\n\n", flush=True)
        v2_turns = 10 if args.quick else protocol_v2.TURNS
        report["protocol_v2"] = protocol_v2.combine(
            *protocol_v2.measure(largest, (1, 10), v2_turns)
        )
        print("5. Protocol v2: delta replies and history/sync")
        print(table.protocol_v2(report["protocol_v2"]), end="\n\n", flush=True)
        if args.quick:
            report["scale"] = scale.run(largest, sessions=5)
        else:
            report["scale"] = scale.run(largest)
        print("6. Fifty sessions of a million tokens in one daemon")
        print(table.scale(report["scale"]), end="\n\n", flush=True)
        print("7. Where a turn's time goes")
        try:
            report["profile"] = profile.run(largest, 10, 5 if args.quick else profile.TURNS)
            print(table.profile(report["profile"]))
        except profile.ProfileError as exc:
            report["profile"] = {"error": str(exc)}
            print(f"(no profile: {exc})")

        print("8. What the proxy adds to a model call (hdcontext proxy, bench/proxy.py)")
        try:
            report["proxy"] = proxy_bench.run(largest, 10 if args.quick else proxy_bench.TURNS)
            print(proxy_bench.table(report["proxy"]), end="\n\n", flush=True)
        except (RuntimeError, OSError) as exc:
            report["proxy"] = {"error": str(exc)}
            print(f"(no proxy figures: {exc})")

    RESULTS.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=1, ensure_ascii=False) + "\n"
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (RESULTS / f"bench-{stamp}.json").write_text(text, encoding="utf-8")
    (RESULTS / "latest.json").write_text(text, encoding="utf-8")
    print(f"\nwritten: {RESULTS / 'latest.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
