"""Start ``hdcontext serve`` in a scratch directory and drive one session of it."""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .rpc import Client, Reply, rss_bytes
from .transcripts import turn

SESSION = "bench"


def serve_command(profile_to: Path | None = None) -> list[str]:
    """The daemon as a user starts it; under cProfile when ``profile_to`` is given."""
    if profile_to is None:
        return [sys.executable, "-m", "hdcontext", "serve", "--log-level", "WARNING"]
    return [
        sys.executable,
        "-m",
        "cProfile",
        "-o",
        str(profile_to),
        "-m",
        "hdcontext",
        "serve",
        "--log-level",
        "WARNING",
    ]


@contextmanager
def running(command: Sequence[str] | None = None, exit_timeout: float = 30) -> Iterator[Client]:
    """An initialized daemon with its own storage and an empty workspace folder."""
    with tempfile.TemporaryDirectory(prefix="hdcontext-bench-") as scratch:
        base = Path(scratch)
        workspace = base / "workspace"
        workspace.mkdir()
        with (base / "stderr.log").open("wb") as stderr:
            client = Client.start(command or serve_command(), base, stderr)
            try:
                client.request(
                    "initialize",
                    {
                        "processId": None,
                        "rootUri": workspace.as_uri(),
                        "capabilities": {},
                        "initializationOptions": {"storageDir": str(base / "storage")},
                    },
                )
                client.notify("initialized", {})
                time.sleep(0.5)  # let the watcher and settings pull settle before measuring
                yield client
            finally:
                client.close(exit_timeout)


def idle_rss(client: Client) -> tuple[int, int]:
    """RSS of the daemon just started, and after a one-turn warm-up session (modules, the
    tokenizer's tables and the store loaded): the second is the idle base a session adds to."""
    cold = rss_bytes(client.pid)
    warm = "bench-warmup"
    client.request("history/open", {"sessionId": warm})
    client.request("history/append", {"sessionId": warm, "entries": turn(0, "/warmup")})
    client.request("history/compact", {"sessionId": warm})
    client.request("history/get", {"sessionId": warm})
    return cold, rss_bytes(client.pid)


def load_session(client: Client, entries: list[dict[str, Any]], limit: int) -> dict[str, Reply]:
    """Open the session, append every entry in one request, compact once."""
    return {
        "open": client.request("history/open", {"sessionId": SESSION, "contextLimit": limit}),
        "append": client.request("history/append", {"sessionId": SESSION, "entries": entries}),
        "compact": client.request("history/compact", {"sessionId": SESSION}),
    }
