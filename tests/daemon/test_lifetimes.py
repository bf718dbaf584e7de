"""The prompt cache's lifetime on the wire (PROTOCOL.md "The prompt cache's lifetime"), over
the real transport: ``cache.breakpointTtls`` beside ``cache.breakpoints``, the longer lifetime
never after the shorter, an agent's hour never shortened, ``history/refresh`` and its errors,
and bad settings that change nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .harness import start_daemon, text, tool_call, tool_response

MINUTE = 60_000


def _exchange(n: int, size: int = 60) -> list[dict[str, Any]]:
    """A read and its result, then the model's answer and the person's next question."""
    body = "".join(f"    line {k} of file {n} = compute({k})\n" for k in range(size))
    return [
        {
            "speaker": "ai",
            "blocks": [
                {"type": "tool_call", "id": f"r{n}", "name": "Read", "parameters": {"p": n}}
            ],
        },
        {
            "speaker": "tool",
            "blocks": [
                {"type": "tool_response", "callId": f"r{n}", "toolName": "Read", "result": body}
            ],
        },
        {"speaker": "ai", "blocks": [{"type": "text", "text": f"Read part {n}."}]},
        {"speaker": "human", "blocks": [{"type": "text", "text": f"Go on ({n})."}]},
    ]


async def _session(d: Any, settings: dict[str, Any], calls: int = 6) -> list[dict[str, Any]]:
    """A session with ``settings`` as overrides and ``calls`` model calls a minute apart."""
    await d.call("history/open", {"sessionId": "s", "model": "claude-sonnet-4-6"})
    for key, value in settings.items():
        await d.call("history/setOverride", {"sessionId": "s", "key": key, "value": value})
    question = [{"speaker": "human", "blocks": [{"type": "text", "text": "Read it all."}]}]
    await d.call("history/append", {"sessionId": "s", "entries": question})
    results = []
    for n in range(calls):
        if n:
            await d.call("history/append", {"sessionId": "s", "entries": _exchange(n)})
        at = 1_000_000 + n * MINUTE
        results.append(await d.call("history/compact", {"sessionId": "s", "at": at}))
    return results


def _in_order(ttls: list[str]) -> bool:
    """Every 1h before every 5m, as Anthropic requires."""
    return ttls == sorted(ttls, key=lambda t: t != "1h")


async def test_each_breakpoint_gets_a_lifetime_and_the_longer_come_first(storage: Path) -> None:
    async with start_daemon(storage) as d:
        for reply in await _session(d, {"cache.ttl": "auto"}):
            cache = reply["cache"]
            assert len(cache["breakpointTtls"]) == len(cache["breakpoints"])
            assert set(cache["breakpointTtls"]) <= {"5m", "1h"}
            assert _in_order(cache["breakpointTtls"])
            assert cache["refreshAt"] is None  # cache.refresh is off


async def test_the_default_asks_five_minutes_and_an_agent_hour_is_never_shortened(
    storage: Path,
) -> None:
    async with start_daemon(storage) as d:
        for reply in await _session(d, {}):
            assert set(reply["cache"]["breakpointTtls"]) == {"5m"}
    async with start_daemon(storage / "hour") as d:
        for reply in await _session(d, {"cache.ttl": "1h"}):
            assert set(reply["cache"]["breakpointTtls"]) == {"1h"}


async def test_a_refresh_sends_what_the_provider_holds_and_names_the_next(storage: Path) -> None:
    settings = {"cache.ttl": "auto", "cache.refresh": True}
    async with start_daemon(storage) as d:
        replies = await _session(d, settings)
        last = replies[-1]
        assert "refreshAt" in last["cache"]
        at = last["cache"]["refreshAt"] or 1_000_000 + 9 * MINUTE
        refreshed = await d.call("history/refresh", {"sessionId": "s", "at": at})
        assert refreshed["density"] is None and refreshed["compression"] is None
        sent = refreshed["history"]
        if sent:
            # A prefix of the last request, ending where a request may end.
            assert sent == last["history"][: len(sent)]
            assert refreshed["cache"]["breakpoints"][-1] == len(sent) - 1
            assert _in_order(refreshed["cache"]["breakpointTtls"])
        else:
            assert refreshed["cache"]["refreshAt"] is None


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"sessionId": "other", "at": 2_000_000}, -32001),
        ({"sessionId": "s", "at": 1_000}, -32602),  # before the session's last call
        ({"sessionId": "s", "at": "soon"}, -32602),
        ({"sessionId": "s", "at": -5}, -32602),
    ],
)
async def test_a_bad_refresh_gets_its_code_and_changes_nothing(
    storage: Path, params: dict[str, Any], code: int
) -> None:
    async with start_daemon(storage) as d:
        await _session(d, {"cache.refresh": True}, calls=2)
        before = await d.call("history/get", {"sessionId": "s"})
        err = await d.fails("history/refresh", params)
        assert err.code == code
        assert await d.call("history/get", {"sessionId": "s"}) == before


@pytest.mark.parametrize(
    ("key", "value"),
    [("cache.ttl", "24h"), ("cache.ttl", 3600), ("cache.refresh", "yes"), ("cache.refresh", 1)],
)
async def test_a_bad_lifetime_setting_is_refused_and_the_previous_value_stands(
    storage: Path, key: str, value: object
) -> None:
    async with start_daemon(storage, init_settings={"cache.ttl": "auto"}) as d:
        await d.call("history/open", {"sessionId": "s"})
        err = await d.fails("history/setOverride", {"sessionId": "s", "key": key, "value": value})
        assert err.code == -32602 and key in err.message
        got = await d.call("history/settings", {"sessionId": "s"})
        assert got["values"]["cache.ttl"] == "auto" and got["values"]["cache.refresh"] is False


async def _paused(d: Any, session: str) -> int:
    """A session whose calls saved tokens (a file read again and again, the stale reads pruned
    at a cold call after a pause), its last call at 1,600,000 ms; the moment its refresh is due."""
    await d.call("history/open", {"sessionId": session, "model": "claude-sonnet-4-6"})
    for key, value in {"cache.refresh": True, "cache.maxBreakpoints": 2}.items():
        await d.call("history/setOverride", {"sessionId": session, "key": key, "value": value})
    await d.call("history/append", {"sessionId": session, "entries": [text("human", "look")]})
    body = "".join(f"line {k} = compute({k})\n" for k in range(400))
    at = 1_000_000
    for n in range(8):
        read = [
            tool_call(f"r{n}", "Read", {"file_path": f"/w/{n % 2}.py"}),
            tool_response(f"r{n}", "Read", body),
        ]
        await d.call("history/append", {"sessionId": session, "entries": read})
        await d.call("history/compact", {"sessionId": session, "at": at, "reply": "none"})
        at += 20_000 if n != 5 else 400_000
    last = await d.call("history/compact", {"sessionId": session, "at": 1_600_000})
    due = last["cache"]["refreshAt"]
    assert isinstance(due, int) and due > 1_600_000
    return due


async def test_a_client_that_appends_no_answer_says_how_it_ended(storage: Path) -> None:
    """``history/usage``'s ``stopReason``: an answer that called a tool comes back within
    seconds, so keeping its cache alive pays; one that waits on a person, or one whose end
    nobody said, is not worth a refresh here."""
    refreshed = {}
    async with start_daemon(storage) as d:
        for reason in ("tool_use", "end_turn", None):
            session = f"s-{reason}"
            due = await _paused(d, session)
            # As billed: nearly all of it read from the cache, as the daemon expected.
            usage: dict[str, Any] = {
                "sessionId": session,
                "inputTokens": 9_700,
                "cacheReadTokens": 9_000,
                "cacheWriteTokens": 500,
                "at": 1_601_000,
            }
            if reason is not None:
                usage["stopReason"] = reason
            await d.call("history/usage", usage)
            reply = await d.call("history/refresh", {"sessionId": session, "at": due})
            refreshed[reason] = bool(reply["history"])
    assert refreshed == {"tool_use": True, "end_turn": False, None: False}
