"""Codex CLI for the proxy's end-to-end test, installed once into a cache folder.

``@openai/codex`` at a pinned version, from the npm registry, into
``~/.cache/hdcontext-e2e/codex-<version>`` (424 MB: npm brings the native binary for this
platform as an optional package), by ``make agent-clis``: ``npm_cli.py`` says how, and when the
test is skipped instead. The test gives it a private ``CODEX_HOME`` whose ``config.toml`` turns
updates, analytics, feedback, history and the plugins' sync off (test_codex.py).
"""

from __future__ import annotations

import sys

from .npm_cli import NpmCli

CLI = NpmCli(
    title="Codex CLI",
    package="@openai/codex",
    version="0.171.0",
    command="codex",
    name="codex",
    size="424 MB",
    what="OpenAI's Codex CLI with its native binary",
    make_target="agent-clis",
    test="the proxy's Codex test",
)
find = CLI.find


if __name__ == "__main__":
    sys.exit(CLI.main())
