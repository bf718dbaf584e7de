"""A conversation as a Gemini request body: ``{"systemInstruction"?, "contents"}``.

An ``ai`` entry is a ``model`` content; ``human`` and ``tool`` entries are ``user`` contents
(responses as ``functionResponse`` parts). Thinking is a ``thought: true`` text part; a code
block in Python is ``executableCode`` (Gemini runs no other language), any other a fenced text;
a text that came from ``codeExecutionResult`` goes back as one. ``thoughtSignature`` goes back
on the part it came with, as Gemini requires. Each block's part is ``gemini_parts.part_of``'s:
a part read from a request (``exact``) goes back in the shape it came in.

Empty or whitespace-only texts are left out (Gemini refuses empty text parts), and so is a
content they leave with no parts; in a user content that ``export`` writes, ``functionResponse``
parts come first (``export_entry``, the proxy's, keeps the parts in the order they came).

A response's result and error go in the documented ``{"output": …, "error": …}`` object; a
result that is already an object with other keys is sent as it is. Call ids are written (the
Gemini API pairs calls and responses by them) except the ones the importer made up for calls
that had none.

One rule of Gemini 3 shapes what ``export_entry`` writes: the first call of each model content
of the current turn must carry a thought signature (in parallel calls the model signs only the
first). When pruning took a content's signed first call and left a later one of the same
content first, that one goes with the signature Gemini documents for a call its model's
signature does not cover (``skip_thought_signature_validator``, which Gemini CLI itself writes
where one is missing), so that the request is not refused for it.
"""

from __future__ import annotations

from typing import Any

from ...core.content import IContent, ToolCallBlock
from ..conversation import Conversation, Exported, entry_role
from ..gemini_parts import CONTENT, SIGNATURE, SIGNED_STEP, SKIP_SIGNATURE, extra, fill, part_of
from .common import Losses


def export(conversation: Conversation) -> Exported:
    losses = Losses()
    contents: list[dict[str, Any]] = []
    for entry in conversation.entries:
        if entry.speaker == "human" and entry_role(entry.metadata) in ("system", "developer"):
            losses.drop("system role as user text")
        contents.extend(_contents(entry, losses, answers_first=True))
    payload: dict[str, Any] = {"contents": contents}
    if conversation.system is not None:
        payload = {"systemInstruction": {"parts": [{"text": conversation.system}]}, **payload}
    return Exported(payload, losses.as_dict())


def export_entry(entry: IContent, losses: Losses | None = None) -> list[dict[str, Any]]:
    """One entry as its content (none when nothing of it can be written), its parts in the
    order of its blocks."""
    return _contents(entry, losses if losses is not None else Losses(), answers_first=False)


def _contents(entry: IContent, losses: Losses, answers_first: bool) -> list[dict[str, Any]]:
    model = entry.speaker == "ai"
    role = "model" if model else "user"
    parts: list[dict[str, Any]] = []
    first_call: ToolCallBlock | None = None
    for block in entry.blocks:
        part, lost = part_of(block, model)
        if lost is not None:
            losses.drop(lost)
        if part is None:
            continue
        if first_call is None and isinstance(block, ToolCallBlock) and model:
            first_call = block
            if SIGNATURE not in part and extra(block, SIGNED_STEP):
                part = {**part, SIGNATURE: SKIP_SIGNATURE}
        parts.append(part)
    if answers_first and not model:
        parts.sort(key=lambda p: "functionResponse" not in p)  # stable: answers first
    if not parts:
        losses.drop(f"empty {entry.speaker} entry")
        return []
    shape = extra(entry.blocks[0], CONTENT)
    if isinstance(shape, dict):
        return [fill(shape, {"parts": parts, "role": role})]
    return [{"parts": parts, "role": role}]
