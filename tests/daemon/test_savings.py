"""``stats/savings`` over the daemon's real transport: the savings page's figures (and the page,
given a nonce) of the sessions a window names, or of the whole storage folder; read through the
daemon's own store while it runs; priced to the cent by the price table; no conversation in it;
bad params refused with -32602 and nothing changed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hdcontext.core.prices import lookup
from hdcontext.edges.storage.sqlite_reader import ReadOnly

from .harness import Daemon, read_pair, start_daemon, text

SECRET = "zebra-quartz-7741"
"""A word of the conversation that no reply may carry."""
NONCE = "bm9uY2Utb2YtdGhlLXRlc3Q="
T0 = 1_764_000_000_000


def conversation() -> list[dict[str, Any]]:
    return [
        text("human", f"What does a.py print? ({SECRET})"),
        *read_pair("r1", "/w/a.py", f"print('{SECRET}')\n" * 40),
        text("ai", f"It prints {SECRET}, forty times."),
    ]


async def one_call(
    d: Daemon, session: str, model: str, usage: dict[str, int], at: int = T0
) -> None:
    """A session with one model call and what the provider billed for it."""
    await d.call("history/sync", {"sessionId": session, "entries": conversation(), "model": model})
    await d.call("history/compact", {"sessionId": session, "at": at, "reply": "none"})
    await d.call("history/usage", {"sessionId": session, **usage, "at": at + 1000})


SONNET_USAGE = {
    "inputTokens": 20_000,
    "cacheReadTokens": 0,
    "cacheWriteTokens": 18_000,
    "outputTokens": 300,
}


def sonnet_cost() -> float:
    """What ``SONNET_USAGE`` costs at claude-sonnet-4-5's row of the price table: 2,000 plain
    input tokens, 18,000 written for five minutes, 300 out."""
    row = lookup("claude-sonnet-4-5").row
    assert row is not None
    # The row as published (2026-11-26): a change of the table must be a deliberate one.
    assert (row.input, row.cache_write_5m, row.output) == (3.0, 3.75, 15.0)
    return (2_000 * row.input + 18_000 * row.cache_write_5m + 300 * row.output) / 1e6


async def test_the_windows_sessions_are_priced_by_the_table_and_the_page_carries_the_nonce(
    storage: Path,
) -> None:
    async with start_daemon(storage) as d:
        await one_call(d, "chat", "claude-sonnet-4-5", SONNET_USAGE)
        await one_call(d, "local", "my-local-model", SONNET_USAGE, at=T0 + 60_000)
        await one_call(d, "elsewhere", "claude-sonnet-4-5", SONNET_USAGE, at=T0 + 120_000)

        reply = await d.call("stats/savings", {"sessions": ["chat", "local"], "nonce": NONCE})
        figures = reply["figures"]
        totals = figures["totals"]
        assert [s["sessionId"] for s in figures["sessions"]] == ["local", "chat"]
        assert totals["calls"] == 2
        assert totals["pricedCalls"] == 1 and totals["unpricedCalls"] == 1
        assert abs(totals["cost"] - sonnet_cost()) < 1e-6  # to the millionth of a dollar
        assert totals["without"] >= totals["cost"]
        assert totals["unpriced"][0]["model"] == "my-local-model"
        chat = next(s for s in figures["sessions"] if s["sessionId"] == "chat")
        local = next(s for s in figures["sessions"] if s["sessionId"] == "local")
        assert local["cost"] is None and local["tokens"]["model"] == 20_000  # tokens only
        assert chat["pricedAs"] == {"row": "claude-sonnet-4-5", "match": "exact"}
        assert figures["currency"] == "USD" and figures["storageDir"] == str(storage)
        assert reply["missing"] == []

        page = reply["html"]
        assert f'<script nonce="{NONCE}">' in page and f'<style nonce="{NONCE}">' in page
        assert page.count("<script") == 2  # the figures' JSON and the nonce'd script
        assert '"sessionId":"chat"' in page

        # Without sessions: the whole storage folder; without a nonce: no page.
        every = await d.call("stats/savings", {})
        assert every["html"] is None
        assert {s["sessionId"] for s in every["figures"]["sessions"]} == {
            "chat",
            "local",
            "elsewhere",
        }
        assert abs(every["figures"]["totals"]["cost"] - 2 * sonnet_cost()) < 1e-6
        # params may be left out, as for history/list.
        assert (await d.call("stats/savings", None))["figures"]["totals"]["calls"] == 3


async def test_new_usage_shows_in_the_next_reply(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await one_call(d, "chat", "claude-sonnet-4-5", SONNET_USAGE)
        first = (await d.call("stats/savings", {"sessions": ["chat"]}))["figures"]["totals"]
        await d.call("history/compact", {"sessionId": "chat", "at": T0 + 60_000, "reply": "none"})
        await d.call("history/usage", {"sessionId": "chat", **SONNET_USAGE, "at": T0 + 61_000})
        second = (await d.call("stats/savings", {"sessions": ["chat"]}))["figures"]["totals"]
        assert (first["calls"], second["calls"]) == (1, 2)
        assert abs(second["cost"] - 2 * sonnet_cost()) < 1e-6
        assert not d.warnings()


async def test_a_session_the_folder_does_not_hold_is_missing_not_an_error(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await one_call(d, "chat", "claude-sonnet-4-5", SONNET_USAGE)
        reply = await d.call("stats/savings", {"sessions": ["gone", "chat", "gone"]})
        assert reply["missing"] == ["gone"]
        assert [s["sessionId"] for s in reply["figures"]["sessions"]] == ["chat"]
        # As many ids as a request may name (more than an older SQLite takes in one query).
        many = [f"gone-{i}" for i in range(999)] + ["chat"]
        reply = await d.call("stats/savings", {"sessions": many})
        assert [s["sessionId"] for s in reply["figures"]["sessions"]] == ["chat"]
        assert len(reply["missing"]) == 999
        nothing = await d.call("stats/savings", {"sessions": []})
        assert nothing["figures"]["totals"]["calls"] == 0
        assert nothing["figures"]["totals"]["cost"] is None


async def test_no_conversation_content_in_the_figures_or_the_page(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await one_call(d, "chat", "claude-sonnet-4-5", SONNET_USAGE)
        await d.call("history/retrieve", {"sessionId": "chat", "callId": "r1"})
        reply = await d.call("stats/savings", {"nonce": NONCE})
        assert SECRET not in json.dumps(reply)
        assert reply["figures"]["totals"]["fetchedBack"] == 1


BAD_PARAMS: list[tuple[Any, str]] = [
    ({"sessions": "chat"}, "sessions"),
    ({"sessions": [5]}, "sessions[0]"),  # the wire is strict: no coercion
    ({"sessions": [""]}, "sessions[0]"),
    ({"sessions": ["chat"] * 1001}, "sessions"),
    ({"nonce": "short"}, "nonce"),
    ({"nonce": 'a"><script>alert(1)</script>'}, "nonce"),
    ({"nonce": 12345678901234567890}, "nonce"),
    ([["chat"]], "params"),
]


async def test_bad_params_are_refused_with_32602_and_change_nothing(storage: Path) -> None:
    async with start_daemon(storage) as d:
        await one_call(d, "chat", "claude-sonnet-4-5", SONNET_USAGE)
        before = await d.call("stats/savings", {"sessions": ["chat"]})
        with ReadOnly(storage) as db:
            rows = db.calls()
        tokens = len(d.tokens)
        for params, where in BAD_PARAMS:
            error = await d.fails("stats/savings", params)
            assert error.code == -32602, (params, error)
            assert where in str(error.message), (params, error.message)
            assert "<script>" not in str(error.message)
        after = await d.call("stats/savings", {"sessions": ["chat"]})
        assert after["figures"]["totals"] == before["figures"]["totals"]
        with ReadOnly(storage) as db:
            assert db.calls() == rows
        assert len(d.tokens) == tokens  # no Status was sent: nothing changed


async def test_writes_a_client_says_were_for_an_hour_are_priced_at_the_hour(
    storage: Path,
) -> None:
    """``cacheWrite1hTokens``: the part of the writes made for an hour, billed at 2x the input
    price where the rest is 1.25x (a client that reads Anthropic's ``cache_creation``)."""
    async with start_daemon(storage) as d:
        await one_call(d, "five", "claude-sonnet-4-5", SONNET_USAGE)
        hour = {**SONNET_USAGE, "cacheWrite1hTokens": 18_000}
        await one_call(d, "hour", "claude-sonnet-4-5", hour, at=T0 + 60_000)
        figures = (await d.call("stats/savings", {}))["figures"]
        cost = {s["sessionId"]: s["cost"] for s in figures["sessions"]}
        row = lookup("claude-sonnet-4-5").row
        assert row is not None and row.cache_write_1h is not None
        assert abs(cost["five"] - sonnet_cost()) < 1e-6
        expected = sonnet_cost() + 18_000 * (row.cache_write_1h - row.cache_write_5m) / 1e6
        assert abs(cost["hour"] - expected) < 1e-6


async def test_hour_writes_beyond_the_writes_are_refused_and_change_nothing(
    storage: Path,
) -> None:
    async with start_daemon(storage) as d:
        await one_call(d, "s", "claude-sonnet-4-5", SONNET_USAGE)

        async def figures() -> dict[str, Any]:
            found = dict((await d.call("stats/savings", {}))["figures"])
            del found["generatedAt"]
            return found

        before = await figures()
        for bad, path in (
            ({**SONNET_USAGE, "cacheWrite1hTokens": 18_001}, "cacheWrite1hTokens"),
            ({"inputTokens": 10, "cacheWrite1hTokens": 5}, "cacheWrite1hTokens"),
            ({**SONNET_USAGE, "stopReason": "x" * 65}, "stopReason"),
            ({**SONNET_USAGE, "stopReason": 7}, "stopReason"),
        ):
            err = await d.fails("history/usage", {"sessionId": "s", **bad})
            assert err.code == -32602 and path in err.message
        assert await figures() == before
