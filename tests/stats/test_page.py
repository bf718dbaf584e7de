"""The savings page in a real headless Chromium (Debian's, driven by the ``playwright``
package without its browser download), served as ``hdcontext stats --serve`` serves it, over
the seeded folder of ``test_stats_cli.py``: the totals and a session's row read as expected,
the charts render (screenshots in test-artifacts/stats/), the page asks the network for
nothing, new figures posted to it (as the editor's webview does) redraw it, and a request
with an ``Origin`` header is refused."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from hdcontext.edges.proxy.dashboard import Dashboard, start_page
from hdcontext.edges.storage.location import Location

from .seed import seed
from .test_stats_cli import ARTIFACTS, SESSIONS

CHROMIUM = os.environ.get("HDCONTEXT_CHROMIUM", "/usr/bin/chromium")


@pytest.fixture
def chromium() -> str:
    if os.environ.get("HDC_SKIP_EDITOR_TESTS") == "1":
        pytest.skip("HDC_SKIP_EDITOR_TESTS=1")
    if not (os.access(CHROMIUM, os.X_OK) or shutil.which(CHROMIUM)):
        pytest.skip(
            f"no Chromium at {CHROMIUM}: 'make e2e' installs Debian's (its setup, "
            "client-extension/test/e2e/setup.sh, runs apt-get install chromium)"
        )
    pytest.importorskip("playwright.async_api", reason="the playwright package (pip, .[dev])")
    return CHROMIUM


AS_SENT = {
    "asSent": 3,
    "reasons": [
        {"why": "anthropic not carried: messages[4].content[1] has block type 'x'", "requests": 2},
        {"why": "openai not carried: messages[2] is a refusal", "requests": 1},
    ],
    "notForwarded": 1,
    "notForwardedReasons": [{"why": "/api/chat is not a path of an API it serves", "requests": 1}],
}
"""What a running proxy adds to the figures: the requests it sent as they came, and why."""


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[str]:
    folder = tmp_path / "storage"
    await asyncio.to_thread(seed, folder, SESSIONS)
    runner, port = await start_page(Dashboard(Location(folder=folder), live=lambda: AS_SENT), 0)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def test_the_page_in_chromium(chromium: str, served: str) -> None:
    from playwright.async_api import async_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    asked: list[str] = []
    problems: list[str] = []
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = await browser.new_page(viewport={"width": 1100, "height": 900})
            page.on("request", lambda r: asked.append(r.url))
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
            response = await page.goto(served + "/")
            assert response is not None and response.status == 200

            async def text(testid: str) -> str:
                return await page.inner_text(f'[data-testid="{testid}"]')

            assert await text("total-cost") == "$0.27"
            assert await text("total-without") == "$0.31"
            assert await text("total-saved") == "$0.04"
            assert await text("total-saved-sub") == "13% of what it would have cost"
            assert await text("total-calls") == "8"
            assert await text("total-calls-sub") == "1 refresh call ($0.01)"
            assert await text("total-masked") == "5"
            assert await text("total-cost-sub") == "of which $0.01 estimated (1 call without usage)"
            assert "2 calls shown in tokens only" in await text("unpriced")
            assert await text("as-sent") == (
                "3 requests since the proxy started went to the model as the agent sent them, "
                "nothing taken out: anthropic not carried: messages[4].content[1] has block "
                "type 'x' (2); openai not carried: messages[2] is a refusal (1)"
            )
            assert await text("not-forwarded") == (
                "1 request since the proxy started was answered by the proxy and forwarded "
                "nowhere: /api/chat is not a path of an API it serves (1)"
            )

            row = page.locator('#sessions tr[data-session="sess-sonnet"] td')
            assert await row.all_inner_texts() == [
                "sess-sonnet",
                "claude-sonnet-4-5",
                "2026-11-21 12:05:00",
                "5 +1",
                "177k → 179k",
                "$0.26*",
                "$0.30",
                "$0.04 (13%)",
            ]
            tokens_only = page.locator('#sessions tr[data-session="sess-mystery"] td')
            assert (await tokens_only.all_inner_texts())[-1] == "tokens only"

            # Cost per day: a bar with and one without for each of the two days, drawn.
            daily = page.locator("#daily-chart")
            for kind in ("bar-with", "bar-without"):
                bars = daily.locator(f"rect.{kind}")
                assert await bars.count() == 2
                for i in range(2):
                    box = await bars.nth(i).bounding_box()
                    assert box is not None and box["height"] > 1 and box["width"] > 1
            await daily.screenshot(path=str(ARTIFACTS / "daily-chart.png"))

            # A session's calls: what the agent sent, what went up, what the cache served.
            await page.locator('#sessions tr[data-session="sess-sonnet"]').click()
            assert await text("session-title") == "Session sess-sonnet"
            chart = page.locator("#session-chart")
            assert await chart.locator("rect.bar-agent").count() == 6
            assert await chart.locator("rect.bar-model").count() == 5
            assert await chart.locator("rect.bar-refresh").count() == 2  # its bar and its mark
            assert await chart.locator("rect.bar-read").count() == 6
            await chart.screenshot(path=str(ARTIFACTS / "session-chart.png"))
            await page.screenshot(path=str(ARTIFACTS / "page.png"), full_page=True)

            # The editor's webview posts new figures to the same page: it redraws.
            figures: Any = await page.evaluate(
                "JSON.parse(document.getElementById('hdcontext-stats-data').textContent)"
            )
            figures["totals"]["cost"] = 1234.5
            await page.evaluate(
                "f => window.postMessage({type: 'hdcontext.stats', figures: f}, '*')", figures
            )
            await page.wait_for_function(
                "document.querySelector('[data-testid=\"total-cost\"]').textContent === '$1,234.50'"
            )

            # A request with an Origin (a web page's) is refused, from the browser too.
            refused = await page.request.get(
                served + "/hdcontext/stats.json", headers={"Origin": "http://evil.example"}
            )
            assert refused.status == 403
        finally:
            await browser.close()
    assert asked == [served + "/"]  # nothing else: no CDN, no font, no fetch
    assert problems == []  # no script error, no content-security-policy violation


async def test_only_local_programs_may_read_the_page(served: str) -> None:
    port = served.rsplit(":", 1)[1]
    async with aiohttp.ClientSession() as client:
        for headers in (
            {"Origin": served},
            {"Origin": "null"},
            {"Host": f"evil.example:{port}"},
        ):
            for path in ("/", "/hdcontext/stats.json"):
                async with client.get(served + path, headers=headers) as response:
                    assert response.status == 403
                    assert "hdcontext" in (await response.json())["error"]["message"]
        async with client.get(served + "/") as response:
            assert response.status == 200
            assert "script-src 'sha256-" in response.headers["Content-Security-Policy"]
        async with client.get(served + "/v1/messages") as response:
            assert response.status == 404  # the page alone: no proxy behind it
