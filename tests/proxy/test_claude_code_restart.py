"""Claude Code across a restart of the proxy: a task, the proxy stopped and started again on
the same storage, then ``claude --continue`` goes on with the same conversation. The restarted
proxy takes the conversation in before the agent comes back (it kept the last request when it
stopped), so the continued conversation's first request is read as a turn of it: nothing is
read whole, the same session goes on, and what goes upstream stays provider-valid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hdcontext.core.validity import payload_problems, problems
from hdcontext.edges.proxy import compactor as compactor_module
from hdcontext.edges.proxy.anthropic import AnthropicApi

from . import claude_cli
from .agent_script import DONE_TEXT, last_result_step, notes_script, notes_workspace, tool_names
from .conftest import Running, start, stop
from .test_adapters import conversation

RUN_TIMEOUT_S = 240


async def _claude(cli: Path, running: Running, workspace: Path, home: Path, *args: str) -> Any:
    code, out, err = await claude_cli.run(
        cli, workspace, home, running.url, *args, timeout_s=RUN_TIMEOUT_S
    )
    assert code == 0, err.decode(errors="replace")[-2000:]
    return json.loads(out)


def _again(notes: Path) -> Any:
    """The model of the continued conversation: it reads the file once more (a call id of
    its own), then answers."""

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        if "Read" not in tool_names(body):
            return [{"type": "text", "text": "Notes"}]
        if last_result_step(body) is None:  # the new prompt
            call = {"file_path": str(notes)}
            return [{"type": "tool_use", "id": "toolu_step9_0", "name": "Read", "input": call}]
        return [{"type": "text", "text": DONE_TEXT}]

    return script


async def test_claude_code_continues_through_a_restarted_proxy(
    claude_code: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workspace, notes, home = notes_workspace(tmp_path)
    script = notes_script(workspace)
    running, runners = await start(tmp_path, script)
    try:
        first = await _claude(claude_code, running, workspace, home, "-p", "Change alpha to beta.")
        (session,) = [s["sessionId"] for s in await running.statuses() if s["usage"]["calls"]]
    finally:
        await stop(running, runners)
    assert first["result"] == DONE_TEXT

    running, runners = await start(tmp_path, _again(notes))
    whole: list[int] = []
    taken_whole = compactor_module._take_whole

    def counting(*args: Any, **kwargs: Any) -> Any:
        whole.append(1)
        return taken_whole(*args, **kwargs)

    try:
        task = running.proxy.state.compactor._resume_task
        assert task is not None
        await task  # taken in before the agent comes back
        monkeypatch.setattr(compactor_module, "_take_whole", counting)
        again = await _claude(
            claude_code, running, workspace, home, "--continue", "-p", "Show me the file again."
        )
        statuses = {s["sessionId"]: s for s in await running.statuses()}
    finally:
        await stop(running, runners)
    assert again["result"] == DONE_TEXT
    received = [s.body for s in running.fake.api_requests if "Read" in str(s.body.get("tools"))]
    assert len(received) == 2  # the new prompt, then the file read again
    assert running.proxy.state.compacted >= 2 and running.proxy.state.unchanged == 0
    for body in received:
        assert payload_problems("anthropic", body) == []
        assert problems(conversation(AnthropicApi(), body)) == []
    assert whole == []  # every request of the continued conversation read as a turn
    assert statuses[session]["usage"]["calls"] > 0  # the same session went on
