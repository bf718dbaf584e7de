"""Where the time of a turn goes in the daemon: cProfile of the compact path, per turn.

The daemon runs under ``cProfile`` twice at 10× the largest session: once loading the
session and compacting it, once doing the same and then ``TURNS`` turns (append one turn,
``history/compact``). The difference of the two profiles, divided by the number of turns, is
the cost of one turn, function by function (functions the turns did not call are left out:
their difference is noise). cProfile sees the daemon's main thread only
(token counting of an append runs in a worker thread) and inflates call-heavy code; it names
the costs, the latency table gives their size.
"""

from __future__ import annotations

import pstats
import tempfile
from pathlib import Path
from typing import Any

from hdcontext.core.content import dump_entries

from .daemon import SESSION, load_session, running, serve_command
from .latency import CONTEXT_LIMIT
from .transcripts import Transcript, repeated, turn

TURNS = 20
TOP = 12

Key = tuple[str, int, str]


class ProfileError(RuntimeError):
    pass


_WAITING = {("~", 0, "<method 'poll' of 'select.epoll' objects>")}


def _profile(
    entries: list[dict[str, Any]], turns: int, out: Path
) -> dict[Key, tuple[int, float, float]]:
    # A profiled daemon writes its profile on the way out: give it time to get there.
    with running(serve_command(profile_to=out), exit_timeout=180) as client:
        load_session(client, entries, CONTEXT_LIMIT)
        for k in range(turns):
            client.request("history/append", {"sessionId": SESSION, "entries": turn(k, "/bench")})
            client.request("history/compact", {"sessionId": SESSION})
    if not out.exists():
        raise ProfileError("the profiled daemon did not exit cleanly: no profile was written")
    stats = pstats.Stats(str(out))
    raw: dict[Key, Any] = stats.stats  # type: ignore[attr-defined]
    return {key: (value[1], value[2], value[3]) for key, value in raw.items()}


def _name(key: Key) -> str:
    filename, line, function = key
    if filename == "~":
        return function
    short = filename.split("site-packages/")[-1].split("server/")[-1]
    return f"{short}:{line}({function})"


def run(t: Transcript, times: int = 10, turns: int = TURNS) -> dict[str, Any]:
    entries = dump_entries(repeated(t.entries, times))
    with tempfile.TemporaryDirectory(prefix="hdcontext-profile-") as scratch:
        base = _profile(entries, 0, Path(scratch) / "base.prof")
        full = _profile(entries, turns, Path(scratch) / "full.prof")
    rows = []
    for key, (calls, tottime, cumtime) in full.items():
        base_calls, base_tot, base_cum = base.get(key, (0, 0.0, 0.0))
        if calls <= base_calls or key in _WAITING:
            continue  # one-time work (imports) or the loop waiting for the client: not a cost
        rows.append((_name(key), (tottime - base_tot) / turns, (cumtime - base_cum) / turns))

    def top(index: int, own_only: bool = False) -> list[dict[str, Any]]:
        chosen = [r for r in rows if not own_only or _is_own(r[0])]
        ranked = sorted(chosen, key=lambda r: r[index], reverse=True)[:TOP]
        return [
            {
                "function": name,
                "self_ms": round(tot * 1000, 2),
                "cumulative_ms": round(cum * 1000, 2),
            }
            for name, tot, cum in ranked
        ]

    return {
        "session": t.name,
        "times": times,
        "turns": turns,
        "by_self": top(1),
        "by_cumulative": top(2, own_only=True),
    }


def _is_own(name: str) -> bool:
    """hdcontext's own functions, below the entry points that wrap the whole run."""
    return name.startswith("hdcontext/") and not name.startswith(
        ("hdcontext/cli.py", "hdcontext/server.py:406", "hdcontext/__main__")
    )
