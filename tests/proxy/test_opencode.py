"""opencode with its built-in ``openai`` provider through the proxy: the Responses API as a
second real agent speaks it (the Vercel AI SDK's OpenAI provider: no item ids, arguments
written again, the system prompt a developer message).

``opencode run`` (npm ``opencode-ai``, pinned in npm_cli.py) works on a temporary workspace,
its ``openai`` provider's ``baseURL`` the proxy, with a private home (no updates, sharing,
LSP or model list fetched). The scripted fake model reads ``big_module.py`` with opencode's
``read`` tool, patches it (``apply_patch``, opencode's tool for GPT models), reads it again and
answers; the same run straight against the fake is the yardstick.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from hdcontext.core.validity import payload_problems

from .agent_script import last_result_step
from .conftest import start, stop
from .opencode_cli import CLI as OPENCODE
from .tap import start_tap
from .test_codex import DONE, NOTHING_CACHED, PATCH, PROMPT, big_module

RUN_TIMEOUT_S = 180
MODEL = "gpt-5.5"


@pytest.fixture(scope="session")
def opencode() -> Path:
    path, why = OPENCODE.find()
    if path is None:
        pytest.skip(why)
    return path


def opencode_script(workspace: Path) -> Any:
    """Read, patch, read again, answer; the step from the newest output's call id. A request
    with no tools (opencode's title for the session) gets a title."""
    read = {"filePath": str(workspace / "big_module.py")}
    steps: list[list[dict[str, Any]]] = [
        [{"type": "tool_use", "name": "read", "input": read}],
        [{"type": "tool_use", "name": "apply_patch", "input": {"patchText": PATCH}}],
        [{"type": "tool_use", "name": "read", "input": read}],
        [{"type": "text", "text": DONE}],
    ]

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        if not body.get("tools"):
            return [{"type": "text", "text": "Bump the version"}]
        done = last_result_step(body)
        step = 0 if done is None else done + 1
        out = []
        for k, block in enumerate(steps[min(step, len(steps) - 1)]):
            if block["type"] != "text":
                block = {**block, "id": f"toolu_step{step}_{k}"}
            out.append(block)
        return out

    return script


async def run_opencode(
    cli: Path, workspace: Path, home: Path, base_url: str
) -> tuple[int, list[dict[str, Any]], bytes]:
    """``opencode run`` on ``workspace``: its exit code, its JSON events, its stderr."""
    config = home / "config" / "opencode"
    config.mkdir(parents=True)
    (config / "opencode.json").write_text(
        json.dumps(
            {
                "model": f"openai/{MODEL}",
                "small_model": f"openai/{MODEL}",
                "autoupdate": False,
                "share": "disabled",
                "lsp": False,
                "formatter": False,
                "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
                "provider": {
                    "openai": {
                        "options": {"baseURL": f"{base_url}/v1", "apiKey": "{env:OPENAI_API_KEY}"}
                    }
                },
            }
        )
    )
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / "config"),
        "XDG_DATA_HOME": str(home / "data"),
        "XDG_CACHE_HOME": str(home / "cache"),
        "XDG_STATE_HOME": str(home / "state"),
        "OPENAI_API_KEY": "sk-fake-opencode-key",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_SHARE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
        "OPENCODE_DISABLE_CLAUDE_CODE": "1",
        "OPENCODE_DISABLE_EXTERNAL_SKILLS": "1",
        "OPENCODE_DISABLE_TERMINAL_TITLE": "1",
    }
    process = await asyncio.create_subprocess_exec(
        str(cli),
        "run",
        "--format",
        "json",
        PROMPT,
        cwd=workspace,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), RUN_TIMEOUT_S)
    events = [json.loads(line) for line in out.splitlines() if line.strip().startswith(b"{")]
    assert process.returncode is not None
    return process.returncode, events, err


def final_text(events: list[dict[str, Any]]) -> str:
    texts = [e["part"].get("text", "") for e in events if e.get("type") == "text"]
    return texts[-1] if texts else ""


def _call_ids(body: dict[str, Any]) -> list[str]:
    return [str(i.get("call_id")) for i in body["input"] if i.get("type") == "function_call"]


async def _once(tmp_path: Path, opencode: Path, through_proxy: bool) -> dict[str, Any]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True)
    module = big_module(workspace)
    running, runners = await start(tmp_path, opencode_script(workspace))
    # A provider that caches nothing: the daemon's schedule applies its edits at once.
    running.fake.responses_usage = NOTHING_CACHED
    tap, tap_runner, tap_url = await start_tap(running.url if through_proxy else running.fake_url)
    runners.append(tap_runner)
    try:
        code, events, err = await run_opencode(opencode, workspace, tmp_path / "home", tap_url)
        figures = running.proxy.state.forwarded_as_sent()
    finally:
        await stop(running, runners)
    return {
        "code": code,
        "events": events,
        "err": err,
        "module": module.read_text(),
        "sent": [b for p, b in tap.sent if p.endswith("/responses")],
        "received": [s.body for s in running.fake.api_requests],
        "figures": figures,
    }


async def test_opencode_through_the_proxy_finishes_as_it_does_directly(
    tmp_path: Path, opencode: Path
) -> None:
    direct = await _once(tmp_path / "direct", opencode, through_proxy=False)
    proxied = await _once(tmp_path / "proxied", opencode, through_proxy=True)
    assert direct["code"] == 0, direct["err"].decode(errors="replace")[-2000:]
    assert proxied["code"] == 0, proxied["err"].decode(errors="replace")[-2000:]
    assert final_text(proxied["events"]) == final_text(direct["events"]) == DONE
    assert proxied["module"] == direct["module"]
    assert 'VERSION = "1.0.1"' in proxied["module"]

    sent, received = proxied["sent"], proxied["received"]
    assert len(sent) == len(received) == len(direct["received"])
    assert proxied["figures"]["asSent"] == 0, proxied["figures"]["reasons"]
    for body in received:
        assert payload_problems("openai-responses", body) == []
    work = [(a, b) for a, b in zip(sent, received, strict=True) if a.get("tools")]
    last_sent, last_received = work[-1]
    assert "toolu_step0_0" in _call_ids(last_sent)
    assert "toolu_step0_0" not in _call_ids(last_received)
    assert len(json.dumps(last_received)) < len(json.dumps(last_sent))
