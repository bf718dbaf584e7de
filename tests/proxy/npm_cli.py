"""The agents' CLIs the proxy's end-to-end tests drive, each installed once into a cache folder.

Each one is an npm package at a pinned version, installed from the npm registry into
``~/.cache/hdcontext-e2e/<name>-<version>`` (``$HDCONTEXT_E2E_HOME`` when set) by ``make
agent-clis`` (``python -m tests.proxy.npm_cli``), which ``make test`` runs before pytest and
which says what, how big and where before each install. The tests only use them: each is
skipped with a reason when ``HDC_SKIP_EDITOR_TESTS=1`` (no install at all) or when its CLI is
not installed (npm missing, the registry unreachable, or pytest run without ``make``).
Claude Code's has a module of its own (``claude_cli.py``), written first.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from .claude_cli import CACHE

INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class NpmCli:
    name: str
    """What the tests and the install's lines call it."""
    package: str
    version: str
    command: str
    """The binary npm puts in ``node_modules/.bin``."""
    size: str
    """On disk once installed, as measured."""
    what: str
    """What it is, for the line said before the install."""

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    def folder(self) -> Path:
        return CACHE / f"{self.name}-{self.version}"

    def binary(self) -> Path:
        return self.folder() / "node_modules" / ".bin" / self.command

    def works(self) -> bool:
        path = self.binary()
        if not path.exists():
            return False
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.folder())}
        try:
            done = subprocess.run(
                [str(path), "--version"], capture_output=True, timeout=60, env=env
            )
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0 and self.version in done.stdout.decode(errors="replace")

    def find(self) -> tuple[Path | None, str]:
        """(the CLI, "") when it is installed, else (None, why not). Installs nothing."""
        if os.environ.get("HDC_SKIP_EDITOR_TESTS") == "1":
            return None, f"HDC_SKIP_EDITOR_TESTS=1: {self.name}'s CLI is not installed"
        if self.works():
            return self.binary(), ""
        return None, (
            f"{self.name}'s CLI ({self.spec}) is not installed in {self.folder()}: "
            "`make agent-clis` installs it (`make test` does)"
        )

    def install(self) -> tuple[Path | None, str]:
        """(the CLI, "") once installed, else (None, why it cannot be). Says what, how big and
        where before it installs, and shows npm's own output."""
        if os.environ.get("HDC_SKIP_EDITOR_TESTS") == "1":
            return None, f"HDC_SKIP_EDITOR_TESTS=1: {self.name}'s CLI is not installed"
        if self.works():
            return self.binary(), ""
        npm = shutil.which("npm")
        if npm is None:
            return None, f"npm is not on PATH: {self.name}'s CLI cannot be installed"
        target = self.folder()
        target.mkdir(parents=True, exist_ok=True)
        print(
            f"agent-clis: installing {self.spec} ({self.what}: {self.size} on disk) from the "
            f"npm registry into {target}, once, for the proxy's end-to-end tests",
            flush=True,
        )
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(target), self.spec],
                timeout=INSTALL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return None, f"npm install {self.spec} did not finish in {INSTALL_TIMEOUT_S} s"
        if done.returncode != 0 or not self.works():
            return None, f"npm install {self.spec} failed (registry unreachable?)"
        return self.binary(), ""


CODEX = NpmCli(
    "codex",
    "@openai/codex",
    "0.171.0",
    "codex",
    "424 MB",
    "OpenAI's Codex CLI with its native binary",
)
OPENCODE = NpmCli(
    "opencode",
    "opencode-ai",
    "1.18.33",
    "opencode",
    "354 MB",
    "opencode with its native binary",
)
CLIS = (CODEX, OPENCODE)


def main() -> int:
    """``python -m tests.proxy.npm_cli``: install them (``make agent-clis``). A failure is
    said and leaves its tests to be skipped with the reason; it does not stop ``make test``."""
    for cli in CLIS:
        path, why = cli.install()
        if path is None:
            print(f"agent-clis: {why}; its tests will be skipped", file=sys.stderr)
        else:
            print(f"agent-clis: {path} ({cli.version})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
