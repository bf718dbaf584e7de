"""The real Codex CLI sessions in the shared data, as Codex sent them, through the proxy.

Each rollout is read back into the ``POST /v1/responses`` bodies Codex sent
(``bench/codex_rollouts.py``): Codex CLI 0.34 to 0.105, its ``shell``, ``shell_command``,
``exec_command`` and ``apply_patch`` calls, encrypted reasoning, a remote compaction, a web
search, a resumed session, a model changed mid-session. An item the proxy cannot carry sends the
request upstream as it came, and every later request of the conversation with it: nothing is
saved from there on, and only the log says so. A request it carries but rebuilds wrongly is
worse: OpenAI refuses it (a call without its output, a reasoning item not its own byte for byte,
or without the item it led), and Codex's turn fails.

So every item of every rollout must come back from IContent as it came, and the proxy's own
``Compactor`` is fed a sample of each session's requests in order (each project's sessions in
one daemon, as a user's proxy sees them), the sample holding, for every item kind a session
sends, the first request that sends it, and its last request: each must be carried, and what the
proxy would send must be one OpenAI takes (``bench/responses_checks.py``), its reasoning and
compaction items Codex's bytes. ``python -m bench.codex_replay`` replays every request and
prices them.
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from bench import responses_checks
from bench.codex_rollouts import ROLLOUTS, Request, Rollout, find, kind_of
from bench.responses_units import encoded
from hdcontext.edges.daemon.daemon import Daemon
from hdcontext.edges.daemon.ide_settings import IdeSettings
from hdcontext.edges.proxy.api import Unsupported
from hdcontext.edges.proxy.compactor import GLANCED, Compactor
from hdcontext.edges.proxy.responses import ResponsesApi
from hdcontext.edges.proxy.run import _NoEditor
from hdcontext.edges.storage.folder import prepare_folder

API = ResponsesApi()
SPREAD = 2
"""Requests of each session sampled besides those that bring a new item kind, evenly spaced."""
NO_CALL = {"2025-09-26T19-45-48": "a two-line stub: its one user message got no reply"}
"""Sessions that made no model call, and why: they send nothing to carry."""
KINDS = {
    "message:user",
    "message:assistant",
    "message:developer",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "compaction",
    "web_search_call",
}
"""The item kinds the rollouts send, all of them checked."""

ROLLOUTS_FOUND = find() if ROLLOUTS.is_dir() else []
pytestmark = pytest.mark.skipif(not ROLLOUTS_FOUND, reason=f"no Codex rollouts in {ROLLOUTS}")


def by_project() -> dict[str, list[Rollout]]:
    out: dict[str, list[Rollout]] = defaultdict(list)
    for rollout in ROLLOUTS_FOUND:
        out[rollout.project].append(rollout)
    return dict(out)


def sample(rollout: Rollout) -> list[Request]:
    """The first request that sends each item kind, a few evenly spaced, the last, in order."""
    picked: set[int] = set()
    seen: set[str] = set()
    for request in rollout.requests:
        kinds = {_kind(item) for item in request.items}
        if kinds - seen:
            picked.add(request.index)
            seen |= kinds
    n = len(rollout.requests)
    if n:
        picked |= {n * (k + 1) // (SPREAD + 1) for k in range(SPREAD)} | {n - 1}
    return [rollout.requests[i] for i in sorted(picked) if i < n]


def _kind(item: dict[str, Any]) -> str:
    kind = kind_of(item)
    return f"message:{item.get('role')}" if kind == "message" else kind


def histories(rollout: Rollout) -> list[Request]:
    """The requests that hold every item the session sent: the last one, and the last one
    before each time Codex's history was replaced (a compaction)."""
    out: list[Request] = []
    for request, after in zip(rollout.requests, rollout.requests[1:], strict=False):
        head = after.items[: len(request.items)]
        if len(head) < len(request.items) or any(
            a is not b for a, b in zip(head, request.items, strict=True)
        ):
            out.append(request)
    return [*out, *rollout.requests[-1:]]


