"""The tests' shortcut (spawn.py): a daemon forked from the zygote behaves, as its test sees it,
as one executed anew: the same exit codes, output and signals."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import pytest

from .raw import SERVE, Peer
from .spawn import DEVNULL, EXEC_ENV, PIPE, Forked, Process, spawn


async def _both(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> list[Process]:
    """``argv`` once forked, once executed (in that order)."""
    forked = await spawn(argv, stdin=DEVNULL)
    monkeypatch.setenv(EXEC_ENV, "1")
    executed = await spawn(argv, stdin=DEVNULL)
    monkeypatch.delenv(EXEC_ENV)
    return [forked, executed]


async def test_a_refused_start_exits_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(EXEC_ENV, raising=False)
    forked, executed = await _both(monkeypatch, [*SERVE, "--port", "not-a-port"])
    assert isinstance(forked, Forked) and not isinstance(executed, Forked)
    outcomes = []
    for proc in (forked, executed):
        assert proc.stderr is not None and proc.stdout is not None
        err, out = await asyncio.gather(proc.stderr.read(), proc.stdout.read())
        outcomes.append((await asyncio.wait_for(proc.wait(), 60), out, err))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == 2 and b"--port" in outcomes[0][2]


async def test_a_forked_daemon_answers_and_dies_by_its_signal(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv(EXEC_ENV, raising=False)
    proc = await spawn([*SERVE], stdin=PIPE, env={**os.environ})
    assert isinstance(proc, Forked) and proc.stdout is not None and proc.pid != os.getpid()
    peer = Peer(proc.stdout, proc, started=False)
    answer = await peer.initialize(tmp_path / "storage")
    assert "result" in answer
    assert proc.returncode is None
    proc.kill()
    assert await asyncio.wait_for(proc.wait(), 30) == -signal.SIGKILL
    assert proc.returncode == -signal.SIGKILL
    with pytest.raises(ProcessLookupError):
        proc.kill()
