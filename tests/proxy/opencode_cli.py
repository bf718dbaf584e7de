"""opencode for the proxy's end-to-end test, installed once into a cache folder.

``opencode-ai`` at a pinned version, from the npm registry, into
``~/.cache/hdcontext-e2e/opencode-<version>`` (354 MB: its native binary, twice, for two CPU
levels), by ``make agent-clis``: ``npm_cli.py`` says how, and when the test is skipped instead.
The test runs it in a private home with updates, sharing, LSP downloads and the model list's
fetch off (test_opencode.py).
"""

from __future__ import annotations

import sys

from .npm_cli import NpmCli

CLI = NpmCli(
    title="opencode",
    package="opencode-ai",
    version="1.18.33",
    command="opencode",
    name="opencode",
    size="354 MB",
    what="opencode with its native binary",
    make_target="agent-clis",
    test="the proxy's opencode test",
    quiet={
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_SHARE": "1",
    },
)
find = CLI.find


if __name__ == "__main__":
    sys.exit(CLI.main())
