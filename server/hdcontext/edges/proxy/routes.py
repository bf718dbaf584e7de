"""Which provider's API a request speaks, so that it goes to that provider and to no other.

The proxy stands for three providers at one address. A request must reach the upstream of the
API it speaks, with its credentials, and no other: a Google key sent to OpenAI (or an OpenAI
key to Google) hands a secret to a party that was never meant to see it. So a request is
placed by its path first, by the API whose paths it has:

- Anthropic: ``/v1/messages`` (and ``/v1/messages/count_tokens``, its batches), ``/v1/complete``.
- Gemini: ``/v1beta/…``, ``/v1alpha/…``, ``/upload/…`` (files), and under ``/v1/`` a resource
  called with a method (``/v1/models/gemini-2.5-pro:generateContent``).
- OpenAI: the resources of its ``/v1`` API (``chat/completions``, ``responses``, ``models``,
  ``files``, ``embeddings``…).

A few ``/v1`` paths are shared (``/v1/models``, ``/v1/files``): there the credential says
which provider is meant (Anthropic's ``x-api-key`` and ``anthropic-version``, Google's
``x-goog-api-key`` or ``key=``). Then the credentials are checked against the API chosen: a
request that carries a credential only another provider issues (an ``x-goog-api-key`` or a
``key=`` parameter anywhere but Gemini, an ``x-api-key`` anywhere but Anthropic) is not
forwarded. ``Authorization: Bearer`` is every provider's, so it goes where the path says.

A request of no API the proxy serves (another provider's path, a typo, a version the proxy
does not know) is answered by the proxy itself and forwarded nowhere. Nothing of a refusal
quotes what was sent: it names header names and the path's kind, never a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal

ApiName = Literal["anthropic", "openai", "gemini"]

GEMINI_KEY_HEADER: Final = "x-goog-api-key"
GEMINI_KEY_PARAM: Final = "key"
ANTHROPIC_KEY_HEADER: Final = "x-api-key"

_ANTHROPIC_HEADERS = ("anthropic-version", ANTHROPIC_KEY_HEADER)
_ANTHROPIC_ROOTS = ("messages", "complete")
_OPENAI_ROOTS = frozenset(
    {
        "assistants",
        "audio",
        "batches",
        "chat",
        "completions",
        "containers",
        "conversations",
        "embeddings",
        "evals",
        "files",
        "fine_tuning",
        "images",
        "models",
        "moderations",
        "organization",
        "realtime",
        "responses",
        "threads",
        "uploads",
        "vector_stores",
    }
)
_SHARED_ROOTS = frozenset({"models", "files"})
"""``/v1`` resources more than one provider has: the credential says whose."""
_GEMINI_VERSIONS = ("v1beta", "v1alpha")
_GEMINI_V1_ROOTS = frozenset({"models", "tunedModels", "operations", "cachedContents"})
"""Gemini's resources under ``/v1``, when a Google credential names it."""
_GEMINI_METHODS = frozenset(
    {
        "generateContent",
        "streamGenerateContent",
        "countTokens",
        "embedContent",
        "batchEmbedContents",
        "batchGenerateContent",
        "asyncBatchEmbedContent",
        "predict",
        "predictLongRunning",
        "generateAnswer",
    }
)
"""The methods Gemini's ``/v1`` resources are called with (``models/x:generateContent``). An
OpenAI fine-tuned model's id holds colons too (``ft:gpt-4o:org:name:id``): the method after
the last one tells them apart."""

SERVED: Final = (
    "Anthropic Messages (POST /v1/messages, /v1/messages/count_tokens, GET /v1/models), "
    "OpenAI (POST /v1/chat/completions, /v1/responses, and the rest of its /v1 API), "
    "Gemini (/v1beta/models/{model}:generateContent, :streamGenerateContent, :countTokens, "
    "and the rest of /v1beta, /v1/models/{model}:…, /upload/…)"
)

_SHOWN: Final = {"anthropic": "Anthropic", "openai": "OpenAI", "gemini": "Gemini"}


@dataclass(frozen=True, slots=True)
class Placed:
    """Where a request goes: ``api`` (``None``: nowhere) and, when nowhere, why (for the
    proxy's own answer: kinds only) with the HTTP status of that answer."""

    api: ApiName | None
    why: str = ""
    status: int = 200


def place(path: str, headers: Mapping[str, str], query: Mapping[str, str]) -> Placed:
    """The API a request of ``path`` (no query) with ``headers`` (case-insensitive names)
    and ``query`` parameters speaks, checked against the credentials it carries."""
    api = _by_path(path, headers, query)
    if api is None:
        return Placed(
            None,
            f"{_kind(path)} is not a path of an API this proxy serves; it serves {SERVED}. "
            "Nothing was forwarded",
            404,
        )
    foreign = _foreign_credentials(api, headers, query)
    if foreign:
        return Placed(
            None,
            f"this {_SHOWN[api]} request carries {' and '.join(foreign)}, a credential of "
            f"another provider: it was not forwarded, so that no key reaches a provider it "
            "was not meant for",
            400,
        )
    return Placed(api)


def _by_path(path: str, headers: Mapping[str, str], query: Mapping[str, str]) -> ApiName | None:
    segments = path.strip("/").split("/")
    version, root = segments[0], segments[1] if len(segments) > 1 else ""
    if version in _GEMINI_VERSIONS or version == "upload":
        return "gemini" if root else None
    if version != "v1" or not root:
        return None
    if root in _ANTHROPIC_ROOTS:
        return "anthropic"
    called = segments[-1].rpartition(":")[2] in _GEMINI_METHODS and ":" in segments[-1]
    if root in _GEMINI_V1_ROOTS and (called or _has_google_key(headers, query)):
        return "gemini"
    if root in _SHARED_ROOTS and any(h in headers for h in _ANTHROPIC_HEADERS):
        return "anthropic"
    if root in _OPENAI_ROOTS:
        return "openai"
    return None


def _has_google_key(headers: Mapping[str, str], query: Mapping[str, str]) -> bool:
    return GEMINI_KEY_HEADER in headers or GEMINI_KEY_PARAM in query


def _foreign_credentials(
    api: ApiName, headers: Mapping[str, str], query: Mapping[str, str]
) -> list[str]:
    """The credentials of another provider a request for ``api`` carries, by name."""
    found: list[str] = []
    if api != "gemini":
        if GEMINI_KEY_HEADER in headers:
            found.append(f"a Google key header ({GEMINI_KEY_HEADER})")
        if GEMINI_KEY_PARAM in query:
            found.append(f"a Google key parameter ({GEMINI_KEY_PARAM}=)")
    if api != "anthropic" and ANTHROPIC_KEY_HEADER in headers:
        found.append(f"an Anthropic key header ({ANTHROPIC_KEY_HEADER})")
    return found


def _kind(path: str) -> str:
    """The path as a refusal may name it: its first two segments, each cut short, so that
    nothing long the caller wrote is echoed (``/v2/foo``, ``/api/…``)."""
    segments = [s[:32] for s in path.strip("/").split("/")[:2] if s]
    shown = "/" + "/".join(segments)
    return shown + ("/…" if len(path.strip("/").split("/")) > 2 else "")
