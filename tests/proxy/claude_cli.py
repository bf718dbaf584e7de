"""Claude Code's CLI for the proxy's end-to-end test, installed once into a cache folder.

``@anthropic-ai/claude-code`` at a pinned version, from the npm registry, into
``~/.cache/hdcontext-e2e/claude-code-<version>`` (384 MB: npm brings the native binary for this
platform as an optional package), by ``make claude-cli`` (``python -m tests.proxy.claude_cli``):
``npm_cli.py`` says how, and when the test is skipped instead.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from .npm_cli import CACHE, NpmCli

__all__ = ["CACHE", "CLI", "PACKAGE", "VERSION", "binary", "find", "folder", "install", "run"]

CLI = NpmCli(
    title="Claude Code's CLI",
    package="@anthropic-ai/claude-code",
    version="2.1.332",
    command="claude",
    name="claude-code",
    size="384 MB",
    what="Claude Code's CLI with its native binary",
    make_target="agent-clis",
    test="the proxy's Claude Code test",
    quiet={
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    },
)
VERSION = CLI.version
PACKAGE = CLI.spec
folder = CLI.folder
binary = CLI.binary
find = CLI.find
install = CLI.install


async def run(
    cli: Path, workspace: Path, home: Path, base_url: str, *args: str, timeout_s: float = 240
) -> tuple[int, bytes, bytes]:
    """Claude Code in ``workspace`` with ``args`` (a prompt in print mode, say), JSON output,
    the read, edit and shell tools allowed, pointed at ``base_url`` with a fake key: its exit
    code, standard output and standard error."""
    env = CLI.quiet_env(
        {"HOME": str(home), "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": "sk-ant-fake"}
    )
    process = await asyncio.create_subprocess_exec(
        str(cli),
        *args,
        "--allowedTools",
        "Read,Edit,Bash",
        "--output-format",
        "json",
        cwd=workspace,
        env=env,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout_s)
    assert process.returncode is not None
    return process.returncode, out, err


if __name__ == "__main__":
    sys.exit(CLI.main())
