"""The two ways a request of Claude Code's goes through hdcontext, in this process: ``hdcontext
proxy``'s and the LiteLLM callback's, each over its own daemon on its own storage folder.

* ``ProxyPath``: the proxy's (``edges/proxy/app.py``): the body as it came to
  ``Compactor.compact`` with the proxy's ``AnthropicApi``; the answer's usage read from its event
  stream as the proxy reads it (``usage.StreamUsage``) and told with ``Compactor.record``; a
  conversation taken in meanwhile (``passed``) let go on once its answer came.
* ``GatewayPath``: the callback's (``litellm/gateway.py``): ``Gateway`` over a ``Process``, handed
  what LiteLLM 1.108.7 hands its hooks on ``/v1/messages``: the request parsed into ``data``, its
  own entries beside the client's fields (its metadata in ``litellm_metadata`` on that route, so
  the client's ``metadata`` stays the client's), ``call_type="anthropic_messages"``; after the
  call the success hook's ``kwargs`` with the usage as LiteLLM normalizes it (the shape
  ``tests/gateway/test_parts.py`` holds) and the response it logs (a ``ModelResponse``, its
  finish reason mapped from Anthropic's stop reason). What ``data`` holds after the pre-call hook
  is what LiteLLM sends upstream. LiteLLM itself is not needed: ``handler.py`` only hands its
  hooks' arguments to the gateway.

A replay's calls happened at their logs' times, not now. The proxy's path is given each call's
time (``at``); the callback's cannot be (LiteLLM calls its hooks as the call happens, and the
compactor reads the clock then), so ``Clock.installed`` points the compactor's clock
(``compactor.now_ms``) at the replay's while it runs: both paths see the same times.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Protocol

import orjson

from hdcontext.edges.daemon.retention import Retention
from hdcontext.edges.proxy import compactor as compactor_module
from hdcontext.edges.proxy.anthropic import AnthropicApi
from hdcontext.edges.proxy.api import Unsupported
from hdcontext.edges.proxy.app import TAKING_IN
from hdcontext.edges.proxy.compactor import (
    Compacted,
    Compactor,
    InvalidResult,
    TooSlow,
    client_name,
)
from hdcontext.edges.proxy.run import proxy_daemon, proxy_settings
from hdcontext.edges.proxy.usage import Billed, StreamUsage
from hdcontext.edges.storage.folder import prepare_folder
from hdcontext.edges.storage.location import Location
from hdcontext.litellm.deployments import Deployment
from hdcontext.litellm.gateway import Gateway
from hdcontext.litellm.runtime import Config, Process, Runtime

API = AnthropicApi()
CALL_TYPE = "anthropic_messages"
FINISH_REASONS = {"tool_use": "tool_calls", "end_turn": "stop", "max_tokens": "length"}
"""Anthropic's stop reasons as LiteLLM maps them into the response it logs."""
LITELLM_ENTRIES = frozenset(
    {
        "litellm_call_id",
        "litellm_logging_obj",
        "litellm_metadata",
        "proxy_server_request",
        "secret_fields",
    }
)
"""What LiteLLM puts into ``data`` beside the client's fields on ``/v1/messages`` (and never
sends upstream)."""
OWNER = SimpleNamespace(token="c" * 64, api_key="c" * 64, user_id="bench", team_id="replay")
"""The key LiteLLM authenticated (a ``UserAPIKeyAuth``'s fields the callback reads)."""


class Clock:
    """The replay's time, which the compactor reads instead of the machine's while installed."""

    def __init__(self) -> None:
        self.now = 0

    def read(self) -> int:
        return self.now

    @contextlib.contextmanager
    def installed(self) -> Iterator[Clock]:
        saved = compactor_module.now_ms
        compactor_module.now_ms = self.read
        try:
            yield self
        finally:
            compactor_module.now_ms = saved


@dataclass(frozen=True)
class Answer:
    """A call's answer as both paths are told it: Anthropic's ``usage`` and how it ended."""

    usage: dict[str, Any]
    stop_reason: str
    at: int


