"""Who writes the summary for the LLM strategies (middle-out, one-shot).

Never a model the user did not choose (DESIGN.md decision 7): by default the daemon asks the
editor with the ``history/summarize`` request, and the editor's extension runs the model its
user picked. With ``summarizer.provider = openai`` the daemon itself calls an OpenAI-compatible
``/chat/completions`` endpoint (``summarizer.baseUrl``, ``summarizer.model``, the key read from
the environment variable that ``summarizer.apiKeyEnv`` names, so the key is never a setting
that could be synced or logged). Any failure is a SummarizerError naming the provider and the
reason, which the client sees as -32002; nothing ever falls back to another strategy.

The HTTP call uses the standard library (urllib, on a worker thread): one POST does not warrant
a dependency. Neither the prompt, the messages nor the key are ever logged.
"""

from __future__ import annotations

import asyncio
import json
import os
import urllib.error
import urllib.request
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from lsprotocol import types
from pydantic import ValidationError
from pygls.exceptions import JsonRpcException
from pygls.protocol import JsonRPCProtocol

from ...core.compression.types import SummarizeRequest, SummarizerError
from ...core.content import IContent, dump_entries
from ...core.settings import Settings
from ...core.tokens import block_text
from .wire import SummarizeAnswer

SUMMARIZE_METHOD = "history/summarize"
DEFAULT_TIMEOUT_S = 300.0
TIMEOUT_ENV = "HDCONTEXT_SUMMARIZE_TIMEOUT"
"""Seconds to wait for a summary (the editor's answer or the endpoint's); default 300."""

_ROLES = {"human": "user", "ai": "assistant", "tool": "user"}


def timeout_seconds() -> float:
    raw = os.environ.get(TIMEOUT_ENV)
    if raw:
        try:
            value = float(raw)
        except ValueError:
            return DEFAULT_TIMEOUT_S
        if value > 0:
            return value
    return DEFAULT_TIMEOUT_S


# -- the editor ---------------------------------------------------------------------------------


async def ask_client(
    protocol: JsonRPCProtocol, session_id: str, request: SummarizeRequest, timeout: float
) -> str:
    """Send ``history/summarize`` to the editor and return its ``text``."""
    params = {
        "sessionId": session_id,
        "strategy": request.strategy,
        "prompt": request.prompt,
        "messages": dump_entries(request.messages),
    }
    msg_id = f"hdcontext-summarize-{uuid.uuid4()}"
    future = asyncio.wrap_future(protocol.send_request(SUMMARIZE_METHOD, params, msg_id=msg_id))
    try:
        answer = await asyncio.wait_for(future, timeout)
    except TimeoutError:
        protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        raise SummarizerError(
            "client", f"the editor did not answer {SUMMARIZE_METHOD} within {timeout:g} s"
        ) from None
    except asyncio.CancelledError:
        # The compaction was cancelled (or the daemon is shutting down): tell the editor.
        protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id=msg_id))
        raise
    except JsonRpcException as exc:
        raise SummarizerError(
            "client",
            f"the editor answered {SUMMARIZE_METHOD} with error {exc.code}: {exc.message}",
        ) from None
    if isinstance(answer, Mapping):
        answer = dict(answer)
    try:
        return SummarizeAnswer.model_validate(answer).text
    except ValidationError:
        raise SummarizerError(
            "client", f"the editor's answer to {SUMMARIZE_METHOD} has no 'text' string"
        ) from None


# -- an OpenAI-compatible endpoint ----------------------------------------------------------------


def chat_messages(request: SummarizeRequest) -> list[dict[str, str]]:
    """The prompt as the system message, then each entry as plain text in its role."""
    out = [{"role": "system", "content": request.prompt}]
    for entry in request.messages:
        out.append({"role": _ROLES[entry.speaker], "content": entry_text(entry)})
    return out


def entry_text(entry: IContent) -> str:
    return "\n\n".join(text for text in (block_text(b) for b in entry.blocks) if text)


def _post(url: str, body: bytes, headers: dict[str, str], timeout: float) -> bytes:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        data: bytes = resp.read()
        return data


async def ask_openai(settings: Settings, request: SummarizeRequest, timeout: float) -> str:
    base = settings.summarizer_base_url
    model = settings.summarizer_model
    if not base:
        raise SummarizerError("openai", "summarizer.baseUrl is not set")
    if not model:
        raise SummarizerError("openai", "summarizer.model is not set")
    if not base.startswith(("http://", "https://")):
        raise SummarizerError("openai", f"summarizer.baseUrl {base!r} is not an http(s) URL")
    headers = {"Content-Type": "application/json", "Accept": "application/json"}
    key_env = settings.summarizer_api_key_env
    if key_env:
        key = os.environ.get(key_env)
        if not key:
            raise SummarizerError(
                "openai", f"the environment variable {key_env} (summarizer.apiKeyEnv) is not set"
            )
        headers["Authorization"] = f"Bearer {key}"
    url = base.rstrip("/") + "/chat/completions"
    body = json.dumps(
        {"model": model, "messages": chat_messages(request)}, ensure_ascii=False
    ).encode("utf-8")
    try:
        data = await asyncio.to_thread(_post, url, body, headers, timeout)
    except urllib.error.HTTPError as exc:
        detail = _error_detail(exc)
        raise SummarizerError("openai", f"{url} answered HTTP {exc.code}{detail}") from None
    except urllib.error.URLError as exc:
        raise SummarizerError("openai", f"cannot reach {url}: {exc.reason}") from None
    except TimeoutError:
        raise SummarizerError("openai", f"{url} did not answer within {timeout:g} s") from None
    except OSError as exc:
        raise SummarizerError("openai", f"cannot reach {url}: {exc}") from None
    return _completion_text(url, data)


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read()[:2000]
        payload = json.loads(raw)
        message = payload.get("error", {}).get("message") if isinstance(payload, dict) else None
    except (OSError, ValueError, AttributeError):
        message = None
    return f": {str(message)[:200]}" if message else ""


def _completion_text(url: str, data: bytes) -> str:
    try:
        payload: Any = json.loads(data)
        content = payload["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise SummarizerError(
            "openai", f"{url} did not answer with a chat completion (choices[0].message.content)"
        ) from None
    if not isinstance(content, str):
        raise SummarizerError("openai", f"{url} answered a message without text content")
    return content


# -- per session ----------------------------------------------------------------------------------


class SessionSummarizer:
    """A session's summarizer (``core.session.SessionSummarizer``): picks the provider from
    the settings the compaction runs with, so a setting changed between two compactions takes
    effect at the next one."""

    def __init__(
        self,
        session_id: str,
        protocol: Callable[[], JsonRPCProtocol],
        timeout: Callable[[], float] = timeout_seconds,
    ) -> None:
        self._session_id = session_id
        self._protocol = protocol
        self._timeout = timeout

    def __call__(self, request: SummarizeRequest, settings: Settings) -> Awaitable[str]:
        return self._summarize(request, settings)

    async def _summarize(self, request: SummarizeRequest, settings: Settings) -> str:
        if settings.summarizer_provider == "openai":
            return await ask_openai(settings, request, self._timeout())
        return await ask_client(self._protocol(), self._session_id, request, self._timeout())
