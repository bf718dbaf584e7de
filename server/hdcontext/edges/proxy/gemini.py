"""Gemini's API at the proxy (``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent``, under ``/v1`` as well): Gemini CLI, the google-genai SDKs.

The conversation is the body's ``contents`` (``formats/importers/gemini_contents.py`` reads
them exactly, ``exporters/gemini.py`` writes them back): each content one entry, a model's an
``ai`` entry. Everything else of the body goes as sent, never read into the session:
``systemInstruction``, ``tools``, ``toolConfig``, ``generationConfig``, ``safetySettings``,
keys hdcontext does not know. The model is named by the path, not the body: the app hands
it to the compactor with the request (``model_of``), which names it to the daemon for its
prices.

A request is carried only when its contents come back from IContent exactly as they came (the
check imports the new contents and exports them again): a part kind hdcontext does not read, a
malformed content, a ``functionResponse`` that answers no call, and the request goes as it
came, the reason naming the content's index, the part's and its kind. So does one with an
explicit ``cachedContent``: the provider holds part of the prompt itself, the agent chose what,
and a conversation that goes on after what it cached is the agent's to shape (hdcontext would
price and prune it as if it were all sent); it is left as it is, whole.

Calls and responses pair by ``id``, else by name and order (Gemini CLI gives ids, the model
gives none; Gemini pairs id-less ones by place, and so do the validity rules:
``core.validity.gemini_turn``). A part's ``thoughtSignature`` stays on its part byte for byte,
and goes only with it; Gemini CLI's own ``skip_thought_signature_validator`` is a signature
like any other. Thought parts are the model's thinking: Gemini binds no thinking to what came
before it (its rows' ``bound_thinking`` is off), so only the rule every model gets holds
(``core/history/thinking.py``: the latest turn is not touched while its tool use goes on).

Gemini caches implicitly, at any prefix two requests share (from a minimum of 1,024 or 4,096
tokens), with no breakpoint to place and no write premium: the proxy marks nothing. Usage is
``usageMetadata`` (``usage.gemini_billed``), from a response, the events of ``alt=sse`` or the
JSON array of a stream without it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from ...core.content import IContent
from ...core.validity import Turn, gemini_turn
from ...formats.conversation import FormatError
from ...formats.exporters import gemini as exporter
from ...formats.gemini_parts import kind_of
from ...formats.importers import gemini_contents as importer
from .api import Shape, Unsupported
from .usage import Billed, gemini_billed

CARRIED_METHODS: Final = frozenset({"generateContent", "streamGenerateContent"})
_CALL: Final = re.compile(r"/(?:v1beta|v1)/models/([^/:]+):([A-Za-z]+)")
_WITH_PROVIDER_CACHE: Final = "cachedContent"


def model_of(method: str, path: str) -> str | None:
    """The model a request whose conversation hdcontext carries is for (``POST
    /v1beta/models/{model}:generateContent`` or ``:streamGenerateContent``, or under
    ``/v1``); ``None`` for any other request of Gemini's (``countTokens``, listings, files,
    ``cachedContents``, a tuned model's path), which goes as it came."""
    found = _CALL.fullmatch(path)
    if method != "POST" or found is None or found.group(2) not in CARRIED_METHODS:
        return None
    return found.group(1)


def asks_the_provider(body: Mapping[str, Any]) -> str | None:
    """Why a request must go as it came although its contents could be carried, or
    ``None``."""
    if body.get(_WITH_PROVIDER_CACHE) is not None:
        return f"the provider holds part of the prompt ({_WITH_PROVIDER_CACHE})"
    return None


