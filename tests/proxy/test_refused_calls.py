"""A call the upstream refused (overloaded, rate-limited) or that could not reach it: nothing
was billed and nothing cached. The agent's client retries as it would without the proxy; the
daemon takes the refused call back (``Session.call_refused``), so that ``hdcontext stats``
counts the calls the provider billed, and the retry is priced against what it holds."""

from __future__ import annotations

import socket
import sqlite3
from pathlib import Path

import anthropic
import pytest

from hdcontext.edges.storage.folder import DB_NAME

from .conftest import proxy_in_front_of, start, stop

REFUSAL = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}


def _rows(storage: Path) -> list[tuple[str, bool]]:
    """The ``calls`` rows ``hdcontext stats`` reads: each one's kind, and whether a usage
    filled it in."""
    with sqlite3.connect(storage / DB_NAME) as db:
        rows = db.execute("SELECT kind, billed_input IS NOT NULL FROM calls ORDER BY seq")
        return [(str(kind), bool(billed)) for kind, billed in rows]


@pytest.mark.parametrize("status", [529, 429])
async def test_a_call_the_upstream_refused_is_taken_back_when_the_client_retries(
    tmp_path: Path, status: int
) -> None:
    running, runners = await start(tmp_path, lambda body: [{"type": "text", "text": "done"}])
    try:
        claude = anthropic.AsyncAnthropic(api_key="k", base_url=running.url, max_retries=2)
        messages: list[anthropic.types.MessageParam] = [
            {"role": "user", "content": "look at a.py " * 300}
        ]
        await claude.messages.create(model="claude-sonnet-4-6", max_tokens=9, messages=messages)
        messages += [
            {"role": "assistant", "content": "done"},
            {"role": "user", "content": "and at b.py " * 300},
        ]
        running.fake.refuse, running.fake.refusals = (status, REFUSAL), 1
        reply = await claude.messages.create(
            model="claude-sonnet-4-6", max_tokens=9, messages=messages
        )
        await claude.close()
        assert reply.content[0].type == "text" and reply.content[0].text == "done"
    finally:
        await stop(running, runners)
    assert len(running.fake.api_requests) == 3  # the first call, the refused one, its retry
    # Two calls billed, two rows; the refused one's row (priced, never billed) is gone.
    assert _rows(running.storage) == [("model", True), ("model", True)]


async def test_a_call_that_could_not_reach_the_upstream_is_taken_back(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        nowhere = f"http://127.0.0.1:{probe.getsockname()[1]}"
    storage = tmp_path / "storage"
    async with proxy_in_front_of(nowhere, storage) as (proxy, daemon):
        claude = anthropic.AsyncAnthropic(api_key="k", base_url=proxy.url, max_retries=0)
        with pytest.raises(anthropic.APIStatusError) as raised:
            await claude.messages.create(
                model="claude-sonnet-4-6",
                max_tokens=9,
                messages=[{"role": "user", "content": "look at a.py " * 300}],
            )
        await claude.close()
        assert raised.value.status_code == 502
        (session,) = (await daemon.list({}))["sessions"]
        assert session["entryCount"] == 1  # the conversation is kept; only the call goes
    assert _rows(storage) == []
