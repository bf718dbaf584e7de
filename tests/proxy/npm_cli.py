"""The agents' CLIs for the proxy's end-to-end tests, from npm, each installed once into a
cache folder: Claude Code's (``claude_cli.py``), Gemini CLI (``gemini_cli.py``).

Each is a package at a pinned version, installed by ``make claude-cli`` / ``make gemini-cli``
(``python -m tests.proxy.<module>``; ``make unit`` and ``make test`` run both before pytest)
into ``~/.cache/hdcontext-e2e/<name>-<version>`` (``$HDCONTEXT_E2E_HOME`` when set), saying
what, how big and where before it installs. A test only uses it: it is skipped with a reason
when ``HDC_SKIP_EDITOR_TESTS=1`` (no install at all) or when the CLI is not installed (npm
missing, the registry unreachable, or pytest run without ``make``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

CACHE = Path(
    os.environ.get("HDCONTEXT_E2E_HOME")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hdcontext-e2e"
)
"""Where setup.sh and codeServer.ts keep Node 24 and code-server: the same rule, one folder."""
INSTALL_TIMEOUT_S = 900


@dataclass(frozen=True)
class NpmCli:
    title: str
    """How the messages name it (``Claude Code's CLI``)."""
    package: str
    version: str
    command: str
    """The executable the package puts in ``node_modules/.bin``."""
    name: str
    """Its folder's name, before the version."""
    size: str
    """On disk, as the install says before it starts."""
    what: str
    """What the install brings, in its announcement."""
    make_target: str
    test: str
    """The test that uses it, as a skip names it."""
    quiet: Mapping[str, str] = field(default_factory=dict)
    """The environment that turns its telemetry and updates off."""

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"

    def folder(self) -> Path:
        return CACHE / f"{self.name}-{self.version}"

    def binary(self) -> Path:
        return self.folder() / "node_modules" / ".bin" / self.command

    def quiet_env(self, extra: Mapping[str, str]) -> dict[str, str]:
        env = {"PATH": os.environ.get("PATH", ""), **self.quiet}
        env.update(extra)
        return env

    def works(self, path: Path) -> bool:
        if not path.exists():
            return False
        with tempfile.TemporaryDirectory() as home:  # a version check writes nothing of ours
            try:
                done = subprocess.run(
                    [str(path), "--version"],
                    capture_output=True,
                    timeout=60,
                    env=self.quiet_env({"HOME": home}),
                )
            except (OSError, subprocess.TimeoutExpired):
                return False
        return done.returncode == 0 and self.version in done.stdout.decode(errors="replace")

    def find(self) -> tuple[Path | None, str]:
        """(the CLI, "") when it is installed, else (None, why not). Installs nothing: the
        install is ``make``'s."""
        if os.environ.get("HDC_SKIP_EDITOR_TESTS") == "1":
            return None, f"HDC_SKIP_EDITOR_TESTS=1: {self.title} is not installed"
        if self.works(self.binary()):
            return self.binary(), ""
        return None, (
            f"{self.title} ({self.spec}) is not installed in {self.folder()}: "
            f"`make {self.make_target}` installs it (`make test` does)"
        )

    def install(self) -> tuple[Path | None, str]:
        """(the CLI, "") once installed, else (None, why it cannot be). Says what, how big
        and where before it installs, and shows npm's own output."""
        if os.environ.get("HDC_SKIP_EDITOR_TESTS") == "1":
            return None, f"HDC_SKIP_EDITOR_TESTS=1: {self.title} is not installed"
        if self.works(self.binary()):
            return self.binary(), ""
        npm = shutil.which("npm")
        if npm is None:
            return None, f"npm is not on PATH: {self.title} cannot be installed"
        target = self.folder()
        target.mkdir(parents=True, exist_ok=True)
        print(
            f"{self.make_target}: installing {self.spec} ({self.what}: {self.size} on disk) "
            f"from the npm registry into {target}, once, for {self.test}",
            flush=True,
        )
        try:
            done = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--prefix", str(target), self.spec],
                timeout=INSTALL_TIMEOUT_S,
            )
        except subprocess.TimeoutExpired:
            return None, f"npm install {self.spec} did not finish in {INSTALL_TIMEOUT_S} s"
        if done.returncode != 0 or not self.works(self.binary()):
            return None, f"npm install {self.spec} failed (registry unreachable?)"
        return self.binary(), ""

    def main(self) -> int:
        """``python -m tests.proxy.<module>``: install it. A failure is said and leaves the
        test to be skipped with the reason; it does not stop ``make test``."""
        path, why = self.install()
        if path is None:
            print(f"{self.make_target}: {why}; {self.test} will be skipped", file=sys.stderr)
        else:
            print(f"{self.make_target}: {path} ({self.version})")
        return 0
