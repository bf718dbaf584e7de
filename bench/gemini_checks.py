"""Whether a request the proxy would send is one Gemini takes, checked against the one Gemini CLI
sent.

Gemini refuses a request whose calls and responses do not pair up (by ``id``, or by name and
order where the call has none), and one whose thought signatures are not where the model put
them: a ``thoughtSignature`` is valid only on the part it came with, byte for byte, and Gemini 3
refuses a step of the current turn (the model's contents after the last user content of text)
whose first call carries none. A proxy that passes the provider's pairing rules on its own
contents could still move, drop or alter a signature; so each request is read as Gemini would
and compared with the CLI's:

* the pairing rules (``core.validity.payload_problems("gemini", …)``), beyond any the CLI's own
  request already broke;
* every signed part sent is a part of the CLI's request with that very signature (a call known
  by its id, else by the id of the response that answers it, else by its name and arguments;
  a text by its text); every part of the CLI's that carried one and is still sent carries it;
  in the current turn, a part signed by the model is the CLI's, byte for byte (Gemini checks
  the current turn's signatures; one the CLI wrote itself, ``skip_thought_signature_validator``,
  asks it not to, and its part may be pruned like any other). A call the proxy left
  first of its content when pruning took the signed call before it may carry
  ``skip_thought_signature_validator`` (what Gemini documents for it, and what ``exporters/
  gemini.py`` writes); nothing else may be added;
* in the current turn, the first call of each model content is signed wherever the CLI's was;
* the body's other members are the CLI's, in its order.

Each problem is named by a short kind (what the report counts), never by content.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from hdcontext.core.validity import payload_problems
from hdcontext.formats.gemini_parts import SIGNATURE, SKIP_SIGNATURE


def problems(
    raw_contents: Sequence[Mapping[str, Any]],
    raw_rest: Mapping[str, Any],
    sent: Mapping[str, Any],
    body: bytes,
) -> list[str]:
    """What is wrong with ``sent`` (``body``, parsed) against the CLI's request: its contents
    and its other members (``raw_rest``)."""
    contents = sent.get("contents")
    if not isinstance(contents, list):
        return ["no contents"]
    found: list[str] = []
    before = {(p.kind, p.key) for p in payload_problems("gemini", {"contents": raw_contents})}
    for p in payload_problems("gemini", sent):
        if (p.kind, p.key) not in before:
            found.append(f"provider rules: {p.kind}")
    found += signatures(raw_contents, contents, body)
    found += _current_turn(raw_contents, contents)
    rest = {k: v for k, v in sent.items() if k != "contents"}
    if rest != dict(raw_rest) or list(rest) != list(raw_rest):
        found.append("other members changed")
    return found


def identity(part: Mapping[str, Any], answer: str | None = None) -> tuple[str, str]:
    """Which part a part is: a call by its id, else by the id of the response that answers it
    (``answer``: old CLIs' bare calls, answered under ids the CLI made), else by its name and
    arguments; a text by its text; anything else by its JSON without its signature."""
    call = part.get("functionCall")
    if isinstance(call, Mapping):
        if call.get("id"):
            return ("call", str(call["id"]))
        if answer:
            return ("call", f"answered by {answer}")
        return ("call", orjson.dumps([call.get("name"), call.get("args")]).decode())
    if isinstance(part.get("text"), str):
        return ("text", part["text"])
    bare = {k: v for k, v in part.items() if k != SIGNATURE}
    return ("part", orjson.dumps(bare, option=orjson.OPT_SORT_KEYS).decode())


def identities(contents: Sequence[Any]) -> list[list[tuple[str, str]]]:
    """Each part's ``identity``, a bare call's by the response after it that answers it (of
    its name, in order)."""
    out: list[list[tuple[str, str]]] = []
    for i, content in enumerate(contents):
        parts = _parts(content)
        answers: dict[str, list[str]] = {}
        following = _parts(contents[i + 1]) if i + 1 < len(contents) else []
        for part in following:
            response = part.get("functionResponse")
            if isinstance(response, Mapping) and response.get("id"):
                answers.setdefault(str(response.get("name")), []).append(str(response["id"]))
        row = []
        for part in parts:
            call = part.get("functionCall")
            answer = None
            if isinstance(call, Mapping) and not call.get("id"):
                waiting = answers.get(str(call.get("name"))) or []
                answer = waiting.pop(0) if waiting else None
            row.append(identity(part, answer))
        out.append(row)
    return out


def signatures(
    raw_contents: Sequence[Mapping[str, Any]], contents: Sequence[Any], body: bytes
) -> list[str]:
    signed: dict[tuple[str, str], tuple[str, bytes]] = {}
    skipped_first: set[tuple[str, str]] = set()
    """Calls the proxy may sign with the skip signature: those after a signed first call."""
    for content, ids in zip(raw_contents, identities(raw_contents), strict=True):
        calls = [(p, k) for p, k in zip(_parts(content), ids, strict=True) if "functionCall" in p]
        for n, (_, key) in enumerate(calls):
            if n and SIGNATURE in calls[0][0]:
                skipped_first.add(key)
        for part, key in zip(_parts(content), ids, strict=True):
            if SIGNATURE in part:
                signed[key] = (str(part[SIGNATURE]), orjson.dumps(part))
    turn = _turn_start(contents)
    found: list[str] = []
    for i, (content, ids) in enumerate(zip(contents, identities(contents), strict=True)):
        first_call = True
        for part, key in zip(_parts(content), ids, strict=True):
            known = signed.get(key)
            mine = part.get(SIGNATURE)
            is_call = "functionCall" in part
            if mine is not None and known is None:
                if not (mine == SKIP_SIGNATURE and is_call and first_call and key in skipped_first):
                    found.append("a signature added")
            elif known is not None and mine is None:
                found.append("a signature dropped")
            elif known is not None and mine != known[0]:
                found.append("a signature not the model's, byte for byte")
            elif (
                known is not None and i >= turn and mine != SKIP_SIGNATURE and known[1] not in body
            ):
                found.append("a signed part of the current turn changed")
            first_call = first_call and not is_call
    return found


def _current_turn(raw_contents: Sequence[Mapping[str, Any]], contents: Sequence[Any]) -> list[str]:
    """Each model content of the current turn has its first call signed where the CLI's
    content of those calls had."""
    signed_step: dict[tuple[str, str], bool] = {}
    for content, ids in zip(raw_contents, identities(raw_contents), strict=True):
        first = _first_call(content)
        if first is not None:
            for part, key in zip(_parts(content), ids, strict=True):
                if "functionCall" in part:
                    signed_step[key] = SIGNATURE in first
    found: list[str] = []
    start = _turn_start(contents)
    for content, ids in list(zip(contents, identities(contents), strict=True))[start:]:
        first = _first_call(content)
        if first is None or SIGNATURE in first:
            continue
        calls = [k for p, k in zip(_parts(content), ids, strict=True) if "functionCall" in p]
        if any(signed_step.get(c, False) for c in calls):
            found.append("the current turn's first call unsigned")
    return found


def _turn_start(contents: Sequence[Any]) -> int:
    for i in range(len(contents) - 1, -1, -1):
        parts = _parts(contents[i])
        if (
            isinstance(contents[i], Mapping)
            and contents[i].get("role") == "user"
            and any("text" in p for p in parts)
            and not any("functionResponse" in p for p in parts)
        ):
            return i
    return len(contents)


def _first_call(content: object) -> Mapping[str, Any] | None:
    if not isinstance(content, Mapping) or content.get("role") != "model":
        return None
    return next((p for p in _parts(content) if "functionCall" in p), None)


def _parts(content: object) -> list[Mapping[str, Any]]:
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []
