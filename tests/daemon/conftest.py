"""Fixtures for the daemon's end-to-end tests (see harness.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from .harness import PROFILES


@pytest.fixture(params=PROFILES)
def profile(request: pytest.FixtureRequest) -> str:
    """Each test that takes it runs once with VS Code's and once with Neovim's capabilities."""
    return str(request.param)


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    return tmp_path / "storage"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A workspace folder whose files were last written an hour ago."""
    root = tmp_path / "workspace"
    root.mkdir()
    old = time.time() - 3600
    for name, body in (("a.py", "print(1)\n"), ("b.py", "print('b')\n")):
        path = root / name
        path.write_text(body)
        os.utime(path, (old, old))
    return root


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@pytest.fixture(scope="session")
def nvim() -> str:
    """Neovim's path, installed from Debian when missing (the Makefile's test setup does the
    same); the test skips only when it truly cannot be installed here."""
    found = shutil.which("nvim")
    if found:
        return found
    reason = "nvim is not installed"
    if shutil.which("apt-get") and os.geteuid() == 0:
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for step in (
            ["apt-get", "install", "-y", "-q", "neovim"],
            ["apt-get", "update", "-q"],
            ["apt-get", "install", "-y", "-q", "neovim"],
        ):
            subprocess.run(step, env=env, capture_output=True, check=False, timeout=600)
            found = shutil.which("nvim")
            if found:
                return found
        reason = "nvim is not installed and apt-get install neovim failed"
    elif shutil.which("apt-get"):
        reason = "nvim is not installed, and installing it with apt-get needs root"
    else:
        reason = "nvim is not installed and there is no apt-get to install it"
    pytest.skip(reason)
