"""``make agent-clis`` (``python -m tests.proxy.agent_clis``): every agent's CLI the proxy's
end-to-end tests drive, each installed once, each said before it starts (``npm_cli.py``):
Claude Code (384 MB), Codex CLI (424 MB), opencode (354 MB) and Gemini CLI (100 MB), into
``~/.cache/hdcontext-e2e``. A failure is said and leaves its test to be skipped with the reason;
it does not stop ``make test``. Standard library only: it needs no virtual environment."""

from __future__ import annotations

import sys

from . import claude_cli, codex_cli, gemini_cli, opencode_cli

CLIS = (claude_cli.CLI, codex_cli.CLI, opencode_cli.CLI, gemini_cli.CLI)


def main() -> int:
    for cli in CLIS:
        cli.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