@dataclass(frozen=True)
class Sent:
    """What a path sent upstream: the client's fields, and whether hdcontext carried them."""

    fields: dict[str, Any]
    carried: bool
    why: str | None = None


def anthropic_usage(read: int, written: int, long: int, total: int, output: int) -> dict[str, Any]:
    """A call's ``usage`` as Anthropic writes it: ``input_tokens`` the tokens neither read from
    the cache nor written to it, the writes split by lifetime."""
    return {
        "input_tokens": total - read - written,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
        "cache_creation": {
            "ephemeral_5m_input_tokens": written - long,
            "ephemeral_1h_input_tokens": long,
        },
        "output_tokens": output,
    }


def event_stream(answer: Answer) -> bytes:
    """The answer's events that carry its usage and its end, as Anthropic streams them."""
    start = {"type": "message_start", "message": {"usage": {**answer.usage, "output_tokens": 1}}}
    delta = {
        "type": "message_delta",
        "delta": {"stop_reason": answer.stop_reason},
        "usage": {"output_tokens": answer.usage["output_tokens"]},
    }
    return b"".join(
        b"event: " + name.encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n"
        for name, event in (("message_start", start), ("message_delta", delta))
    )


def litellm_usage(usage: Mapping[str, Any]) -> dict[str, Any]:
    """Anthropic's ``usage`` as LiteLLM 1.108.7 normalizes it for its success hooks on
    ``/v1/messages``: ``prompt_tokens`` every input token, the cache's figures beside."""
    read = int(usage["cache_read_input_tokens"])
    written = int(usage["cache_creation_input_tokens"])
    prompt = int(usage["input_tokens"]) + read + written
    return {
        "completion_tokens": usage["output_tokens"],
        "prompt_tokens": prompt,
        "total_tokens": prompt + int(usage["output_tokens"]),
        "prompt_tokens_details": {"cached_tokens": read, "text_tokens": usage["input_tokens"]},
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
        "cache_creation": dict(usage["cache_creation"]),
    }


class ReplayPath(Protocol):
    """A path a replay feeds: each request, then its answer."""

    name: str

    async def start(self) -> None: ...

    async def send(self, raw: bytes, at: int) -> Sent: ...

    async def tell(self, answer: Answer) -> None: ...

    async def ledgers(self) -> dict[str, dict[str, Any]]: ...

    async def close(self) -> None: ...


def by_digest(listed: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Each session's status (its calls' usage and predicted bills, what it saved, its
    version…) by the digest that ends its name: both paths name a conversation by the same
    digest (the client, what starts it, its first entry), within their own prefixes."""
    return {
        str(s["sessionId"]).rsplit("-", 1)[-1]: {k: v for k, v in s.items() if k != "sessionId"}
        for s in listed["sessions"]
    }


class ProxyPath:
    """``hdcontext proxy``'s path over a daemon on ``folder``."""

    name = "proxy"

    def __init__(self, folder: Path, bound_s: float, user_agent: str) -> None:
        prepare_folder(folder)
        self.daemon = proxy_daemon(Location(folder=folder), proxy_settings(), Retention())
        self.compactor = Compactor(self.daemon, bound_s)
        self.client = client_name(user_agent)
        self._last: Compacted | None = None

    async def start(self) -> None:
        await self.daemon.start()
        self.compactor.resume({API.name: API})

    async def send(self, raw: bytes, at: int) -> Sent:
        self._last = None
        try:
            compacted = await self.compactor.compact(API, raw, client=self.client, at=at)
        except Unsupported as exc:  # said as the proxy's log and page say it (``app.py``)
            return Sent(orjson.loads(raw), False, f"not carried: {exc}")
        except (InvalidResult, TooSlow) as exc:
            return Sent(orjson.loads(raw), False, str(exc))
        except Exception as exc:
            return Sent(orjson.loads(raw), False, f"hdcontext failed: {type(exc).__name__}")
        self._last = compacted
        if compacted.passed:
            return Sent(orjson.loads(raw), False, TAKING_IN)
        return Sent(orjson.loads(compacted.body), True)

    async def tell(self, answer: Answer) -> None:
        compacted, self._last = self._last, None
        if compacted is None:
            return
        if compacted.forwarded is not None:
            compacted.forwarded.set()  # its answer came: the taking in goes on
        reader = StreamUsage("anthropic")
        reader.feed(event_stream(answer))
        billed: Billed | None = reader.billed
        if billed is not None:
            await self.compactor.record(compacted.session_id, billed, at=answer.at)

    async def ledgers(self) -> dict[str, dict[str, Any]]:
        return by_digest(await self.daemon.list({}))

    async def close(self) -> None:
        try:
            await self.compactor.close()
            await self.daemon.shutdown()
        finally:
            await self.daemon.store.close()


