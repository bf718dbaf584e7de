"""The real Gemini CLI (0.61.0, ``gemini_cli.py``) through the proxy, against a scripted
Gemini (``fake_gemini.coding_plan``): read a 600-line file whole, replace a line of it (and
write a note beside, in parallel), read it again whole, answer.

The same task runs twice, on two fresh workspaces: once with the CLI talking to the fake
directly, once through a recorder (``tap.py``) and the proxy. Through the proxy the run ends
as it does directly (exit 0, the same answer printed, the same file left), the last request
reaches Gemini without the first read (stale: the file was edited and read again whole), and
every signature of every request reaches Gemini byte for byte as the CLI sent it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from hdcontext.core.validity import payload_problems
from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.proxy.run import Proxy, _NoEditor
from hdcontext.edges.storage.folder import prepare_folder

from . import gemini_cli
from .fake_gemini import FINAL_TEXT, MAGIC_NEW, MAGIC_OLD, FakeGemini, coding_plan, signatures
from .tap import start_tap

PROMPT = (
    "In big_module.py change MAGIC_CONSTANT from 41 to 42, write a one-line note to "
    "EDIT_NOTES.md, then read the file again to verify the change."
)


@pytest.fixture(scope="module")
def gemini() -> Path:
    path, why = gemini_cli.find()
    if path is None:
        pytest.skip(why)
    return path


def _workspace(root: Path) -> tuple[Path, Path, Path]:
    """A workspace with ``big_module.py`` (600 lines, one ``MAGIC_CONSTANT = 41`` near its
    middle), and a home; as (workspace, the module, home)."""
    workspace, home = root / "ws", root / "home"
    workspace.mkdir(parents=True)
    home.mkdir()
    lines = ['"""A module for the proxy\'s Gemini CLI test."""', ""]
    for n in range(150):
        lines += [f"def helper_{n:03d}(x):", f"    return x * {n} + {n % 7}", "", ""]
        if n == 74:
            lines += [MAGIC_OLD, ""]
    module = workspace / "big_module.py"
    module.write_text("\n".join(lines[:598]) + "\n")
    return workspace, module, home


async def _served(app: web.Application) -> tuple[web.AppRunner, str]:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    return runner, f"http://127.0.0.1:{runner.addresses[0][1]}"


async def _direct(cli: Path, root: Path) -> tuple[gemini_cli.Ran, FakeGemini, Path]:
    workspace, module, home = _workspace(root)
    fake = FakeGemini(coding_plan(str(module), str(workspace / "EDIT_NOTES.md")))
    runner, url = await _served(fake.app())
    try:
        ran = await gemini_cli.run(cli, workspace, home, url, PROMPT)
    finally:
        await runner.cleanup()
    return ran, fake, module


async def _proxied(
    cli: Path, root: Path
) -> tuple[gemini_cli.Ran, FakeGemini, list[tuple[str, Any]], Path, list[dict[str, Any]]]:
    workspace, module, home = _workspace(root)
    fake = FakeGemini(coding_plan(str(module), str(workspace / "EDIT_NOTES.md")))
    runner, url = await _served(fake.app())
    storage = root / "storage"
    prepare_folder(storage)
    daemon = Daemon(_NoEditor(), storage, IdeSettings())
    await daemon.start()
    proxy = Proxy(daemon, anthropic=url, openai=url + "/v1", gemini=url)
    await proxy.start("127.0.0.1", 0)
    tap, tap_runner, tap_url = await start_tap(proxy.url)
    try:
        ran = await gemini_cli.run(cli, workspace, home, tap_url, PROMPT)
        await proxy.state.compactor.saved()
        statuses = list((await daemon.list({}))["sessions"])
    finally:
        await tap_runner.cleanup()
        await proxy.stop()
        await daemon.shutdown()
        await daemon.store.close()
        await runner.cleanup()
    return ran, fake, tap.sent, module, statuses


def _calls(body: dict[str, Any]) -> list[tuple[str, str]]:
    """Each call of a request: (its name, the step its signature names, or "")."""
    out = []
    for content in body["contents"]:
        for part in content["parts"]:
            if "functionCall" in part:
                sig = part.get("thoughtSignature", "")
                out.append((part["functionCall"]["name"], sig))
    return out


async def test_gemini_cli_through_the_proxy_ends_as_it_does_directly(
    gemini: Path, tmp_path: Path
) -> None:
    direct, direct_fake, direct_module = await _direct(gemini, tmp_path / "direct")
    ran, fake, sent, module, statuses = await _proxied(gemini, tmp_path / "proxied")

    for run in (direct, ran):
        assert run.code == 0, run.err.decode(errors="replace")[-2000:]
        assert FINAL_TEXT in run.out.decode()
    assert ran.out == direct.out
    assert module.read_text() == direct_module.read_text()
    assert MAGIC_NEW in module.read_text() and MAGIC_OLD not in module.read_text()

    came = [body for path, body in sent if path.endswith(":streamGenerateContent")]
    went = [s.body for s in fake.generate_requests]
    assert len(came) == len(went) == len(direct_fake.generate_requests) == 4
    for original, body in zip(came, went, strict=True):
        assert payload_problems("gemini", body) == []
        assert {k: v for k, v in body.items() if k != "contents"} == {
            k: v for k, v in original.items() if k != "contents"
        }
        # Every signature that reaches Gemini is one the CLI sent, byte for byte, on the
        # same call; none is lost but with its call.
        assert set(signatures(body)) <= set(signatures(original))
        kept = [c for c in _calls(original) if c in _calls(body)]
        assert kept == _calls(body)

    # The last request: the first whole read (stale) is gone, with its signed call; the
    # edit, the second read and their signatures are there.
    first_read = (came[-1]["contents"][1], came[-1]["contents"][2])
    assert all(c not in went[-1]["contents"] for c in first_read)
    assert len(_calls(went[-1])) == len(_calls(came[-1])) - 1
    assert signatures(went[-1]) == signatures(came[-1])[1:]
    raw_sent = len(json.dumps(came[-1], separators=(",", ":")).encode())
    raw_received = len(fake.generate_requests[-1].raw)
    assert raw_sent - raw_received > 0.9 * len(module.read_bytes())  # the 600-line read

    (status,) = statuses
    assert status["sessionId"].startswith("proxy-gemini-")
    assert status["usage"]["calls"] == 4
    assert status["pricedAs"] == {"model": "gemini-2.5-pro", "match": "exact"}
    print(
        f"\nGemini CLI {gemini_cli.CLI.version}: direct exit {direct.code} in "
        f"{direct.wall_s:.2f} s; through the proxy exit {ran.code} in {ran.wall_s:.2f} s; "
        f"last request {raw_sent} bytes sent by the CLI, {raw_received} received by Gemini"
    )
