"""Codex CLI's rollouts read back into the ``POST /v1/responses`` bodies Codex sent, call by call.

A rollout (``~/.codex/sessions/…/rollout-*.jsonl``, described in the transcripts' README) keeps
the conversation as the Responses API items Codex holds (``response_item`` records), not the
requests. Codex sends its whole history every call (``store: false``), and the model's items of
one call (reasoning, an assistant message, calls) are recorded as one run; so request *k*'s
``input`` is every item recorded before the *k*-th run of the model's items. What Codex holds
but never sends is left out, as its ``is_api_message`` leaves it out: ``ghost_snapshot`` items
(git bookkeeping) and system messages. A ``compacted`` record replaces the history with its
``replacement_history`` (the remote compaction's items: the user's messages and an encrypted
``compaction`` item), as Codex does on the spot and on resume. A call left without an output
(a turn interrupted while its tool ran) gets the ``"aborted"`` output Codex's history inserts
right after it before any request (``ensure_call_outputs_present``), or the request would be
one the API refuses.

A resumed rollout opens with its own ``session_meta`` and then its parent's, followed by the
parent's records copied in one burst (within ``REPLAY_S`` of that second ``session_meta``): they
are history, not calls of this session; its first request carries them all.

What the rollout does not record is stood in for, and said so: the tools (a list of the tool
names the session used, each with an empty schema; Codex sends the same list every call), the
base instructions (recorded only by newer CLIs, ``base_instructions``; older ones record in
``instructions`` the AGENTS.md text, which their input already carries as a user message, so it
is not sent twice), and the model where no ``turn_context`` names it (CLI 0.34: ``gpt-5``, its
default then). The other fields are those Codex sends (``store: false``, ``include`` of the
encrypted reasoning, ``prompt_cache_key`` the session id), in its order; the body is compact
JSON with its text unescaped, as serde writes it. Each request's real usage is the
``token_count`` record Codex wrote for that call (``last_token_usage``), when it can be told
which call it belongs to.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from .transcripts import TRANSCRIPTS

ROLLOUTS = TRANSCRIPTS / "codex"
REPLAY_S = 2.0
"""A resumed rollout's copy of its parent is written within this many seconds of the parent's
``session_meta`` record (the copy in the corpus: 0.2 s; the user's first words come later)."""
DEFAULT_MODEL = "gpt-5"
"""The model of a rollout no ``turn_context`` names one for (CLI 0.34's default)."""
MODEL_KINDS = frozenset(
    {"reasoning", "function_call", "custom_tool_call", "local_shell_call", "web_search_call"}
)
CALLS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output"}
"""A call's kind and the kind of the output that answers it."""
OUTPUTS = frozenset(CALLS.values())
CALL_KINDS = frozenset({*CALLS, "local_shell_call"})
NOT_SENT = frozenset({"ghost_snapshot"})
ABORTED = "aborted"
"""The output Codex gives a call that never finished."""


@dataclass(frozen=True)
class Usage:
    """What the provider billed for one call, as Codex recorded it."""

    input_tokens: int
    cached_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Request:
    """One ``POST /v1/responses`` Codex sent: its items (shared with the session's other
    requests, never changed), the body written from them on demand (a long session's
    requests together are hundreds of megabytes)."""

    index: int
    at: int
    """When it was sent (ms): its last input item's record."""
    answered: int
    """When its answer's last item was recorded (ms)."""
    model: str
    items: tuple[dict[str, Any], ...]
    fields: Mapping[str, Any]
    """The body's other members (the model's placed first, ``input`` after ``instructions``)."""
    usage: Usage | None
    """The call's real usage; ``None`` when no ``token_count`` record can be told to be its."""
    calls: bool = False
    """Its answer called a tool (Codex's next request follows within seconds)."""

    def body(self, model: str | None = None) -> bytes:
        """The body Codex sent; ``model``: the same with another model named."""
        return encode(_body(self.fields, model or self.model, self.items))

    def rest(self, model: str | None = None) -> dict[str, Any]:
        """The body's members besides ``input``, in their order."""
        body = _body(self.fields, model or self.model, ())
        del body["input"]
        return body


@dataclass(frozen=True)
class Rollout:
    name: str
    project: str
    """The repository the rollout came from (sessions of one project share a user's proxy)."""
    path: Path
    session_id: str
    cli_version: str
    cwd: str
    """The session's working folder (what its relative paths are relative to)."""
    started: int
    """The first record's time (ms)."""
    requests: tuple[Request, ...]
    resumed_from: str | None = None
    replayed_calls: int = 0
    """The parent's calls a resumed rollout copies: history, not requests of this session."""
    aborted_outputs: int = 0
    """Calls left unanswered, given Codex's ``"aborted"`` output."""
    kinds: frozenset[str] = field(default_factory=frozenset)
    """The item kinds its requests send (``message:<role>`` for a message)."""


def find(root: Path = ROLLOUTS) -> list[Rollout]:
    """Every rollout under ``root``, in the order their sessions started."""
    return sorted((read(p) for p in root.rglob("rollout-*.jsonl")), key=lambda r: r.started)


def ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def kind_of(item: Mapping[str, Any]) -> str:
    kind = item.get("type")
    if kind is None and "role" in item:
        kind = "message"
    return str(kind)


def model_side(item: Mapping[str, Any]) -> bool:
    kind = kind_of(item)
    return kind in MODEL_KINDS or (kind == "message" and item.get("role") == "assistant")


def sent(item: object) -> bool:
    """Whether Codex sends this item of its history (its ``is_api_message``)."""
    if not isinstance(item, Mapping):
        return False
    kind = kind_of(item)
    return kind not in NOT_SENT and not (kind == "message" and item.get("role") == "system")


def encode(value: object) -> bytes:
    """JSON as Codex writes it (serde_json: compact, text unescaped)."""
    return orjson.dumps(value)


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_bytes().splitlines():
        if line.strip():
            record = orjson.loads(line)
            if isinstance(record, dict):
                out.append(record)
    return out


def _replayed(records: Sequence[Mapping[str, Any]]) -> tuple[int, str | None]:
    """How many leading records a resumed rollout copied from its parent (counted from the
    start: its own ``session_meta`` among them), and the parent's id."""
    metas = [i for i, r in enumerate(records) if r.get("type") == "session_meta"]
    if len(metas) < 2:
        return 0, None
    second = metas[1]
    start = ms(records[second]["timestamp"])
    end = second + 1
    while end < len(records) and ms(records[end]["timestamp"]) - start <= REPLAY_S * 1000:
        end += 1
    return end, str(records[second]["payload"].get("id"))


def _tools(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The stand-in tool list: each tool the session used, by name, in order of first use."""
    tools: dict[str, dict[str, Any]] = {}
    for record in records:
        item = record.get("payload")
        if record.get("type") != "response_item" or not isinstance(item, Mapping):
            continue
        kind, name = kind_of(item), item.get("name")
        if kind == "function_call" and isinstance(name, str):
            tools.setdefault(
                name,
                {
                    "type": "function",
                    "name": name,
                    "description": "",
                    "strict": False,
                    "parameters": {"type": "object", "properties": {}},
                },
            )
        elif kind == "custom_tool_call" and isinstance(name, str):
            tools.setdefault(name, {"type": "custom", "name": name, "description": ""})
        elif kind == "local_shell_call":
            tools.setdefault("local_shell", {"type": "local_shell"})
        elif kind == "web_search_call":
            tools.setdefault("web_search", {"type": "web_search"})
    return list(tools.values())


def _instructions(meta: Mapping[str, Any]) -> str | None:
    base = meta.get("base_instructions")
    if isinstance(base, Mapping) and isinstance(base.get("text"), str):
        return str(base["text"])
    return None


def with_outputs(items: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """``items`` with Codex's ``"aborted"`` output right after each call nothing answers, and
    the calls it answered so."""
    answered = {str(item.get("call_id")) for item in items if kind_of(item) in OUTPUTS}
    out: list[dict[str, Any]] = []
    added: list[str] = []
    for item in items:
        out.append(item)
        kind, call = kind_of(item), str(item.get("call_id"))
        if kind in CALLS and call not in answered:
            out.append({"type": CALLS[kind], "call_id": call, "output": ABORTED})
            added.append(call)
    return out, added


def _usages(records: Sequence[Mapping[str, Any]], runs: Sequence[int]) -> list[Usage | None]:
    """Each run's real usage. A ``token_count`` record whose totals moved is one call's; Codex
    wrote it right after the call's items (or, in the oldest CLIs, right before them). Calls
    of no run (a review's own conversation) leave counts the runs do not take."""
    counts: list[tuple[int, Usage]] = []
    last: object = None
    for i, record in enumerate(records):
        payload = record.get("payload")
        if record.get("type") != "event_msg" or not isinstance(payload, Mapping):
            continue
        info = payload.get("info")
        if payload.get("type") != "token_count" or not isinstance(info, Mapping):
            continue
        total, used = info.get("total_token_usage"), info.get("last_token_usage")
        if total == last or not isinstance(used, Mapping):
            continue
        last = total
        counts.append(
            (
                i,
                Usage(
                    int(used.get("input_tokens") or 0),
                    int(used.get("cached_input_tokens") or 0),
                    int(used.get("output_tokens") or 0),
                ),
            )
        )
    if not counts or not runs:
        return [None] * len(runs)
    before = counts[0][0] < runs[0]
    out: list[Usage | None] = []
    for k, start in enumerate(runs):
        if before:
            low = runs[k - 1] if k else -1
            found = [u for i, u in counts if low < i < start]
            out.append(found[-1] if found else None)
        else:
            high = runs[k + 1] if k + 1 < len(runs) else len(records)
            found = [u for i, u in counts if start < i < high]
            out.append(found[0] if found else None)
    return out


def read(path: Path) -> Rollout:
    records = _records(path)
    meta = next(r["payload"] for r in records if r.get("type") == "session_meta")
    copied, parent = _replayed(records)
    session_id = str(meta.get("id"))
    instructions = _instructions(meta)
    tools = _tools(records)
    history: list[dict[str, Any]] = []
    model = DEFAULT_MODEL
    reasoning: dict[str, Any] | None = None
    last_at = ms(records[0]["timestamp"])
    opened = False  # the last item sent was the model's
    runs: list[_Run] = []
    replayed_calls = 0
    for i, record in enumerate(records):
        kind, payload = record.get("type"), record.get("payload")
        if not isinstance(payload, Mapping):
            continue
        if kind == "turn_context":
            model = str(payload.get("model") or model)
            asked = {k: payload[k] for k in ("effort", "summary") if payload.get(k) is not None}
            reasoning = asked or None
        elif kind == "compacted" and isinstance(payload.get("replacement_history"), list):
            history = [dict(item) for item in payload["replacement_history"] if sent(item)]
            opened, last_at = False, ms(record["timestamp"])
        elif kind == "response_item" and sent(payload):
            mine = model_side(payload)
            if mine and not opened and i < copied:
                replayed_calls += 1
            elif mine and not opened:
                runs.append(_Run(i, last_at, list(history), model, reasoning))
            if mine and i >= copied and runs:
                runs[-1].answered = ms(record["timestamp"])
                runs[-1].calls = runs[-1].calls or kind_of(payload) in CALL_KINDS
            opened = mine
            history.append(dict(payload))
            last_at = ms(record["timestamp"])
    usages = _usages(records, [run.start for run in runs])
    requests = []
    kinds: set[str] = set()
    aborted: set[str] = set()
    for k, run in enumerate(runs):
        items, added = with_outputs(run.items)
        aborted.update(added)
        kinds.update(_kind_names(items))
        fields: dict[str, Any] = {}
        if instructions is not None:
            fields["instructions"] = instructions
        fields.update(tools=tools, reasoning=run.reasoning, prompt_cache_key=session_id)
        answered = max(run.at, run.answered)
        requests.append(
            Request(k, run.at, answered, run.model, tuple(items), fields, usages[k], run.calls)
        )
    return Rollout(
        name=path.name.removeprefix("rollout-").removesuffix(".jsonl")[:19],
        project=path.relative_to(ROLLOUTS).parts[0] if path.is_relative_to(ROLLOUTS) else "",
        path=path,
        session_id=session_id,
        cli_version=str(meta.get("cli_version")),
        cwd=str(meta.get("cwd") or ""),
        started=ms(records[0]["timestamp"]),
        requests=tuple(requests),
        resumed_from=parent,
        replayed_calls=replayed_calls,
        aborted_outputs=len(aborted),
        kinds=frozenset(kinds),
    )


@dataclass
class _Run:
    """One call of the model, as the rollout shows it: where its items start, and what Codex
    held and used when it sent the request."""

    start: int
    at: int
    items: list[dict[str, Any]]
    model: str
    reasoning: dict[str, Any] | None
    answered: int = 0
    calls: bool = False


def _kind_names(items: Sequence[Mapping[str, Any]]) -> Iterator[str]:
    for item in items:
        kind = kind_of(item)
        yield f"message:{item.get('role')}" if kind == "message" else kind


def _body(fields: Mapping[str, Any], model: str, items: Sequence[Any]) -> dict[str, Any]:
    """A request's body, its keys in the order Codex writes them."""
    body: dict[str, Any] = {"model": model}
    if "instructions" in fields:
        body["instructions"] = fields["instructions"]
    body.update(input=items, tools=fields["tools"], tool_choice="auto", parallel_tool_calls=False)
    if fields.get("reasoning") is not None:
        body["reasoning"] = fields["reasoning"]
    body.update(store=False, stream=True, include=["reasoning.encrypted_content"])
    body["prompt_cache_key"] = fields["prompt_cache_key"]
    return body
