"""The real Gemini CLI sessions in the shared data, as the CLI sent them, through the proxy.

Each of the twelve files (eight chat recordings, four ``/chat save`` checkpoints) is read back
into the ``streamGenerateContent`` bodies Gemini CLI 0.61 sends (``bench/gemini_recordings.py``,
``bench/gemini_send.py``): models 2.5 Pro, 2.5 Flash and 3 Flash, one model changed mid-session,
parallel calls, cancelled calls, an MCP tool that answered nothing, an inline PDF, the old CLIs'
bare calls answered under ids the CLI made, thought signatures on the first call of each turn
and the CLI's own ``skip_thought_signature_validator`` on the current turn's unsigned ones. A
part the proxy cannot carry sends the request upstream as it came, and every later request of
the conversation with it: nothing is saved from there on, and only the log says so. A request
it carries but rebuilds wrongly is worse: Gemini refuses it (a call without its response, a
signature moved, dropped or altered), and the CLI's turn fails.

So every request of every session goes through the proxy's own ``Compactor`` in order, each
project's sessions in one daemon and each call's usage told to it as the bench does
(``bench/gemini_replay.py``, a few seconds for the 343 requests), and each must be carried, or
go as it came for a reason named here; what the proxy would send must be one Gemini takes
(``bench/gemini_checks.py``: calls paired with their responses, every signature on its part
byte for byte). ``python -m bench.gemini_replay`` prices them.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
from collections import defaultdict
from typing import Any

import orjson
import pytest

from bench.gemini_recordings import FILES, Call, Session, find
from bench.gemini_replay import PASSED, prompts, replay_project
from bench.gemini_send import MASK_TAG, SKIP_SIGNATURE, requests
from bench.gemini_units import Counts

SESSIONS = find() if FILES.is_dir() else []
pytestmark = pytest.mark.skipif(not SESSIONS, reason=f"no Gemini CLI files in {FILES}")

EXPECTED = {"checkpoint-eww": {PASSED: 1}}
"""Requests that go as they came, and why: the PDF checkpoint's first request is a conversation
of 1.4 MB the proxy has not seen, forwarded at once while the daemon takes it in."""


@functools.cache
def prompt_units() -> dict[str, int]:
    """Each session's prompt unit, sized from the recordings' real usage."""
    return prompts(SESSIONS, Counts())


def by_project() -> dict[str, list[Session]]:
    out: dict[str, list[Session]] = defaultdict(list)
    for session in SESSIONS:
        out[session.project].append(session)
    return dict(out)


def test_the_files_hold_every_shape_this_guards() -> None:
    assert len(SESSIONS) == 12
    assert sorted(s.kind for s in SESSIONS).count("checkpoint") == 4
    models = {c.model for s in SESSIONS for c in s.calls}
    assert models == {"gemini-2.5-pro", "gemini-2.5-flash", "gemini-3-flash-preview"}
    text = b"".join(r.body() for s in SESSIONS for r in requests(s)[-1:])
    assert b'"response":{}' in text  # an MCP tool that answered nothing
    assert b'"mimeType":"application/pdf"' in text
    assert SKIP_SIGNATURE.encode() in text
    bare = [
        p
        for s in SESSIONS
        if s.kind == "checkpoint"
        for c in s.history
        for p in c["parts"]
        if "functionCall" in p and "id" not in p["functionCall"]
    ]
    assert bare  # the old CLIs' calls, answered under ids the CLI made


def test_requests_are_as_gemini_cli_writes_them() -> None:
    """The body's members in the CLI's order, the preamble and the first prompt one content,
    a call ``{id, args, name}`` signed on its first part, a response ``{name, response, id}``."""
    session = next(s for s in SESSIONS if s.kind == "recording" and len(s.calls) > 10)
    made = requests(session)
    body = orjson.loads(made[-1].body())
    assert list(body) == ["contents", "systemInstruction", "tools", "generationConfig"]
    first = body["contents"][0]
    assert [list(p) for p in first["parts"]] == [["text"], ["text"]]
    assert first["parts"][0]["text"].startswith("<session_context>")
    calls = [p for c in body["contents"] for p in c["parts"] if "functionCall" in p]
    assert list(calls[0]["functionCall"]) == ["id", "args", "name"]
    assert "thoughtSignature" in calls[0]
    answer = next(p for c in body["contents"] for p in c["parts"] if "functionResponse" in p)
    assert list(answer["functionResponse"]) == ["name", "response", "id"]
    for before, after in itertools.pairwise(made):
        assert after.contents[: len(before.contents) - 1] == before.contents[:-1]


def test_the_cli_masks_old_output_as_0_61_does() -> None:
    """No real session reaches the CLI's own masking (80,000 estimated tokens of output), so
    a made one does: past the newest 50,000 tokens, once 30,000 are prunable, each old output
    becomes its masked preview for good; a skill's output is exempt."""
    history: list[dict[str, Any]] = [{"parts": [{"text": "go"}], "role": "user"}]
    sizes = [140_000, 140_000, 96_000, 96_000, 10]  # 35,000, 24,000 and 2 tokens estimated
    for k, name in enumerate(["read_file", "activate_skill", "read_file", "read_file", "glob"]):
        call = {"functionCall": {"id": f"c{k}", "args": {}, "name": name}}
        output = {"output": str(k) * sizes[k]}
        history.append({"parts": [call], "role": "model"})
        response = {"functionResponse": {"name": name, "response": output, "id": f"c{k}"}}
        history.append({"parts": [response], "role": "user"})
    calls = tuple(
        Call(k, k * 1000, k * 1000 + 500, "gemini-2.5-pro", 2 * k + 1, None, True) for k in range(6)
    )
    made = Session("made", "p", FILES, "recording", "s", 0, tuple(history), calls, (), "p")
    made_requests = requests(made)
    assert [r.masked for r in made_requests] == [0, 0, 0, 0, 1, 1]
    *_, before, last = made_requests
    outputs = [
        p["functionResponse"] for c in last.contents for p in c["parts"] if "functionResponse" in p
    ]
    masked = [f"<{MASK_TAG}>" in str(o["response"]["output"]) for o in outputs]
    assert masked == [True, False, False, False, False]
    assert list(outputs[0]) == ["name", "response", "id"]
    assert before.contents[2] is last.contents[2]  # for good: the history keeps it


@pytest.mark.parametrize("project", sorted(by_project()))
def test_every_request_is_carried_and_sent_valid(project: str) -> None:
    sessions = by_project()[project]
    rows = asyncio.run(replay_project(sessions, prompt_units()))
    for session in sessions:
        figures = rows[session.name]
        assert figures.requests == len(session.calls)
        assert dict(figures.not_carried) == EXPECTED.get(session.name, {}), session.name
        assert figures.invalid == 0, f"{session.name}: {dict(figures.problems)}"
    assert sum(f.signatures for f in rows.values()) > 0  # each project's were checked
