"""Codex CLI, OpenAI's coding agent, through the proxy: the Responses API as a real agent
nobody here wrote speaks it.

``codex exec`` (npm ``@openai/codex``, pinned in npm_cli.py) works on a temporary workspace,
its model provider a custom one whose ``base_url`` is the proxy (``wire_api =
"responses"``, no WebSocket), with a private ``CODEX_HOME`` (no updates, analytics, history
or plugin sync). The proxy's upstream is the scripted fake (fake_upstream.py) answering as the
Responses API streams: the model reads ``big_module.py`` (600 lines) through the shell
(``exec_command``: ``cat``), patches it (``apply_patch``, Codex's freeform tool), reads it
again, and answers; each answer starts with an encrypted reasoning item, which Codex sends
back. A recorder (tap.py) between Codex and the proxy keeps what Codex sent.

The same run straight against the fake is the yardstick: through the proxy, Codex must finish
as it does directly.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest

from hdcontext.core.validity import payload_problems
from hdcontext.edges.proxy.openai_cache import retention_to_ask

from .agent_script import last_result_step
from .codex_cli import CLI as CODEX
from .conftest import start, stop
from .tap import start_tap

RUN_TIMEOUT_S = 180
NOTHING_CACHED = {
    "input_tokens": 20000,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 8},
    "total_tokens": 20020,
}
MODELS = ("gpt-5.5", "gpt-6.2-sol")
"""Two models of Codex's catalog: one with its classic tools (``exec_command``,
``apply_patch``), and its default, whose "code mode" offers one freeform tool, ``exec``, that
runs JavaScript calling the same tools (``tools.exec_command({...})``), declared in an
``additional_tools`` item that leads the input."""
DONE = "Bumped VERSION to 1.0.1 in big_module.py."
PROMPT = "In big_module.py, change VERSION from 1.0.0 to 1.0.1. Read the file first, then verify."
PATCH = (
    "*** Begin Patch\n"
    "*** Update File: big_module.py\n"
    "@@\n"
    '-VERSION = "1.0.0"\n'
    '+VERSION = "1.0.1"\n'
    "*** End Patch\n"
)


@pytest.fixture(scope="session")
def codex() -> Path:
    path, why = CODEX.find()
    if path is None:
        pytest.skip(why)
    return path


def big_module(workspace: Path) -> Path:
    """``big_module.py``: 600 lines, its version on line 3."""
    lines = ['"""A module of some size."""', "", 'VERSION = "1.0.0"', ""]
    lines += [f"def f{i}(x):\n    return x + {i}\n" for i in range(198)]
    path = workspace / "big_module.py"
    path.write_text("\n".join(lines) + "\n")
    return path


def codex_script(workspace: Path) -> Any:
    """The model: read the file, patch it, read it again, answer; the step from the newest
    tool output's call id. A request with no tools (a title, a compaction) gets a line."""
    read = {"cmd": "cat big_module.py", "workdir": str(workspace)}
    steps: list[list[dict[str, Any]]] = [
        [{"type": "tool_use", "name": "exec_command", "input": read}],
        [
            {"type": "text", "text": "I'll bump the version constant now."},
            {"type": "custom_tool_use", "name": "apply_patch", "input": PATCH},
        ],
        [{"type": "tool_use", "name": "exec_command", "input": read}],
        [{"type": "text", "text": DONE}],
    ]
    js_read = f"const r = await tools.exec_command({json.dumps(read)});\ntext(r.output);\n"
    js_patch = f"const r = await tools.apply_patch({json.dumps(PATCH)});\ntext(r);\n"
    code_mode: list[list[dict[str, Any]]] = [
        [{"type": "custom_tool_use", "name": "exec", "input": js_read}],
        [
            {"type": "text", "text": "I'll bump the version constant now."},
            {"type": "custom_tool_use", "name": "exec", "input": js_patch},
        ],
        [{"type": "custom_tool_use", "name": "exec", "input": js_read}],
        [{"type": "text", "text": DONE}],
    ]

    def script(body: dict[str, Any]) -> list[dict[str, Any]]:
        items = body.get("input") or []
        coded = bool(items) and items[0].get("type") == "additional_tools"
        if not body.get("tools") and not coded:
            return [{"type": "text", "text": "A title"}]
        done = last_result_step(body)
        step = 0 if done is None else done + 1
        out = []
        for k, block in enumerate((code_mode if coded else steps)[min(step, len(steps) - 1)]):
            if block["type"] != "text":
                block = {**block, "id": f"toolu_step{step}_{k}"}
            out.append(block)
        return out

    return script


