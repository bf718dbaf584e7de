"""A real third-party LSP client, Neovim's built-in vim.lsp, drives the daemon headless."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

DRIVER = Path(__file__).with_name("nvim_driver.lua")


def test_neovim_opens_appends_compacts_and_the_read_is_gone(nvim: str, tmp_path: Path) -> None:
    root = tmp_path / "workspace"
    root.mkdir()
    out = tmp_path / "nvim-result.json"
    env = {
        **os.environ,
        "HDC_PYTHON": sys.executable,
        "HDC_STORAGE": str(tmp_path / "storage"),
        "HDC_ROOT": str(root),
        "HDC_OUT": str(out),
        "HOME": str(tmp_path),  # no user config, no shada, no swap files of the user's
    }
    proc = subprocess.run(
        [nvim, "--headless", "--clean", "-n", "-i", "NONE", "-c", f"luafile {DRIVER}"],
        env=env,
        cwd=root,
        capture_output=True,
        timeout=180,
        check=False,
    )
    assert out.is_file(), proc.stderr.decode(errors="replace")
    report = json.loads(out.read_text())
    failed = [c["name"] for c in report["checks"] if not c["ok"]]
    assert report["ok"], (report.get("error"), failed, proc.stderr.decode(errors="replace"))
    assert proc.returncode == 0
    names = {c["name"] for c in report["checks"]}
    assert {"the stale read is gone", "the write stays", "protocolVersion 2"} <= names
    assert report["entries_after"] == 4  # six entries, the read's call and response pruned
