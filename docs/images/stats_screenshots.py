"""Makes docs/images/stats-page.png and stats-terminal.png: a storage folder seeded with two
weeks of made-up calls (plausible sizes, nothing real), the page in Debian's Chromium, and the
terminal table at 80 columns drawn by rich and photographed the same way.

    .venv/bin/python docs/images/stats_screenshots.py

Needs /usr/bin/chromium and the playwright package (``pip install -e '.[dev]'``)."""

from __future__ import annotations

import asyncio
import io
import random
import sqlite3
import sys
import tempfile
from datetime import datetime
from pathlib import Path

from rich.console import Console

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.stats.seed import Seeded, seed  # noqa: E402

from hdcontext.cli import stats as cli_stats  # noqa: E402
from hdcontext.edges.proxy.dashboard import Dashboard, start_page  # noqa: E402
from hdcontext.edges.stats.report import read  # noqa: E402
from hdcontext.edges.storage.folder import DB_NAME  # noqa: E402

OUT = Path(__file__).resolve().parent
SHOWN_FOLDER = "~/.local/share/hdcontext"


def made_up_sessions() -> list[tuple[Seeded, list[tuple[object, ...]]]]:
    """Sessions of an agent's days: each call's history grows, hdcontext's edits take more out
    as it goes, the provider reads most of it from its cache, and a pause now and then
    rewrites it."""
    rng = random.Random(30)
    plans = [
        ("proxy-anthropic-5c1e9a04b7d2f", "claude-sonnet-4-5", 13, 90, True),
        ("proxy-anthropic-a83f0d61c2e95", "claude-sonnet-4-5", 15, 120, True),
        ("proxy-anthropic-0b9d44e7f1a36", "claude-opus-4-8", 17, 60, True),
        ("vscode-chat-3b2e81", "claude-sonnet-4-5", 18, 70, True),
        ("proxy-openai-7e20c95d13b84", "gpt-5.1", 20, 80, True),
        ("proxy-anthropic-d41c7f02e98b5", "claude-sonnet-4-5", 22, 110, True),
        ("vscode-chat-91af05", "claude-sonnet-4-5", 23, 40, False),
        ("proxy-openai-c5e8a17b02d49", "my-local-model", 24, 30, True),
        ("proxy-anthropic-f27b30c8d95e1", "claude-opus-4-8", 25, 75, True),
    ]
    out = []
    for sid, model, day, calls, billed in plans:
        rows: list[tuple[object, ...]] = []
        at = int(datetime(2026, 11, day, 9, rng.randint(0, 50)).timestamp() * 1000)
        off_total = charge_total = 0
        masked = 0
        system = 18_000 if "anthropic" in sid or "vscode" in sid else 9_000
        for n in range(calls):
            grown = rng.randint(1_500, 9_000)
            cold = n == 0 or rng.random() < 0.06
            off_before, charge_before = off_total, charge_total
            off_total += grown
            share = min(0.45, 0.08 + n / calls * 0.5)
            charge_total = int(off_total * (1 - share))
            if n and n % 7 == 0:
                masked += rng.randint(1, 4)
            if cold:
                off = (0, off_total, 0, 0)
                charge = (0, charge_total, 0, 0)
            else:
                off = (off_before, off_total - off_before, 0, 0)
                kept = min(charge_before, charge_total)
                charge = (kept, charge_total - kept, 0, 0)
            usage = None
            if billed:
                read_ = charge[0] + (0 if cold else system)
                write = charge[1] + (system if cold else 0)
                usage = (read_ + write + 30, read_, write, 0, rng.randint(200, 1_800))
            rows.append((at, "model", model, masked, charge, off, usage))
            if n % 23 == 11:
                rows.append((at + 20_000, "retrieve", None, None, None, None, None))
            at += rng.randint(20_000, 140_000)
            if n == calls // 2:
                at += 3 * 3_600_000
        out.append((Seeded(sid, model), rows))
    return out


def make_folder(folder: Path) -> None:
    sessions = made_up_sessions()
    seed(folder, [s for s, _ in sessions])
    with sqlite3.connect(folder / DB_NAME, isolation_level=None) as db:
        for s, rows in sessions:
            for seq, (at, kind, model, masked, charge, off, usage) in enumerate(rows):
                c = charge or (None,) * 4
                o = off or (None,) * 4
                b = usage or (None,) * 5
                sent = None if off is None else sum(off)  # type: ignore[arg-type]
                up = None if charge is None else sum(charge)  # type: ignore[arg-type]
                db.execute(
                    "INSERT INTO calls VALUES (" + ", ".join("?" * 21) + ")",
                    (s.session_id, seq, at, kind, model, masked, sent, up, *c, *o, *b),
                )
    db.close()


async def shoot(folder: Path) -> None:
    from playwright.async_api import async_playwright

    runner, port = await start_page(Dashboard(folder), 0)
    terminal = io.StringIO()
    console = Console(file=terminal, width=80, record=True, force_terminal=True, highlight=False)
    report = read(folder).report
    cli_stats._show_days(console, report, Path(SHOWN_FOLDER), None)
    svg = console.export_svg(title="hdcontext stats")
    try:
        async with async_playwright() as p:
            browser = await p.chromium.launch(
                executable_path="/usr/bin/chromium", args=["--no-sandbox"]
            )
            page = await browser.new_page(viewport={"width": 1100, "height": 900})
            await page.goto(f"http://127.0.0.1:{port}/")
            await page.evaluate(
                "f => { const d = JSON.parse(document.getElementById('hdcontext-stats-data')"
                ".textContent); d.storageDir = f; window.hdcontextStats.render(d); }",
                SHOWN_FOLDER,
            )
            await page.screenshot(path=str(OUT / "stats-page.png"), full_page=True)
            term = await browser.new_page(viewport={"width": 1000, "height": 600})
            await term.set_content(f"<body style='margin:0;background:#fff'>{svg}</body>")
            await term.locator("svg").screenshot(path=str(OUT / "stats-terminal.png"))
            await browser.close()
    finally:
        await runner.cleanup()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "storage"
        make_folder(folder)
        asyncio.run(shoot(folder))
    print(f"wrote {OUT / 'stats-page.png'} and {OUT / 'stats-terminal.png'}")


if __name__ == "__main__":
    main()