class GatewayPath:
    """The LiteLLM callback's path over a daemon on ``folder``."""

    name = "litellm"

    def __init__(self, folder: Path, bound_s: float, user_agent: str, model: str) -> None:
        config = Config(storage=Location(folder=folder), bound_s=bound_s)
        self.gateway = Gateway(
            Process(lambda: config), lambda group: Deployment(model, "anthropic")
        )
        self.user_agent = user_agent
        self._ids = itertools.count(1)
        self._last: str | None = None

    async def start(self) -> None:
        return None  # the callback starts hdcontext on its first request, as in LiteLLM

    def _data(self, raw: bytes) -> dict[str, Any]:
        """``raw`` as LiteLLM hands it to a pre-call hook on ``/v1/messages``."""
        data: dict[str, Any] = orjson.loads(raw)
        headers = {"user-agent": self.user_agent, "content-length": str(len(raw))}
        data["litellm_call_id"] = f"call-{next(self._ids)}"
        data["litellm_logging_obj"] = object()
        data["litellm_metadata"] = {"headers": headers, "user_api_key_hash": "c" * 64}
        data["proxy_server_request"] = {
            "url": "http://litellm/v1/messages",
            "method": "POST",
            "headers": headers,
            "body": orjson.loads(raw),
        }
        data["secret_fields"] = {"raw_headers": {"x-api-key": "sk-bench"}}
        return data

    def _uncarried(self) -> dict[str, int]:
        runtime: Runtime | None = self.gateway.process.runtime
        return dict(runtime.uncarried.as_sent) if runtime is not None else {}

    async def send(self, raw: bytes, at: int) -> Sent:
        """``at`` is the installed clock's time, which the callback's compactor reads."""
        data = self._data(raw)
        before = self._uncarried()
        await self.gateway.pre_call(OWNER, data, CALL_TYPE)
        self._last = data["litellm_call_id"]
        after = self._uncarried()
        noted = next((k for k, n in after.items() if n > before.get(k, 0)), None)
        why = noted.removeprefix(f"{API.name} ") if noted is not None else None
        if self.gateway.process.runtime is None:
            why = f"hdcontext is off: {self.gateway.process.off}"
        fields = {k: v for k, v in data.items() if k not in LITELLM_ENTRIES}
        return Sent(orjson.loads(orjson.dumps(fields)), why is None, why)

    async def tell(self, answer: Answer) -> None:
        call_id, self._last = self._last, None
        if call_id is None:
            return
        usage = litellm_usage(answer.usage)
        kwargs = {
            "litellm_call_id": call_id,
            "standard_logging_object": {"metadata": {"usage_object": usage}},
        }
        finish = FINISH_REASONS.get(answer.stop_reason, answer.stop_reason)
        response = {"choices": [{"finish_reason": finish}], "usage": usage}
        await self.gateway.succeeded(kwargs, response)

    async def ledgers(self) -> dict[str, dict[str, Any]]:
        runtime = self.gateway.process.runtime
        if runtime is None:
            return {}
        return by_digest(await runtime.daemon.list({}))

    async def close(self) -> None:
        await self.gateway.close()
