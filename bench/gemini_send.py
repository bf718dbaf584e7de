"""Gemini CLI 0.61's request for each call of its model, made from the history it held
(``gemini_recordings.py``), as ``/work/research/gemini/NOTES.md`` says the real CLI makes it.

``POST /v1beta/models/{model}:streamGenerateContent?alt=sse``, the body compact JSON with its
text unescaped, its members ``contents, systemInstruction, tools, generationConfig`` in that
order. Before each call the CLI:

1. **masks old tool output** (``ToolOutputMaskingService``, on by default): over the history
   before the new message, the latest content left out, it sums the estimated tokens of the
   ``functionResponse`` parts from the newest back (``JSON.stringify(response).length / 4``);
   past the newest ``PROTECT_TOKENS``, the rest is prunable, and once that is at least
   ``MIN_PRUNABLE_TOKENS`` every prunable part becomes a ``<tool_output_masked>`` preview of
   itself, for good (the history keeps it). The skills' and plan mode's tools are exempt;
2. **joins contents of one role in a row** (``coalesceConsecutiveRoles``): its context preamble
   and the first prompt are one user content of two text parts, an old checkpoint's model turn
   of several contents is one;
3. **signs the active loop** (``ensureActiveLoopHasThoughtSignatures``): in the model contents
   after the last user content of text (no ``functionResponse``), a first ``functionCall``
   without a signature gets ``skip_thought_signature_validator``, on the request only, so that
   it is gone again once the next prompt starts;
4. writes every content as the SDK does (``contentToMldev``): ``{"parts", "role"}``, a part's
   keys in the SDK's order (its data, then ``thought``, ``thoughtSignature``), a call
   ``{id, args, name}``, inline data ``{data, mimeType}``, a response as the CLI made it.

What the files do not keep is stood in for, and said so: the system instruction (a line naming
it; its tokens are sized from the real usage with the tools', ``gemini_units.hidden_prompt``),
the tools (a declaration of each tool the session called, ``parametersJsonSchema`` empty), and
the generation config 0.61 sends for the model's family. Side requests (the router, the
next-speaker and loop checks, compression) are conversations of their own, and ``:generateContent``
calls: they are not rebuilt. Compression starts at half the model's million-token window:
no session comes near it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from .gemini_recordings import Session, Usage

PROTECT_TOKENS = 50_000
MIN_PRUNABLE_TOKENS = 30_000
EXEMPT = frozenset({"activate_skill", "ask_user", "enter_plan_mode", "exit_plan_mode"})
MASK_TAG = "tool_output_masked"
SHELL = "run_shell_command"
SKIP_SIGNATURE = "skip_thought_signature_validator"
SYSTEM = (
    "(Gemini CLI's system instruction: the files do not keep it; this line stands for it, "
    "its tokens sized from the real usage.)"
)
THINKING_2 = {"includeThoughts": True, "thinkingBudget": 8192}
THINKING_3 = {"includeThoughts": True, "thinkingLevel": "HIGH"}
PART_ORDER = (
    "mediaResolution",
    "codeExecutionResult",
    "executableCode",
    "fileData",
    "functionCall",
    "functionResponse",
    "inlineData",
    "text",
    "thought",
    "thoughtSignature",
    "videoMetadata",
)
"""A part's keys in the order the SDK writes them (``partToMldev``)."""
_SHELL_SECTION = re.compile(
    r"^(Output|Error|Exit Code|Signal|Background PIDs|Process Group PGID): ", re.M
)


@dataclass(frozen=True)
class Request:
    """One ``streamGenerateContent`` the CLI sent: its contents (shared with the session's other
    requests, never changed), the body written from them on demand."""

    index: int
    at: int
    answered: int
    model: str
    contents: tuple[dict[str, Any], ...]
    fields: Mapping[str, Any]
    """The body's other members, in their order."""
    usage: Usage | None
    calls: bool
    masked: int = 0
    """Tool outputs the CLI's own masking had replaced in it."""

    def body(self) -> bytes:
        return encode({"contents": self.contents, **self.fields})

    def rest(self) -> dict[str, Any]:
        return dict(self.fields)


def encode(value: object) -> bytes:
    """JSON as the CLI writes it (``JSON.stringify``: compact, text unescaped)."""
    return orjson.dumps(value)


