"""The LiteLLM callback decides as ``hdcontext proxy`` does, on real Claude Code sessions (issue
44's last target): ``bench.litellm_replay`` feeds the same ``/v1/messages`` requests, at the same
times, through both paths in this process, each over its own daemon, and tells both each call's
usage as each reads it (the proxy from Anthropic's events, the callback as LiteLLM normalizes
it). Every request must go upstream the same (the conversation, the system prompt, the tools,
every breakpoint and its lifetime), and both daemons' sessions must end alike.

Three small sessions in which hdcontext edits the conversation and asks an hour on some
breakpoints, so that a callback that lost an edit or a mark would show; and the comparison is
held to catching a callback that decides otherwise: one that leaves the system prompt's marks as
the agent sent them (an hour's lifted marks lost), and one that reads LiteLLM's usage without
its cache reads (its daemon's ledger, and then its plans, drift).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bench import claude_logs
from bench.claude_logs import Log
from bench.litellm_replay import Figures, replay
from hdcontext.edges.proxy.usage import Billed
from hdcontext.litellm import gateway as gateway_module
from hdcontext.litellm.billing import billed_of
from hdcontext.litellm.bodies import Request, write_back

SESSIONS = (
    "sample/89488521-e2e7-4d97-bc02",
    "worktrees/agent-a52886dc180afb356",
    "helper/agent-668b5ac2",
)
"""10, 15 and 5 calls: the first two cost about 0.65 and 0.7 of Claude Code's own requests
(hdcontext takes things out), and each asks an hour on a breakpoint at least once."""

FOUND = {log.name: log for log in claude_logs.find()} if claude_logs.LOGS.is_dir() else {}
pytestmark = pytest.mark.skipif(not FOUND, reason=f"no Claude Code logs in {claude_logs.LOGS}")


def logs(*names: str) -> list[Log]:
    return [FOUND[name] for name in names or SESSIONS]


def one_hour_marks(f: Figures, path: str) -> int:
    return sum(any(m.endswith("1h") for m in v[path]["marks"]) for v in f.verdicts)


async def test_the_callback_sends_what_the_proxy_sends(tmp_path: Path) -> None:
    rows = await replay(logs(), tmp_path)

    assert [f.name for f in rows] == list(SESSIONS)
    for f in rows:
        assert f.identical == f.calls, (f.name, f.first_difference)
        assert f.ledgers_equal, f.name
        proxy, litellm = f.paths["proxy"], f.paths["litellm"]
        assert proxy.carried == litellm.carried == f.calls
        assert proxy.cost == litellm.cost and proxy.tokens == litellm.tokens
        assert not proxy.problems and not litellm.problems
        assert one_hour_marks(f, "litellm") >= 1, f.name
    # What makes the comparison worth something: hdcontext changed these requests.
    assert sum(f.paths["litellm"].cost for f in rows) < 0.85 * sum(f.cost_agent for f in rows)


async def test_a_callback_that_drops_the_marks_it_lifted_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The system prompt written back as the agent sent it: the calls whose marks hdcontext
    lifted to an hour differ there, and nowhere else."""

    def conversation_only(request: Request, data: dict[str, Any], compacted: bytes) -> list[str]:
        written = write_back(request, data, compacted)
        if "system" in request.fields:
            data["system"] = request.fields["system"]
        return written

    monkeypatch.setattr(gateway_module, "write_back", conversation_only)
    (f,) = await replay(logs(SESSIONS[0]), tmp_path)

    lifted = one_hour_marks(f, "proxy")
    assert lifted >= 1
    assert f.identical == f.calls - lifted
    assert set(f.differences) == {"system[0] (marks)"}


async def test_a_callback_that_misreads_the_usage_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LiteLLM's usage read without what the call read from the cache: the callback's daemon
    holds other bills than the proxy's."""

    def without_reads(kwargs: Any, response: object) -> Billed | None:
        billed = billed_of(kwargs, response)
        return None if billed is None else replace(billed, cache_read_tokens=0)

    monkeypatch.setattr(gateway_module, "billed_of", without_reads)
    (f,) = await replay(logs(SESSIONS[0]), tmp_path)

    assert not f.ledgers_equal