def test_the_rollouts_hold_every_item_kind_and_edge() -> None:
    """What this guards is there: every item kind, the stub, the resumed session."""
    assert len(ROLLOUTS_FOUND) == 20
    assert set().union(*(r.kinds for r in ROLLOUTS_FOUND)) == KINDS
    assert {r.name for r in ROLLOUTS_FOUND if not r.requests} == set(NO_CALL)
    (resumed,) = [r for r in ROLLOUTS_FOUND if r.resumed_from]
    assert resumed.replayed_calls > 0 and resumed.requests


@pytest.mark.parametrize("rollout", ROLLOUTS_FOUND, ids=lambda r: f"{r.project[:16]}/{r.name}")
def test_every_item_comes_back_as_it_came(rollout: Rollout) -> None:
    for request in histories(rollout):
        items = list(request.items)
        try:
            API.check(items[API.head(items) :], API.head(items))
        except Unsupported as exc:
            pytest.fail(f"request {request.index}: {exc}")


@contextlib.asynccontextmanager
async def compactor_on(storage: Path) -> AsyncIterator[Compactor]:
    """The proxy's compactor over a daemon on ``storage``, as ``hdcontext proxy`` makes it."""
    prepare_folder(storage)
    daemon = Daemon(_NoEditor(), storage, IdeSettings())
    await daemon.start()
    compactor = Compactor(daemon, bound_s=120.0)
    try:
        yield compactor
        await compactor.close()
    finally:
        await daemon.shutdown()
        await daemon.store.close()


@pytest.mark.parametrize("project", sorted(by_project()))
async def test_every_request_is_carried_and_sent_valid(project: str, tmp_path: Path) -> None:
    async with compactor_on(tmp_path / "storage") as compactor:
        for rollout in by_project()[project]:
            for request in sample(rollout):
                await _through(compactor, rollout, request)


async def test_a_turn_the_first_glance_cuts_is_carried(tmp_path: Path) -> None:
    """A conversation the proxy has not seen (a restart, a resumed session, a model changed:
    the body's first bytes differ) is named from its first items; when they end inside a
    turn of the model, on a reasoning item whose call comes after them, that reasoning is
    not read as led by nothing (Quelklef's last request, after its model changed)."""
    items: list[dict[str, Any]] = [
        {"type": "message", "role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": "Count the files."},
    ]
    for k in range(31):
        items += _call(f"c{k}")
    assert len(items) - 1 == GLANCED - 1
    items.append({"type": "reasoning", "summary": [], "encrypted_content": "gAAAA-secret"})
    items += _call("last")
    body = {"model": "gpt-5-codex", "input": items, "store": False}
    async with compactor_on(tmp_path / "storage") as compactor:
        compacted = await compactor.compact(API, orjson.dumps(body), client="codex_cli_rs")
    assert not compacted.passed
    assert b'"encrypted_content":"gAAAA-secret"' in compacted.body


def _call(call_id: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command":["ls"]}',
            "call_id": call_id,
        },
        {"type": "function_call_output", "call_id": call_id, "output": "a.txt"},
    ]


async def _through(compactor: Compactor, rollout: Rollout, request: Request) -> None:
    where = f"{rollout.name} request {request.index}"
    raw = request.body()
    compacted = await compactor.compact(API, raw, client="codex_cli_rs", at=request.at)
    assert not compacted.passed, where
    sent = orjson.loads(compacted.body)
    raw_blobs = [encoded(item)[0] for item in request.items]
    sent_blobs = [encoded(item)[0] for item in sent["input"]]
    found = responses_checks.problems(request.items, raw_blobs, request.rest(), sent, sent_blobs)
    assert not found, f"{where}: {found}"
    _own_bytes(compacted.body, request.items, sent["input"], where)


def _own_bytes(
    body: bytes, items: Sequence[dict[str, Any]], sent: Sequence[dict[str, Any]], where: str
) -> None:
    """Each reasoning and compaction item sent is Codex's, as the very bytes Codex wrote."""
    own = {
        str(item.get("encrypted_content")): orjson.dumps(item)
        for item in items
        if item.get("type") in ("reasoning", "compaction")
    }
    for item in sent:
        if item.get("type") in ("reasoning", "compaction"):
            data = own.get(str(item.get("encrypted_content")))
            assert data is not None and data in body, f"{where}: a {item['type']} item changed"
