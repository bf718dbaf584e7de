"""LiteLLM's proxy for the gateway's end-to-end tests, in a virtual environment of its own.

``make litellm`` (``python -m tests.gateway.litellm_env``; ``make unit`` and ``make test`` run it
before pytest) makes ``~/.cache/hdcontext-e2e/litellm-<version>`` (``$HDCONTEXT_E2E_HOME`` when
set) and installs ``hdcontext[litellm,postgres]`` from this checkout into it, which is what a
gateway's ``pip install "hdcontext[litellm,postgres]"`` resolves (LiteLLM pinned, with its
proxy's dependencies, and psycopg for the replicas' shared database), saying what, how big and
where first. It is kept apart from ``.venv`` because it is large (about
760 MB, most of it LiteLLM's proxy: FastAPI, its UI, numpy, polars…) and only these tests need
it; the tests start LiteLLM's proxy from it with this checkout's ``server/`` first on the path,
so the callback that runs is the one being tested. A test only uses it: it is skipped with the
reason when it is not installed (pip failed, or pytest run without ``make``).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path

from tests.proxy.npm_cli import CACHE

VERSION = "1.108.7"
REPO = Path(__file__).resolve().parents[2]
FOLDER = CACHE / f"litellm-{VERSION}"
SIZE = "about 760 MB"
INSTALL_TIMEOUT_S = 1800
MAKE_TARGET = "litellm"
TESTS = "tests/gateway/"
STAMP = ".installed"
"""Holds the digest of what the environment was installed for (hdcontext's dependencies and the
litellm extra, from pyproject.toml): a new pin, or a new dependency, installs again."""


def python() -> Path:
    return FOLDER / "bin" / "python"


def litellm_command() -> Path:
    return FOLDER / "bin" / "litellm"


def _wanted() -> str:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    wanted = [project["dependencies"], extras["litellm"], extras["postgres"]]
    return hashlib.sha256(json.dumps(wanted).encode()).hexdigest()


def find() -> tuple[Path | None, str]:
    """(LiteLLM's ``litellm`` command, "") when the environment is installed and current, else
    (None, why not). Installs nothing: the install is ``make``'s."""
    stamp = FOLDER / STAMP
    if not litellm_command().exists() or not stamp.exists():
        return None, (
            f"LiteLLM {VERSION} is not installed in {FOLDER}: `make {MAKE_TARGET}` installs it "
            "(`make test` does)"
        )
    if stamp.read_text(encoding="utf-8").strip() != _wanted():
        return None, (
            f"the LiteLLM environment in {FOLDER} was installed for other dependencies: "
            f"`make {MAKE_TARGET}` installs it again"
        )
    return litellm_command(), ""


def install() -> tuple[Path | None, str]:
    """(the ``litellm`` command, "") once installed, else (None, why it cannot be). Says what,
    how big and where before it installs, and shows pip's own output."""
    found, _ = find()
    if found is not None:
        return found, ""
    print(
        f"{MAKE_TARGET}: installing hdcontext[litellm,postgres] (LiteLLM {VERSION} and its "
        f"proxy's dependencies, psycopg: {SIZE} on disk) from PyPI into {FOLDER}, once, for "
        f"{TESTS}",
        flush=True,
    )
    base = getattr(sys, "_base_executable", sys.executable)
    try:
        if not python().exists():
            subprocess.run([base, "-m", "venv", str(FOLDER)], check=True, timeout=120)
        done = subprocess.run(
            [
                str(python()),
                "-m",
                "pip",
                "install",
                "--disable-pip-version-check",
                "--quiet",
                f"{REPO}[litellm,postgres]",
            ],
            timeout=INSTALL_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return None, f"pip install of the extras did not finish in {INSTALL_TIMEOUT_S} s"
    except (OSError, subprocess.CalledProcessError) as exc:
        return None, f"no virtual environment in {FOLDER}: {exc}"
    if done.returncode != 0 or not litellm_command().exists():
        return None, "pip install hdcontext[litellm,postgres] failed (registry unreachable?)"
    (FOLDER / STAMP).write_text(_wanted() + "\n", encoding="utf-8")
    return litellm_command(), ""


def main() -> int:
    """``make litellm``: install it. A failure is said and leaves the tests to be skipped with
    the reason; it does not stop ``make test``."""
    path, why = install()
    if path is None:
        print(f"{MAKE_TARGET}: {why}; {TESTS} will be skipped", file=sys.stderr)
    else:
        print(f"{MAKE_TARGET}: {path} (LiteLLM {VERSION})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