def fields(session: Session, model: str) -> dict[str, Any]:
    declared = [
        {
            "name": name,
            "description": "",
            "parametersJsonSchema": {"type": "object", "properties": {}},
        }
        for name in session.tools
    ]
    thinking = THINKING_3 if model.startswith("gemini-3") else THINKING_2
    return {
        "systemInstruction": {"parts": [{"text": SYSTEM}], "role": "user"},
        "tools": [{"functionDeclarations": declared}],
        "generationConfig": {
            "temperature": 1,
            "topP": 0.95,
            "topK": 64,
            "thinkingConfig": thinking,
        },
    }


def requests(session: Session) -> tuple[Request, ...]:
    """Each call's request, in order."""
    masking = _Masking(session)
    writer = _Writer()
    made: dict[str, dict[str, Any]] = {}
    out = []
    for call in session.calls:
        history = masking.before(call.held)
        contents = writer.signed(writer.coalesced(history))
        rest = made.setdefault(call.model, fields(session, call.model))
        out.append(
            Request(
                call.index,
                call.at,
                call.answered,
                call.model,
                tuple(contents),
                rest,
                call.usage,
                call.calls,
                masking.count,
            )
        )
    return tuple(out)


# -- 1. the CLI's own masking ----------------------------------------------------------------


def js_length(text: str) -> int:
    """A string's ``length`` in JavaScript (UTF-16 code units)."""
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def estimated(part: Mapping[str, Any]) -> int:
    """``estimateTokenCountSync([part])`` of a ``functionResponse`` part."""
    response = part["functionResponse"]
    name = str(response.get("name") or "")
    body = response.get("response")
    size = js_length(name)
    if isinstance(body, str):
        size += js_length(body)
    elif body is not None:
        size += js_length(json.dumps(body, ensure_ascii=False, separators=(",", ":")))
    return size // 4


