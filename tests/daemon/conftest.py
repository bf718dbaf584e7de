"""Fixtures for the daemon's end-to-end tests (see harness.py)."""

from __future__ import annotations

import os
import shutil
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
    """Neovim's path. ``make test`` installs it (and says so) before the tests run; the test
    installs nothing itself, and is skipped, saying why, when Neovim is missing or the editor
    tests are turned off (``HDC_SKIP_EDITOR_TESTS=1``)."""
    if os.environ.get("HDC_SKIP_EDITOR_TESTS") == "1":
        pytest.skip("HDC_SKIP_EDITOR_TESTS=1")
    found = shutil.which("nvim")
    if found:
        return found
    pytest.skip("nvim is not installed (make test installs it with apt-get, as root)")
