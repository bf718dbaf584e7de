"""The marks a real upstream would get through the proxy, turn after turn: never more than
four, in the order Anthropic accepts, never shorter than the agent asked (issues 28 and 32)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import aiohttp

from hdcontext.edges.proxy import compactor
from hdcontext.edges.proxy.marks import count_marks, request_order_ok, ttl_of

from .conftest import start, stop

ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}
FIVE_MINUTES = {"type": "ephemeral"}


def _turns(n: int, mark: dict[str, str], calls: int = 1) -> list[list[dict[str, Any]]]:
    """The agent's requests' conversations: each turn reads ``calls`` long files (more than
    ten make a turn longer than the provider's 20-block lookback, so the daemon marks where
    the previous request's entry ends too); the agent marks its latest two messages, as
    Claude Code does."""
    conversation: list[dict[str, Any]] = [{"role": "user", "content": "tidy the project"}]
    requests = []
    for k in range(n):
        ids = [f"toolu_{k:02d}_{j:02d}" for j in range(calls)]
        conversation.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"step {k}"},
                    *(
                        {"type": "tool_use", "id": i, "name": "Read", "input": {"file": i}}
                        for i in ids
                    ),
                ],
            }
        )
        conversation.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": i,
                        "content": "".join(f"{i}: line {r} of a long file\n" for r in range(60)),
                    }
                    for i in ids
                ],
            }
        )
        sent = [dict(m) for m in conversation]
        for m in sent[-2:]:
            blocks = [dict(b) for b in m["content"]] if isinstance(m["content"], list) else None
            if blocks:
                blocks[-1]["cache_control"] = dict(mark)
                m["content"] = blocks
        requests.append(sent)
    return requests


def _body(messages: list[dict[str, Any]], mark: dict[str, str], **extra: Any) -> dict[str, Any]:
    return {
        "model": "claude-sonnet-4-6",
        "max_tokens": 100,
        "tools": [
            {"name": "Read", "input_schema": {"type": "object"}},
            {"name": "Edit", "input_schema": {"type": "object"}, "cache_control": dict(mark)},
        ],
        "system": [
            {"type": "text", "text": "You are a careful agent.", "cache_control": dict(mark)}
        ],
        "messages": messages,
        **extra,
    }


async def _through(tmp_path: Path, bodies: list[dict[str, Any]], **settings: Any) -> Any:
    running, runners = await start(
        tmp_path, lambda body: [{"type": "text", "text": "ok"}], settings=settings or None
    )
    try:
        async with aiohttp.ClientSession() as client:
            for body in bodies:
                async with client.post(running.url + "/v1/messages", json=body) as response:
                    assert response.status == 200
        sessions = await running.statuses()
        settings_of = [
            await running.daemon.settings_of({"sessionId": s["sessionId"]}) for s in sessions
        ]
    finally:
        await stop(running, runners)
    return [s.body for s in running.fake.api_requests], settings_of


def _message_marks(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        b["cache_control"]
        for m in body["messages"]
        if isinstance(m["content"], list)
        for b in m["content"]
        if "cache_control" in b
    ]


async def test_automatic_caching_with_its_own_tools_and_system_marks_never_gets_five(
    tmp_path: Path,
) -> None:
    bodies = [
        _body(m, FIVE_MINUTES, cache_control=FIVE_MINUTES)
        for m in _turns(6, FIVE_MINUTES, calls=12)
    ]
    received, _ = await _through(tmp_path, bodies, cache={"maxBreakpoints": 4})
    assert len(received) == len(bodies)
    assert all(count_marks(body) <= 4 for body in received)
    assert all(request_order_ok(body) for body in received)
    # The top-level mark stays the agent's, and covers the tail: no message mark doubles it
    # on the last message.
    for body in received:
        assert body["cache_control"] == FIVE_MINUTES
        last = body["messages"][-1]["content"]
        assert not isinstance(last, list) or "cache_control" not in last[-1]
    assert any(_message_marks(body) for body in received)


async def test_an_agent_that_asks_an_hour_gets_an_hour_through_the_proxy(tmp_path: Path) -> None:
    bodies = [_body(m, ONE_HOUR) for m in _turns(6, ONE_HOUR)]
    received, settings_of = await _through(tmp_path, bodies)
    for body in received:
        marks = _message_marks(body)
        assert marks and all(ttl_of(mark) == "1h" for mark in marks)
        assert body["system"][0]["cache_control"] == ONE_HOUR
        assert request_order_ok(body)
    # The session knows: the daemon prices entries that live an hour.
    (settings,) = settings_of
    assert settings["values"]["cache.ttl"] == "1h"
    assert settings["sources"]["cache.ttl"] == "override"


async def test_the_daemons_hours_lift_the_agents_five_minute_marks(tmp_path: Path) -> None:
    """With every breakpoint an hour (``cache.ttl: 1h``) and an agent that asks five minutes,
    its tools and system marks are lifted, or Anthropic would refuse the order."""
    bodies = [_body(m, FIVE_MINUTES) for m in _turns(4, FIVE_MINUTES)]
    received, _ = await _through(tmp_path, bodies, cache={"ttl": "1h"})
    for body in received:
        assert body["system"][0]["cache_control"] == ONE_HOUR
        assert body["tools"][-1]["cache_control"] == ONE_HOUR
        assert all(ttl_of(mark) == "1h" for mark in _message_marks(body))
        assert request_order_ok(body)
    # The client's own request is not changed in place: only what went upstream.
    assert bodies[0]["system"][0]["cache_control"] == FIVE_MINUTES


async def test_the_anthropic_client_asking_an_hour_is_answered_as_without_the_proxy(
    tmp_path: Path,
) -> None:
    """The official client, unchanged, with an hour on its system and message marks and
    automatic caching: its answer is the upstream's, and the upstream got an hour on every
    mark, within four."""
    import anthropic

    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "done"}])
    try:
        claude = anthropic.AsyncAnthropic(api_key="k", base_url=running.url, max_retries=0)
        for messages in _turns(3, ONE_HOUR, calls=12):
            reply = await claude.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=100,
                system=[{"type": "text", "text": "Be brief.", "cache_control": ONE_HOUR}],  # type: ignore[list-item]
                messages=messages,  # type: ignore[arg-type]
                extra_body={"cache_control": ONE_HOUR},
            )
            assert reply.content[0].type == "text" and reply.content[0].text == "done"
        await claude.close()
    finally:
        await stop(running, runners)
    for seen in running.fake.api_requests:
        body = seen.body
        assert count_marks(body) <= 4 and request_order_ok(body)
        assert all(ttl_of(mark) == "1h" for mark in _message_marks(body))
        assert body["cache_control"] == ONE_HOUR


async def test_an_hour_asked_only_in_a_later_request_is_heard(tmp_path: Path) -> None:
    """The proxy looks through a request's new bytes only (the known messages were looked
    through before): an hour first asked on a new message, or at the top of a later request,
    is heard all the same, from that request on."""
    turns = _turns(5, FIVE_MINUTES)
    later = _turns(5, ONE_HOUR)
    on_a_message = [*(_body(m, FIVE_MINUTES) for m in turns[:3]), _body(later[3], FIVE_MINUTES)]
    at_the_top = [
        *(_body(m, FIVE_MINUTES) for m in turns[:3]),
        _body(turns[3], FIVE_MINUTES, cache_control=ONE_HOUR),
    ]
    for case, bodies in (("message", on_a_message), ("top", at_the_top)):
        received, settings_of = await _through(tmp_path / case, bodies)
        (settings,) = settings_of
        assert settings["values"]["cache.ttl"] == "1h", case
        assert all(ttl_of(mark) == "5m" for body in received[:3] for mark in _message_marks(body))
        marks = _message_marks(received[3])
        assert all(ttl_of(mark) == "1h" for mark in marks), case
        assert marks or received[3]["cache_control"] == ONE_HOUR, case


async def test_a_resumed_request_is_looked_through_from_its_new_messages_only(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """What the proxy searches for a mark asking an hour: the whole first body, then, for a
    request that resumes one which held none, only what follows the messages it resumes after.
    The agent moves its marks to its latest messages, so a request resumes a turn or two back:
    what is searched stays about the same as the conversation grows."""
    looked: list[int] = []
    real = compactor.asks_long_in

    def recorded(raw: bytes) -> bool:
        looked.append(len(raw))
        return real(raw)

    monkeypatch.setattr(compactor, "asks_long_in", recorded)
    bodies = [_body(m, FIVE_MINUTES) for m in _turns(4, FIVE_MINUTES, calls=3)]
    await _through(tmp_path, bodies)
    sizes = [len(json.dumps(b).encode()) for b in bodies]
    assert len(looked) == len(bodies), looked
    assert looked[0] > sizes[0] * 0.9, (looked, sizes)  # the first request, whole
    assert max(looked[2:]) <= looked[1] + 1024, (looked, sizes)  # not growing with the history
    assert looked[-1] < sizes[-1] / 2, (looked, sizes)