class _Masking:
    """The CLI's history with the outputs its masking replaced, for good."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.replaced: dict[int, dict[str, Any]] = {}
        self.count = 0

    def before(self, held: int) -> list[dict[str, Any]]:
        """The history sent with a call made holding ``held`` contents (the last of them the
        new message, which the masking does not see)."""
        self._mask(held - 1)
        return [self.replaced.get(i, c) for i, c in enumerate(self.session.history[:held])]

    def _mask(self, length: int) -> None:
        history = [self.replaced.get(i, c) for i, c in enumerate(self.session.history[:length])]
        prunable: list[tuple[int, int, int, str]] = []
        total = seen = 0
        for i in range(len(history) - 2, -1, -1):
            parts = history[i].get("parts") or []
            for j in range(len(parts) - 1, -1, -1):
                part = parts[j]
                response = part.get("functionResponse") if isinstance(part, Mapping) else None
                if not isinstance(response, Mapping) or response.get("name") in EXEMPT:
                    continue
                content = _output_of(response)
                if not content or f"<{MASK_TAG}" in content:
                    continue
                tokens = estimated(part)
                if seen <= PROTECT_TOKENS:
                    seen += tokens
                    if seen <= PROTECT_TOKENS:
                        continue
                total += tokens
                prunable.append((i, j, tokens, content))
        if total < MIN_PRUNABLE_TOKENS:
            return
        for i, j, tokens, content in prunable:
            content_now = self.replaced.get(i, history[i])
            part = content_now["parts"][j]
            masked = self._masked(part, content)
            if tokens - estimated(masked) > 0:
                parts = list(content_now["parts"])
                parts[j] = masked
                self.replaced[i] = {**content_now, "parts": parts}
                self.count += 1

    def _masked(self, part: Mapping[str, Any], content: str) -> dict[str, Any]:
        response = part["functionResponse"]
        name = str(response.get("name") or "unknown_tool")
        if name == SHELL:
            preview = _shell_preview(response.get("response") or {})
        elif len(content) > 500:
            preview = f"{content[:250]}\n... [TRUNCATED] ...\n{content[-250:]}"
        else:
            preview = content
        safe = re.sub(r"[^a-zA-Z0-9_-]", "_", f"{name}_{response.get('id')}").lower()
        where = (
            f"~/.gemini/tmp/{self.session.project_dir}/tool-outputs/"
            f"session-{self.session.session_id}/{safe}_0bench.txt"
        )
        snippet = (
            f"<{MASK_TAG}>\n{preview}\n\nOutput too large. Full output available at: {where}\n"
            f"</{MASK_TAG}>"
        )
        return {**part, "functionResponse": {**response, "response": {"output": snippet}}}


def _output_of(response: Mapping[str, Any]) -> str | None:
    body = response.get("response")
    if not body:
        return None
    return json.dumps(body, ensure_ascii=False, indent=2)


def _shell_preview(response: Mapping[str, Any]) -> str:
    content = response.get("output") or response.get("stdout") or ""
    if not isinstance(content, str):
        return json.dumps(content, ensure_ascii=False)
    parts = _SHELL_SECTION.split(content)
    if len(parts) < 3:
        return _simple_preview(content)
    out = [_simple_preview(parts[0].strip())] if parts[0].strip() else []
    for k in range(1, len(parts), 2):
        section = parts[k + 1].strip() if k + 1 < len(parts) else ""
        out.append(
            f"Output: {_simple_preview(section)}"
            if parts[k] == "Output"
            else f"{parts[k]}: {section}"
        )
    return "\n".join(out)


def _simple_preview(content: str) -> str:
    lines = content.split("\n")
    if len(lines) <= 20:
        return content
    omitted = len(lines) - 20
    return (
        "\n".join(lines[:10])
        + f"\n\n... [{omitted} lines omitted] ...\n\n"
        + "\n".join(lines[-10:])
    )


# -- 2 to 4. joined, signed, written as the SDK writes them ----------------------------------


class _Writer:
    """Contents as the SDK writes them, each made once however many requests send it."""

    def __init__(self) -> None:
        self._written: dict[int, tuple[object, dict[str, Any]]] = {}
        self._joined: dict[tuple[int, ...], dict[str, Any]] = {}
        self._signed: dict[int, tuple[object, dict[str, Any]]] = {}

    def written(self, content: dict[str, Any]) -> dict[str, Any]:
        known = self._written.get(id(content))
        if known is not None and known[0] is content:
            return known[1]
        out = written(content)
        self._written[id(content)] = (content, out)  # kept: its id is not reused
        return out

    def coalesced(self, history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        runs: list[list[dict[str, Any]]] = []
        for content in history:
            if runs and runs[-1][0].get("role") == content.get("role"):
                runs[-1].append(content)
            else:
                runs.append([content])
        out = []
        for run in runs:
            if len(run) == 1:
                out.append(self.written(run[0]))
                continue
            key = tuple(id(c) for c in run)
            joined = self._joined.get(key)
            if joined is None:
                parts = [p for c in run for p in self.written(c)["parts"]]
                joined = self._joined[key] = {"parts": parts, "role": run[0].get("role")}
                self._written[id(joined)] = (joined, joined)
            out.append(joined)
        return out

    def signed(self, contents: list[dict[str, Any]]) -> list[dict[str, Any]]:
        start = next(
            (
                i
                for i in range(len(contents) - 1, -1, -1)
                if contents[i].get("role") == "user"
                and any("text" in p for p in contents[i]["parts"])
                and not any("functionResponse" in p for p in contents[i]["parts"])
            ),
            None,
        )
        if start is None:
            return contents
        out = list(contents)
        for i in range(start, len(out)):
            content = out[i]
            if content.get("role") != "model":
                continue
            first = next((j for j, p in enumerate(content["parts"]) if "functionCall" in p), None)
            if first is None or "thoughtSignature" in content["parts"][first]:
                continue
            known = self._signed.get(id(content))
            if known is None or known[0] is not content:
                parts = list(content["parts"])
                parts[first] = _ordered({**parts[first], "thoughtSignature": SKIP_SIGNATURE})
                known = (content, {"parts": parts, "role": content["role"]})
                self._signed[id(content)] = known
            out[i] = known[1]
        return out


def written(content: Mapping[str, Any]) -> dict[str, Any]:
    """A content as the SDK writes it (``contentToMldev``)."""
    parts = content.get("parts")
    out: dict[str, Any] = {}
    if isinstance(parts, list):
        out["parts"] = [_ordered(p) if isinstance(p, Mapping) else p for p in parts]
    if content.get("role") is not None:
        out["role"] = content["role"]
    return out


def _ordered(part: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in PART_ORDER:
        value = part.get(key)
        if value is None:
            continue
        if key == "functionCall" and isinstance(value, Mapping):
            value = {k: value[k] for k in ("id", "args", "name") if value.get(k) is not None}
        elif key == "inlineData" and isinstance(value, Mapping):
            value = {k: value[k] for k in ("data", "mimeType") if value.get(k) is not None}
        out[key] = value
    return out
