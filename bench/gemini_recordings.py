"""Gemini CLI's chat recordings and ``/chat save`` checkpoints read back into the history the
CLI held at each call of its model.

The files are the twelve of ``../shared/data/transcripts/gemini/`` (the README there describes
their forms). Neither keeps the requests: a recording keeps the messages, a checkpoint the
history at the moment it was saved. What each call of the model was sent is rebuilt from them
as Gemini CLI 0.61 holds its history (``/work/research/gemini/NOTES.md``, observed against the
real CLI); ``gemini_send.py`` then makes each call's request of it, as the CLI does.

**A recording** is replayed as the CLI replays it (``gemini_cli_records.py``: the JSONL form's
rewrites and rewinds applied), and its messages become contents in their order:

* the history opens with the CLI's context preamble, one user content (``<session_context>``:
  the date of the first message, the system the paths say, the workspace; the directory
  listing the recording does not keep left out), which the CLI joins to the first prompt;
* a ``user`` message is a user content of its parts (a result a call's record already holds,
  written again, is left out);
* a ``gemini`` message is a model content: its text, then a ``functionCall`` for each recorded
  tool call, ``{id, args, name}`` as the SDK writes it, the id the CLI gave the call (0.61
  writes it on both sides). The recording keeps no thought signature (``thoughts`` are the
  summaries the CLI showed), but the model gave one on the first call of each of its turns, and
  the CLI sent it back on that part: a stand-in stands for it (``signature``: opaque, as long
  as a short real one, made from the message's id; none on a call the CLI made itself).
  Thought parts are never sent back;
* the results of its calls (each call's ``result``, ``functionResponse`` parts written
  ``{name, response, id}`` as 0.61 does) are the user content after it.

A ``gemini`` message is a call of the model when it recorded its usage (``tokens``): one
without is the CLI's own doing, recorded under the model's alias (a slash command's
``activate_skill``), or the rest of the turn before it (a call the user cancelled while it
waited for approval, written as a message of its own after the turn's text). A call was sent at
the time of the content before it (the user's message, or the last of the previous calls'
results) and answered at its message's time. Its usage is the recorded one (``input`` is
Gemini's ``promptTokenCount``, ``cached`` of it read from the cache); a usage of all zeros (a
retried stream's answer) is not known.

**A checkpoint** holds only its final history, in the form the CLI then kept it (model turns
in as many contents as their streamed chunks, calls without ids answered by responses with
them) and no time or model. Its calls are rebuilt as its prefixes ending before each run of
model contents (a run is one call's answer; the canned "Got it. Thanks for the context!" after
the old CLIs' preamble is none), for ``CHECKPOINT_MODEL``, spaced ``LOOP_S`` apart as the
recordings' tool loops are, from a day of their own (``CHECKPOINT_START``).
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from hdcontext.formats.conversation import FormatError
from hdcontext.formats.importers import gemini_cli
from hdcontext.formats.importers.gemini_cli_records import Recording, read_recording

from .transcripts import TRANSCRIPTS

FILES = TRANSCRIPTS / "gemini"
CHECKPOINT_MODEL = "gemini-2.5-pro"
"""The model a checkpoint's calls are rebuilt for: the checkpoints were saved in June and July
2025 (their preambles' dates), when Gemini CLI ran Gemini 2.5 Pro by default."""
LOOP_S = 4.0
"""Seconds between a checkpoint's calls: the median time from a tool's result to the model's
answer in the recordings' tool loops (3.7 s)."""
ANSWER_S = 2.0
"""Seconds from a checkpoint call's request to its answer."""
CHECKPOINT_START = int(datetime(2025, 7, 1, tzinfo=UTC).timestamp() * 1000)
"""When the first checkpoint's first call is made; each later checkpoint a day after."""
DAY_MS = 86_400_000
ACKNOWLEDGED = "Got it. Thanks for the context!"
"""The model content old CLIs put after their preamble themselves (no call of the model)."""
SIGNATURE_BYTES = 96


@dataclass(frozen=True)
class Usage:
    """What Gemini billed for one call, as the CLI recorded it."""

    input_tokens: int
    """``promptTokenCount``: every input token, the cached ones among them."""
    cached_tokens: int
    output_tokens: int
    """The answer and the thinking, billed alike."""


@dataclass(frozen=True)
class Call:
    """One call of the model as the file shows it."""

    index: int
    at: int
    """When its request was sent (ms)."""
    answered: int
    """When its answer was recorded (ms)."""
    model: str
    held: int
    """How many of the session's history contents the CLI held when it sent it."""
    usage: Usage | None
    calls: bool
    """Its answer called a tool (the CLI's next request follows within seconds)."""


@dataclass(frozen=True)
class Session:
    name: str
    project: str
    """The repository the file came from (a user's proxy sees its sessions together)."""
    path: Path
    kind: str
    """``recording`` or ``checkpoint``."""
    session_id: str
    started: int
    history: tuple[dict[str, Any], ...]
    """The CLI's history as it grew, each content made once (the requests share them)."""
    calls: tuple[Call, ...]
    tools: tuple[str, ...]
    """The tools it called, in order of first use (the stand-in declarations)."""
    project_dir: str
    """The CLI's folder for the project under ``~/.gemini/tmp/`` (masked outputs go there)."""


def find(root: Path = FILES) -> list[Session]:
    """Every recording, in the order its session started, then every checkpoint."""
    recordings = sorted(
        (read_chat(p) for p in root.rglob("session-*.json*")), key=lambda s: s.started
    )
    checkpoints = [
        read_checkpoint(p, CHECKPOINT_START + k * DAY_MS)
        for k, p in enumerate(sorted(root.rglob("checkpoint-*.json")))
    ]
    return [*recordings, *checkpoints]


def ms(stamp: object) -> int | None:
    if not isinstance(stamp, str):
        return None
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def signature(message_id: str) -> str:
    """The stand-in for the signature the model gave a turn's first call."""
    seed = message_id.encode()
    data = b""
    while len(data) < SIGNATURE_BYTES:
        data += hashlib.sha256(seed + len(data).to_bytes(2, "big")).digest()
    return base64.b64encode(data[:SIGNATURE_BYTES]).decode()


def _project(path: Path, root: Path) -> tuple[str, str]:
    """The repository and the CLI's project folder a file lies under."""
    parts = path.relative_to(root).parts if path.is_relative_to(root) else path.parts
    return parts[0], parts[2] if len(parts) > 2 else ""


# -- recordings ------------------------------------------------------------------------------


def read_chat(path: Path, root: Path = FILES) -> Session:
    text = path.read_text(encoding="utf-8")
    recording = read_recording(text)
    project, folder = _project(path, root)
    built = _History(_preamble(recording, text, folder))
    for message in recording.messages:
        built.add(message.record)
    return Session(
        name=path.name.removeprefix("session-").split(".")[0],
        project=project,
        path=path,
        kind="recording",
        session_id=str(recording.metadata.get("sessionId")),
        started=ms(recording.metadata.get("startTime")) or 0,
        history=tuple(built.contents),
        calls=tuple(built.calls),
        tools=tuple(built.tools),
        project_dir=folder,
    )


def _preamble(recording: Recording, text: str, folder: str) -> dict[str, Any]:
    """The CLI's context preamble, as 0.61 writes it, from what the recording says."""
    try:
        root = gemini_cli.load(text).workspace_root or "/"
    except FormatError:
        root = "/"
    first = next((ms(m.record.get("timestamp")) for m in recording.messages), None)
    day = datetime.fromtimestamp((first or 0) / 1000, UTC)
    system = "darwin" if root.startswith("/Users/") else "linux"
    home = "/".join(root.split("/")[:3]) if root.count("/") >= 2 else root
    said = (
        "<session_context>\nThis is the Gemini CLI. We are setting up the context for our "
        f"chat.\nToday's date is {day:%A, %B} {day.day}, {day.year} (formatted according to "
        f"the user's locale).\nMy operating system is: {system}\nThe project's temporary "
        f"directory is: {home}/.gemini/tmp/{folder}\n- **Workspace Directories:**\n  - {root}\n"
        "- **Directory Structure:**\n\nShowing up to 200 items (files + folders).\n\n"
        f"{root}/\n\n\n</session_context>"
    )
    return {"parts": [{"text": said}], "role": "user"}


class _History:
    """The history a recording's messages make, and its calls of the model."""

    def __init__(self, preamble: dict[str, Any]) -> None:
        self.contents: list[dict[str, Any]] = [preamble]
        self.calls: list[Call] = []
        self.tools: dict[str, None] = {}
        self.answered: set[str] = set()
        self.last_at = 0

    def add(self, record: Mapping[str, Any]) -> None:
        kind = record.get("type")
        at = ms(record.get("timestamp")) or self.last_at
        if kind == "user":
            self._push("user", self._new_answers(_parts(record.get("content"))), at)
        elif kind == "gemini":
            self._model(record, at)

    def _model(self, record: Mapping[str, Any], at: int) -> None:
        calls = [c for c in _listed(record.get("toolCalls")) if isinstance(c.get("name"), str)]
        tokens = record.get("tokens")
        if isinstance(tokens, Mapping):
            self.calls.append(
                Call(
                    index=len(self.calls),
                    at=self.last_at,
                    answered=max(at, self.last_at),
                    model=str(record.get("model")),
                    held=len(self.contents),
                    usage=_usage(tokens),
                    calls=bool(calls),
                )
            )
        parts = [p for p in _parts(record.get("content")) if p.get("thought") is not True]
        # The model signed its turn's first call: a call of its own, or the rest of the turn
        # before (not the CLI's own call, made before any turn of the model).
        signed = isinstance(tokens, Mapping) or self.contents[-1].get("role") == "model"
        if not any("functionCall" in p for p in parts):
            for k, call in enumerate(calls):
                part: dict[str, Any] = {"functionCall": _call(call)}
                if k == 0 and signed:
                    part["thoughtSignature"] = signature(str(record.get("id")))
                parts.append(part)
        for call in calls:
            self.tools[str(call["name"])] = None
        self._push("model", parts, at)
        answers = [p for call in calls for p in _results(call)]
        finished = [ms(call.get("timestamp")) for call in calls]
        self._push("user", self._new_answers(answers), max([at, *filter(None, finished)]))

    def _new_answers(self, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for part in parts:
            response = part.get("functionResponse")
            answer = response.get("id") if isinstance(response, Mapping) else None
            if isinstance(answer, str) and answer:
                if answer in self.answered:
                    continue
                self.answered.add(answer)
            out.append(part)
        return out

    def _push(self, role: str, parts: list[dict[str, Any]], at: int) -> None:
        self.last_at = max(self.last_at, at)
        if parts:
            self.contents.append({"parts": parts, "role": role})


def _listed(value: object) -> list[Mapping[str, Any]]:
    items = value if isinstance(value, list) else [] if value is None else [value]
    return [item for item in items if isinstance(item, Mapping)]


def _parts(content: object) -> list[dict[str, Any]]:
    """A recorded content as parts: a string is one text part (none when blank)."""
    if isinstance(content, str):
        return [{"text": content}] if content.strip() else []
    items = content if isinstance(content, list) else [content]
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, str):
            if item.strip():
                out.append({"text": item})
        elif isinstance(item, Mapping):
            out.append(dict(item))
    return out


def _usage(tokens: Mapping[str, Any]) -> Usage | None:
    prompt = int(tokens.get("input") or 0)
    if not prompt:
        return None
    return Usage(
        prompt,
        int(tokens.get("cached") or 0),
        int(tokens.get("output") or 0) + int(tokens.get("thoughts") or 0),
    )


def _call(call: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if isinstance(call.get("id"), str) and call["id"]:
        out["id"] = call["id"]
    if call.get("args") is not None:
        out["args"] = call["args"]
    out["name"] = call["name"]
    return out


def _results(call: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A call's recorded result as the parts 0.61 sends: each ``functionResponse`` written
    ``{name, response, id}``, any other part as it is."""
    result = call.get("result")
    if isinstance(result, str):
        result = [
            {
                "functionResponse": {
                    "id": call.get("id"),
                    "name": call["name"],
                    "response": {"output": result},
                }
            }
        ]
    out = []
    for part in _parts(result):
        response = part.get("functionResponse")
        if isinstance(response, Mapping):
            written = {k: response[k] for k in ("name", "response", "id") if k in response}
            written.update({k: v for k, v in response.items() if k not in written})
            part = {"functionResponse": written}
        out.append(part)
    return out


# -- checkpoints -----------------------------------------------------------------------------


def read_checkpoint(path: Path, start: int, root: Path = FILES) -> Session:
    contents = orjson.loads(path.read_bytes())
    if not isinstance(contents, list):
        raise FormatError(f"{path.name}: a checkpoint is a list of contents")
    history = tuple(c for c in contents if isinstance(c, dict))
    project, folder = _project(path, root)
    calls: list[Call] = []
    tools: dict[str, None] = {}
    for i, content in enumerate(history):
        for part in content.get("parts") or []:
            call = part.get("functionCall") if isinstance(part, Mapping) else None
            if isinstance(call, Mapping):
                tools[str(call.get("name"))] = None
        opens = content.get("role") == "model" and (i == 0 or history[i - 1].get("role") != "model")
        if opens and not _acknowledges(content):
            at = start + len(calls) * int(LOOP_S * 1000)
            answer = _run(history, i)
            calls.append(
                Call(
                    index=len(calls),
                    at=at,
                    answered=at + int(ANSWER_S * 1000),
                    model=CHECKPOINT_MODEL,
                    held=i,
                    usage=None,
                    calls=any("functionCall" in p for c in answer for p in c.get("parts") or []),
                )
            )
    return Session(
        name=re.sub(r"[^\w.-]", "", path.stem),
        project=project,
        path=path,
        kind="checkpoint",
        session_id=path.stem,
        started=start,
        history=history,
        calls=tuple(calls),
        tools=tuple(tools),
        project_dir=folder,
    )


def _acknowledges(content: Mapping[str, Any]) -> bool:
    parts = content.get("parts") or []
    return len(parts) == 1 and str(parts[0].get("text", "")).startswith(ACKNOWLEDGED)


def _run(history: Sequence[Mapping[str, Any]], start: int) -> list[Mapping[str, Any]]:
    """The model contents from ``start`` on, up to the next content of the user."""
    out = []
    for content in history[start:]:
        if content.get("role") != "model":
            break
        out.append(content)
    return out