class GeminiApi:
    name = "gemini"
    upstream = "gemini"
    key = "contents"
    prompt_roles: frozenset[str] = frozenset()

    def head(self, messages: Sequence[Any]) -> int:
        return 0  # the system instruction is a field of its own

    def opens(self, element: object, previous: object) -> bool:
        return isinstance(element, Mapping) and element.get("role") == "model"

    def check(self, messages: Sequence[Any], offset: int) -> None:
        """Unsupported unless the contents come back exactly as they came."""
        contents = list(messages)
        try:
            entries = importer.from_contents(contents, offset, exact=True)
        except FormatError as exc:
            raise Unsupported(str(exc)) from None
        again = [c for entry in entries for c in exporter.export_entry(entry)]
        if again == contents:
            return
        for k, (came, written) in enumerate(zip(contents, again, strict=False)):
            if came != written:
                raise Unsupported(
                    f"contents[{offset + k}]{_where(came, written)} would not be sent as it came"
                )
        raise Unsupported(f"contents[{offset + min(len(contents), len(again))}] would not be sent")

    def import_messages(self, messages: list[Any], offset: int = 0) -> list[IContent]:
        try:
            return importer.from_contents(messages, offset, exact=True)
        except FormatError as exc:
            raise Unsupported(str(exc)) from None

    def as_sent(self, body: Mapping[str, Any]) -> str | None:
        return asks_the_provider(body)

    def start(self, body: Mapping[str, Any], head: Sequence[Any]) -> object:
        """The system instruction and the functions' names (Gemini CLI's side requests, a
        summary or a check with prompts of their own, are conversations of their own)."""
        names: list[object] = []
        tools = body.get("tools")
        for tool in tools if isinstance(tools, list) else []:
            declared = tool.get("functionDeclarations") if isinstance(tool, Mapping) else None
            if isinstance(declared, list):
                names += [d.get("name") for d in declared if isinstance(d, Mapping)]
            elif isinstance(tool, Mapping):
                names += sorted(tool)  # a built-in tool: googleSearch, codeExecution…
        return {"system": body.get("systemInstruction"), "tools": names}

    def export_mode(self, body: Mapping[str, Any], messages: Sequence[Any], before: str) -> str:
        return ""

    def export_entry(self, item: IContent, mode: str) -> list[dict[str, Any]]:
        return exporter.export_entry(item)

    def shape(self, message: Mapping[str, Any]) -> Shape:
        """Each content is sent as its own (one entry, one content), never merged: Gemini
        takes contents of one role in a row, and older Gemini CLIs sent many."""
        parts = message.get("parts")
        listed = [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []
        answers = sum(1 for p in listed if "functionResponse" in p)
        return Shape(
            role="assistant" if message.get("role") == "model" else "user",
            merges=False,
            results=answers > 0,
            only_results=answers > 0 and answers == len(listed),
            thinking=any(p.get("thought") is True or "thoughtSignature" in p for p in listed),
        )

    def turn(self, message: Mapping[str, Any]) -> Turn | None:
        return gemini_turn(message)

    def merge(self, first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
        """Never asked (no content merges): the first, as it is."""
        return dict(first)

    def refresh_fields(self, conversation: list[dict[str, Any]], line: str) -> dict[str, Any]:
        """(``--keep-warm`` refreshes Anthropic's sessions only; this is what one of
        Gemini's would send.)"""
        said = {"parts": [{"text": line}], "role": "user"}
        return {"contents": [*conversation, said], "generationConfig": {"maxOutputTokens": 1}}

    def assemble(
        self,
        body: Mapping[str, Any],
        shapes: Sequence[Shape],
        last_of: Sequence[int],
        breakpoints: Sequence[int],
        ttls: Sequence[str],
    ) -> list[tuple[int, str]]:
        return []  # an implicit cache: no breakpoint to place

    def mark(self, message: Mapping[str, Any], ttl: str) -> dict[str, Any]:
        return dict(message)

    def body_edits(self, body: Mapping[str, Any], marked: Sequence[str]) -> dict[str, Any]:
        return {}

    def billed(self, usage: object) -> Billed | None:
        return gemini_billed(usage)


def _where(came: object, written: object) -> str:
    """Where a content that would not come back as it came first differs: its part's index
    and kind (never content)."""
    parts = came.get("parts") if isinstance(came, Mapping) else None
    again = written.get("parts") if isinstance(written, Mapping) else None
    if not isinstance(parts, list) or not isinstance(again, list):
        return ""
    for j, part in enumerate(parts):
        if j >= len(again) or part != again[j]:
            kind = kind_of(part) if isinstance(part, Mapping) else None
            return f".parts[{j}] ({kind or 'part'})"
    return ""
