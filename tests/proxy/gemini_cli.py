"""Gemini CLI for the proxy's end-to-end test, installed once into a cache folder.

``@google/gemini-cli`` at the version research/gemini/NOTES.md recorded (0.61.0), from the npm
registry, into ``~/.cache/hdcontext-e2e/gemini-cli-<version>`` (100 MB, 96 of them its
bundle), by ``make gemini-cli`` (``python -m tests.proxy.gemini_cli``): ``npm_cli.py`` says
how, and when the test is skipped instead.

It runs headless (``-p``) in a private home whose settings turn off telemetry, usage
statistics, update checks, checkpoints and the IDE, trust the workspace, and choose the API
key's authentication: with ``GOOGLE_GEMINI_BASE_URL`` set and no choice made, 0.61.0 takes
its "gateway" authentication, which it refuses headless (exit 41).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from .npm_cli import NpmCli

CLI = NpmCli(
    title="Gemini CLI",
    package="@google/gemini-cli",
    version="0.61.0",
    command="gemini",
    name="gemini-cli",
    size="100 MB",
    what="Gemini CLI, one bundled script with its optional native modules",
    make_target="agent-clis",
    test="the proxy's Gemini CLI test",
    quiet={
        "GEMINI_TELEMETRY_ENABLED": "false",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "NO_BROWSER": "true",
        "CI": "true",
        "TERM": "dumb",
    },
)
SETTINGS = {
    "general": {
        "enableAutoUpdate": False,
        "enableAutoUpdateNotification": False,
        "checkpointing": {"enabled": False},
    },
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False, "logPrompts": False, "target": "local"},
    "security": {"folderTrust": {"enabled": False}, "auth": {"selectedType": "gemini-api-key"}},
    "ide": {"enabled": False},
    "ui": {"hideBanner": True, "hideTips": True},
}
find = CLI.find


@dataclass(frozen=True)
class Ran:
    code: int
    out: bytes
    err: bytes
    wall_s: float


async def run(
    cli: Path,
    workspace: Path,
    home: Path,
    base_url: str,
    prompt: str,
    model: str = "gemini-2.5-pro",
    timeout_s: float = 240,
) -> Ran:
    """Gemini CLI in ``workspace``, headless, every tool allowed (``--yolo``), on
    ``model``, pointed at ``base_url`` with a fake key, its home (settings, chats, error
    reports) in ``home``."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS, indent=2))
    (home / "tmp").mkdir(exist_ok=True)
    env = CLI.quiet_env(
        {
            "HOME": str(home),
            "TMPDIR": str(home / "tmp"),
            "GEMINI_API_KEY": "fake-google-key",
            "GOOGLE_GEMINI_BASE_URL": base_url,
        }
    )
    started = time.monotonic()
    process = await asyncio.create_subprocess_exec(
        str(cli),
        "--yolo",
        "-m",
        model,
        "-p",
        prompt,
        cwd=workspace,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        process.kill()
        await process.wait()
        raise
    assert process.returncode is not None
    return Ran(process.returncode, out, err, time.monotonic() - started)


if __name__ == "__main__":
    sys.exit(CLI.main())
