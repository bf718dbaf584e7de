"""Claude Code's CLI for the proxy's end-to-end test, installed once into a cache folder.

``@anthropic-ai/claude-code`` at a pinned version, from the npm registry, into
``~/.cache/hdcontext-e2e/claude-code-<version>`` (``$HDCONTEXT_E2E_HOME`` when set; 384 MB:
npm brings the native binary for this platform as an optional package), by ``make
claude-cli`` (``python -m tests.proxy.claude_cli``), which ``make test`` runs before pytest
and which says what, how big and where before it installs. The test only uses it: it is
skipped with a reason when ``HDC_SKIP_EDITOR_TESTS=1`` (no install at all) or when the CLI is
not installed (npm missing, the registry unreachable, or pytest run without ``make``).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from pathlib import Path

VERSION = "2.1.332"
PACKAGE = f"@anthropic-ai/claude-code@{VERSION}"
CACHE = Path(
    os.environ.get("HDCONTEXT_E2E_HOME")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hdcontext-e2e"
)
"""Where setup.sh and codeServer.ts keep Node 24 and code-server: the same rule, one folder."""
INSTALL_TIMEOUT_S = 900
SIZE = "384 MB"


def folder() -> Path:
    return CACHE / f"claude-code-{VERSION}"


def binary() -> Path:
    return folder() / "node_modules" / ".bin" / "claude"


def works(path: Path) -> bool:
    if not path.exists():
        return False
    try:
        done = subprocess.run(
            [str(path), "--version"], capture_output=True, timeout=60, env=quiet_env({})
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and VERSION in done.stdout.decode(errors="replace")


def quiet_env(extra: dict[str, str]) -> dict[str, str]:
    """Claude Code with telemetry, updates and every call but the model's turned off."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    env.update(extra)
    return env


async def run(
    cli: Path, workspace: Path, home: Path, base_url: str, *args: str, timeout_s: float = 240
) -> tuple[int, bytes, bytes]:
    """Claude Code in ``workspace`` with ``args`` (a prompt in print mode, say), JSON output,
    the read, edit and shell tools allowed, pointed at ``base_url`` with a fake key: its exit
    code, standard output and standard error."""
    env = quiet_env(
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


def find() -> tuple[Path | None, str]:
    """(the CLI, "") when it is installed, else (None, why not). Installs nothing: the install
    is ``make claude-cli``'s (``make test`` runs it before pytest, and says so)."""
    if os.environ.get("HDC_SKIP_EDITOR_TESTS") == "1":
        return None, "HDC_SKIP_EDITOR_TESTS=1: Claude Code's CLI is not installed"
    if works(binary()):
        return binary(), ""
    return None, (
        f"Claude Code's CLI ({PACKAGE}) is not installed in {folder()}: "
        "`make claude-cli` installs it (`make test` does)"
    )


def install() -> tuple[Path | None, str]:
    """(the CLI, "") once installed, else (None, why it cannot be). Says what, how big and
    where before it installs, and shows npm's own output."""
    if os.environ.get("HDC_SKIP_EDITOR_TESTS") == "1":
        return None, "HDC_SKIP_EDITOR_TESTS=1: Claude Code's CLI is not installed"
    if works(binary()):
        return binary(), ""
    npm = shutil.which("npm")
    if npm is None:
        return None, "npm is not on PATH: Claude Code's CLI cannot be installed"
    target = folder()
    target.mkdir(parents=True, exist_ok=True)
    print(
        f"claude-cli: installing {PACKAGE} (Claude Code's CLI with its native binary: "
        f"{SIZE} on disk) from the npm registry into {target}, once, for the proxy's "
        "end-to-end test",
        flush=True,
    )
    try:
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(target), PACKAGE],
            timeout=INSTALL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return None, f"npm install {PACKAGE} did not finish in {INSTALL_TIMEOUT_S} s"
    if done.returncode != 0 or not works(binary()):
        return None, f"npm install {PACKAGE} failed (registry unreachable?)"
    return binary(), ""


def main() -> int:
    """``python -m tests.proxy.claude_cli``: install it (``make claude-cli``). A failure is
    said and leaves the test to be skipped with the reason, as an unreachable registry did
    before; it does not stop ``make test``."""
    path, why = install()
    if path is None:
        print(f"claude-cli: {why}; the Claude Code test will be skipped", file=sys.stderr)
    else:
        print(f"claude-cli: {path} ({VERSION})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