def configure(home: Path, base_url: str, model: str) -> Path:
    """A private ``CODEX_HOME`` whose provider is ``base_url``: nothing else goes out."""
    codex_home = home / "codex"
    codex_home.mkdir(parents=True)
    (codex_home / "config.toml").write_text(
        f"""model = "{model}"
model_provider = "hdc"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[features]
plugins = false

[analytics]
enabled = false

[feedback]
enabled = false

[history]
persistence = "none"

[otel]
exporter = "none"

[model_providers.hdc]
name = "hdc"
base_url = "{base_url}/v1"
wire_api = "responses"
env_key = "HDC_TEST_OPENAI_KEY"
supports_websockets = false
request_max_retries = 0
stream_max_retries = 0
"""
    )
    return codex_home


async def run_codex(
    cli: Path, workspace: Path, home: Path, base_url: str, model: str
) -> tuple[int, list[dict[str, Any]], bytes]:
    """``codex exec`` on ``workspace``: its exit code, its JSON events, its stderr."""
    codex_home = configure(home, base_url, model)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "HDC_TEST_OPENAI_KEY": "sk-fake-codex-key",
    }
    process = await asyncio.create_subprocess_exec(
        str(cli),
        "exec",
        "--skip-git-repo-check",
        "--json",
        "-C",
        str(workspace),
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
    """The agent's last message, from ``codex exec --json``'s events."""
    texts = [
        e["item"].get("text", "")
        for e in events
        if e.get("type") == "item.completed" and e.get("item", {}).get("type") == "agent_message"
    ]
    return texts[-1] if texts else ""


def _call_ids(body: dict[str, Any]) -> list[str]:
    return [str(i.get("call_id")) for i in body["input"] if i.get("type", "").endswith("call")]


async def _once(tmp_path: Path, codex: Path, through_proxy: bool, model: str) -> dict[str, Any]:
    workspace = tmp_path / "workspace"
    workspace.mkdir(parents=True)
    module = big_module(workspace)
    running, runners = await start(tmp_path, codex_script(workspace))
    # A provider that caches nothing: the daemon's schedule applies its edits at once.
    running.fake.responses_usage = NOTHING_CACHED
    tap, tap_runner, tap_url = await start_tap(running.url if through_proxy else running.fake_url)
    runners.append(tap_runner)
    try:
        code, events, err = await run_codex(codex, workspace, tmp_path / "home", tap_url, model)
        figures = running.proxy.state.forwarded_as_sent()
        statuses = await running.statuses()
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
        "statuses": statuses,
    }


@pytest.mark.parametrize("model", MODELS)
async def test_codex_through_the_proxy_finishes_as_it_does_directly(
    tmp_path: Path, codex: Path, model: str
) -> None:
    direct = await _once(tmp_path / "direct", codex, False, model)
    proxied = await _once(tmp_path / "proxied", codex, True, model)
    assert direct["code"] == 0, direct["err"].decode(errors="replace")[-2000:]
    assert proxied["code"] == 0, proxied["err"].decode(errors="replace")[-2000:]
    assert final_text(proxied["events"]) == final_text(direct["events"]) == DONE
    assert proxied["module"] == direct["module"]
    assert 'VERSION = "1.0.1"' in proxied["module"]

    sent, received = proxied["sent"], proxied["received"]
    assert len(sent) == len(received) == len(direct["received"]) == 4
    # Every request carried: none went as it came.
    assert proxied["figures"]["asSent"] == 0, proxied["figures"]["reasons"]
    (status,) = proxied["statuses"]
    assert status["sessionId"].startswith("proxy-responses-")
    assert status["usage"]["calls"] == 4
    for original, body in zip(sent, received, strict=True):
        assert payload_problems("openai-responses", body) == []
        expected = {k: v for k, v in original.items() if k != "input"}
        if (retention := retention_to_ask(original)) is not None:
            expected["prompt_cache_retention"] = retention  # a day, free for this model
        assert {k: v for k, v in body.items() if k != "input"} == expected
        # Every reasoning item upstream is one Codex sent, byte for byte.
        theirs = [json.dumps(i) for i in original["input"] if i.get("type") == "reasoning"]
        ours = [json.dumps(i) for i in body["input"] if i.get("type") == "reasoning"]
        assert set(ours) <= set(theirs)
    # The first read, stale after the patch and the second whole read, is gone.
    assert "toolu_step0_0" in _call_ids(sent[-1])
    assert "toolu_step0_0" not in _call_ids(received[-1])
    assert len(json.dumps(received[-1])) < len(json.dumps(sent[-1]))
