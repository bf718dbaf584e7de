"""The proxy's HTTP server (aiohttp): each request to its provider's upstream, and only there.

Every request is placed first (``routes.py``): the API its path and credentials speak. One of
no API the proxy serves, or one that carries another provider's key, is answered by the proxy
itself (a 404 or a 400 that names the APIs it serves), counted, and forwarded nowhere.
``POST /v1/messages`` (Anthropic), ``POST /v1/chat/completions`` and ``/v1/responses``
(OpenAI), and Gemini's ``POST /v1beta/models/{model}:generateContent`` and
``:streamGenerateContent`` (or under ``/v1``; the model from the path, ``gemini.model_of``) go
through the compactor; what it cannot or should not handle goes upstream as it came, with a
log line that says why (kinds and counts only: no content, no header values). Any other path
of a served API is passed to that API's upstream as it came. But ``GET /`` (and
``/hdcontext/stats.json``) is hdcontext's own: the savings page of the proxy's sessions
(``dashboard.py``).

The log: a line at INFO for each request hdcontext compacted, a warning for each it sent as it
came (and why); at DEBUG, for every request, what came in (API, path, size), what hdcontext
decided and how long it took, and what the upstream answered (status, how long, the usage
read). Sizes, counts, ids and reasons only: never content, never a header's value.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from multidict import CIMultiDict

from ...core.session.reply import CompactResult
from ..storage.records import StoreUnavailable
from .anthropic import AnthropicApi
from .api import Api, Unsupported
from .compactor import Compacted, Compactor, NotJson, TooSlow, client_name
from .dashboard import Dashboard, add_routes
from .egress import tls_context
from .gemini import GeminiApi, model_of
from .guard import refusal
from .keepwarm import Caller, KeepWarm, Send
from .openai import OpenAiApi
from .resend import REFUSED_STATUS, refusal_kind
from .responses import ResponsesApi
from .routes import ApiName, Placed, place
from .uncarried import AS_SENT, NOT_FORWARDED, PASSED_THROUGH, Uncarried, path_kind
from .upstream import SESSION_HEADER, Forwarded, Upstream, forward, request_headers, saved
from .usage import from_json

log = logging.getLogger(__name__)

MAX_BODY = 512 * 1024 * 1024
"""The largest request body read (aiohttp's default, 1 MiB, is far below an agent's)."""
CONNECT_TIMEOUT_S = 30.0
READ_TIMEOUT_S = 900.0
"""Between two chunks of an answer: a model thinking for long before it streams."""
SAID_AGAIN_AFTER_S = 3600.0
"""Why a request went as it came is a warning once an hour per reason; the same reason again
(every later request of a conversation hdcontext cannot carry: the reason names its first
block that cannot be carried, so it stays the same) is a debug line meanwhile."""
SAID_KEPT = 256
"""Reasons remembered for that (the oldest forgotten first)."""


@dataclass
class ProxyState:
    compactor: Compactor
    upstreams: dict[str, Upstream]
    allowed: frozenset[str] = frozenset()
    """Host header values that name this proxy (set once it listens)."""
    client: aiohttp.ClientSession | None = None
    requests: int = 0
    compacted: int = 0
    unchanged: int = 0
    apis: dict[str, Api] = field(
        default_factory=lambda: {
            "anthropic": AnthropicApi(),
            "openai": OpenAiApi(),
            "responses": ResponsesApi(),
            "gemini": GeminiApi(),
        }
    )
    dashboard: Dashboard | None = None
    """The savings page (``GET /``) of the sessions this proxy keeps."""
    keep_warm: KeepWarm | None = None
    """The refresh calls' timers (``--keep-warm``; None: off)."""
    tallies: set[asyncio.Future[None]] = field(default_factory=set)
    """Calls of conversations being taken in, told to their sessions once they are."""
    said: dict[str, float] = field(default_factory=dict)
    """The reasons warned of lately (``_unchanged``), with when."""
    uncarried: Uncarried = field(default_factory=Uncarried)
    """The requests hdcontext did not carry, by reason (``uncarried.py``)."""
    storing: asyncio.Future[None] | None = None
    """The counts of ``uncarried`` on their way to the store, every ``STORE_EVERY_S``."""

    async def settled(self) -> None:
        """Wait for the conversations being taken in and the calls told to them after
        (what a reader that must see every call on disk, a test, waits for)."""
        while self.tallies or self.compactor.taking_in():
            await asyncio.gather(*self.tallies, return_exceptions=True)
            await self.compactor.taken_in()

    def forwarded_as_sent(self) -> dict[str, Any]:
        """For the savings page: the requests sent to the model as the agent sent them since
        the proxy started, and why (kinds and counts, as the log says them); and those the
        proxy forwarded nowhere."""
        counted = self.uncarried
        return {
            "asSent": sum(counted.as_sent.values()),
            "reasons": _by_count(counted.as_sent),
            "notForwarded": sum(counted.not_forwarded.values()),
            "notForwardedReasons": _by_count(counted.not_forwarded),
            "passedThrough": sum(counted.passed_through.values()),
            "passedThroughReasons": _by_count(counted.passed_through),
        }

    async def store_uncarried(self) -> None:
        """Add the counts not stored yet to the store (kept for the next time if it fails)."""
        rows = self.uncarried.take()
        if not rows:
            return
        try:
            await self.compactor.daemon.store.add_passed(rows)
        except Exception as exc:
            self.uncarried.give_back(rows)
            if not isinstance(exc, StoreUnavailable):  # the store said that, once
                log.warning(
                    "the requests not carried were not counted on disk: %s", type(exc).__name__
                )


def _by_count(counted: dict[str, int]) -> list[dict[str, Any]]:
    reasons = sorted(counted.items(), key=lambda item: -item[1])
    return [{"why": why, "requests": n} for why, n in reasons]


TAKING_IN = "a conversation new to the proxy: it goes as it came while it is taken in"
DATABASE_AWAY = (
    "the sessions' database cannot be reached: requests go as they came until it is back"
)
STORE_EVERY_S = 5.0
"""How often the counts of the requests not carried are added to the store."""


async def _store_every(state: ProxyState) -> None:
    while True:
        await asyncio.sleep(STORE_EVERY_S)
        await state.store_uncarried()


STATE = web.AppKey("hdcontext_proxy", ProxyState)


@web.middleware
async def _guard(request: web.Request, handler: Any) -> web.StreamResponse:
    state = request.app[STATE]
    reason = refusal(request.headers.get("Host"), request.headers.get("Origin"), state.allowed)
    if reason is not None:
        log.warning("refused a request: %s", reason)
        return web.json_response({"error": {"message": f"hdcontext proxy: {reason}"}}, status=403)
    response: web.StreamResponse = await handler(request)
    return response


def build_app(state: ProxyState) -> web.Application:
    app = web.Application(middlewares=[_guard], client_max_size=MAX_BODY)
    app[STATE] = state
    if state.dashboard is not None:
        state.dashboard.live = state.forwarded_as_sent
        add_routes(app, state.dashboard)
    app.router.add_route("*", "/{tail:.*}", _dispatch)
    app.cleanup_ctx.append(_client)
    return app


async def _client(app: web.Application) -> Any:
    state = app[STATE]
    timeout = aiohttp.ClientTimeout(
        total=None, sock_connect=CONNECT_TIMEOUT_S, sock_read=READ_TIMEOUT_S
    )
    # No cookies kept between clients; each upstream's proxy, if any, is its route's
    # (egress.py), read once at start, not the environment's at every request.
    state.client = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=tls_context()),
        timeout=timeout,
        cookie_jar=aiohttp.DummyCookieJar(),
        trust_env=False,
    )
    # What start-up made (modules, the app) lives as long as the proxy: the garbage
    # collector need not walk it at every full collection (the compactor freezes what a
    # conversation taken in adds the same way).
    gc.freeze()
    state.storing = asyncio.ensure_future(_store_every(state))
    yield
    state.storing.cancel()
    await asyncio.wait({state.storing})
    await state.client.close()
    try:
        if state.tallies:
            await asyncio.gather(*state.tallies, return_exceptions=True)
        await state.store_uncarried()
        await state.compactor.close()
    except Exception as exc:  # stopping goes on; only the last calls' usage is lost
        log.warning("usage not saved at stop: %s", type(exc).__name__)


def _session(state: ProxyState) -> aiohttp.ClientSession:
    assert state.client is not None
    return state.client


WEBSOCKET = (
    "the proxy carries these APIs over HTTP, not over a WebSocket: the agent's HTTP transport "
    "takes the request (Codex falls back to it at once). Nothing was forwarded"
)
"""Why a WebSocket upgrade is refused (426): Codex's built-in OpenAI provider tries its
Responses API over a WebSocket first and sends each turn as new items after a
``previous_response_id`` there, which leaves nothing to compact; refused, it uses HTTP."""

CARRIED: dict[tuple[str, str], str] = {
    ("POST", "/v1/messages"): "anthropic",
    ("POST", "/v1/chat/completions"): "openai",
    ("POST", "/v1/responses"): "responses",
}
"""The requests whose conversation goes through hdcontext, by method and path: the API
(``ProxyState.apis``) that reads them. Gemini's, whose path names the model, are found by
``gemini.model_of``."""


async def _dispatch(request: web.Request) -> web.StreamResponse:
    """Every request but the page's: placed (``routes.place``), then through hdcontext, to
    its API's upstream as it came, or answered here."""
    placed = place(request.path, request.headers, request.query)
    if placed.api is None:
        return _not_forwarded(request.app[STATE], request, placed)
    if request.headers.get("Upgrade", "").lower() == "websocket":
        return _not_forwarded(request.app[STATE], request, Placed(None, WEBSOCKET, 426))
    carried = CARRIED.get((request.method, request.path))
    state = request.app[STATE]
    if carried is not None and state.apis[carried].upstream == placed.api:
        return await _through(request, carried)
    if placed.api == "gemini":
        model = model_of(request.method, request.path)
        if model is not None:
            return await _through(request, "gemini", model)
    return await _passthrough(request, placed.api)


def _not_forwarded(state: ProxyState, request: web.Request, placed: Placed) -> web.Response:
    """The proxy's own answer to a request it forwards nowhere, counted for the savings page
    and said in the log (the method and the reason: no value the caller sent)."""
    state.requests += 1
    state.uncarried.note(placed.api or "", NOT_FORWARDED, placed.why)
    log.warning("%s request not forwarded: %s", request.method, placed.why)
    message = f"hdcontext proxy: {placed.why}"
    error_type = "not_found_error" if placed.status == 404 else "invalid_request_error"
    headers = {"Upgrade": "HTTP/1.1"} if placed.status == 426 else None
    return web.json_response(
        {"error": {"type": error_type, "code": placed.status, "message": message}},
        status=placed.status,
        headers=headers,
    )


async def _passthrough(request: web.Request, name: ApiName) -> web.StreamResponse:
    state = request.app[STATE]
    state.uncarried.note(name, PASSED_THROUGH, path_kind(request.method, request.path))
    body = await request.read()
    log.debug("%s %s %s: %d bytes, passed through", name, request.method, request.path, len(body))
    started = time.perf_counter()
    done = await forward(_session(state), request, state.upstreams[name], body)
    _answered(name, request.path, done, started)
    return done.response


def _answered(name: str, what: str, done: Forwarded, started: float) -> None:
    """The DEBUG line of an upstream's answer: status, time, the usage read (counts)."""
    if not log.isEnabledFor(logging.DEBUG):
        return
    billed = done.billed
    usage = (
        f"usage {billed.input_tokens} in ({billed.cache_read_tokens} cache read, "
        f"{billed.cache_write_tokens} cache write), {billed.output_tokens} out"
        if billed is not None
        else "no usage read"
    )
    kind = "body" if isinstance(done.response, web.Response) else "stream"
    log.debug(
        "%s %s: upstream answered %d (%s) in %.0f ms, %s",
        name,
        what,
        done.status,
        kind,
        (time.perf_counter() - started) * 1000,
        usage,
    )


async def _through(request: web.Request, name: str, model: str | None = None) -> web.StreamResponse:
    """``model``: the model the request is for, when its path names it (Gemini's)."""
    state = request.app[STATE]
    api = state.apis[name]
    upstream = state.upstreams[api.upstream]
    raw = await read_body(request)
    state.requests += 1
    log.debug("%s %s: %d bytes in", name, request.path, len(raw))
    started = time.perf_counter()
    compacted = await _compacted(state, api, request, raw, model)
    body = compacted.body if compacted is not None else raw
    billed_of = api.billed if compacted is not None else None
    sent = time.perf_counter()
    log.debug(
        "%s %s: hdcontext %s in %.0f ms",
        name,
        compacted.session_id if compacted is not None else "(no session)",
        _verdict(compacted),
        (sent - started) * 1000,
    )
    saving = compacted.saving if compacted is not None else None
    told: list[Forwarded] = []

    async def tell(done: Forwarded) -> None:
        """A streamed answer's call told to its session before the answer ends."""
        assert compacted is not None
        told.append(done)
        await _tally(state, name, compacted.session_id, done)

    carried = compacted is not None and not compacted.passed
    try:
        done: Forwarded = await forward(
            _session(state),
            request,
            upstream,
            body,
            billed_of,
            saving,
            api.name,
            tell if carried else None,
        )
    finally:
        if compacted is not None and compacted.forwarded is not None:
            compacted.forwarded.set()  # its conversation is taken in now, off its way
    await saved(saving)  # an answer in one body goes out once this handler returns
    _answered(name, compacted.session_id if compacted is not None else request.path, done, sent)
    again = compacted is not None and _edit_refused(compacted, raw, done)
    if again:
        assert compacted is not None
        done = await _again_as_sent(state, request, api, raw, compacted.session_id, done)
    if compacted is not None and compacted.passed:
        # Its conversation is being taken in: what the call billed is told once it is,
        # after the answer went out (an answer in one body would wait for it otherwise).
        tally = asyncio.ensure_future(_tally(state, name, compacted.session_id, done))
        state.tallies.add(tally)
        tally.add_done_callback(state.tallies.discard)
    elif compacted is not None and not told:
        await _tally(state, name, compacted.session_id, done)
    if state.keep_warm is not None and compacted is not None and not compacted.passed:
        # A call went out: the session's refresh timer starts again from what the daemon
        # named (none after a refused call: what the provider holds is not known).
        ok = done.status == 200 and compacted.params is not None and not again
        caller = Caller(
            api=name,
            path=request.path_qs,
            headers=request_headers(request.headers),
            params=compacted.params or {},
        )
        state.keep_warm.note(compacted.session_id, caller, compacted.refresh_at if ok else None)
    return done.response


async def _tally(state: ProxyState, name: str, session_id: str, done: Forwarded) -> None:
    """The call told to its session: taken back when the upstream refused it (nothing was
    billed or cached, so the agent's retry is weighed against what the provider really
    holds), its usage noted when the answer gave one. The answer has gone out already, or
    goes whatever becomes of this: a failure costs the tally only."""
    if done.refused:
        try:
            await state.compactor.refused(session_id)
        except Exception as exc:
            log.warning("%s: a refused call not taken back: %s", name, type(exc).__name__)
    if done.billed is not None:
        try:
            await state.compactor.record(session_id, done.billed)
        except Exception as exc:
            log.warning("%s: usage not recorded: %s", name, type(exc).__name__)


def _edit_refused(compacted: Compacted, raw: bytes, done: Forwarded) -> bool:
    """Whether the provider refused a request hdcontext changed, before any of its answer
    went to the client (``resend.py``)."""
    return (
        not compacted.passed
        and compacted.body != raw
        and done.status == REFUSED_STATUS
        and type(done.response) is web.Response
    )


async def _again_as_sent(
    state: ProxyState,
    request: web.Request,
    api: Api,
    raw: bytes,
    session_id: str,
    done: Forwarded,
) -> Forwarded:
    """The request again, as the agent sent it (its answer is the one the agent gets); the
    refused call taken back, the reason counted, and the conversation sent as it comes
    from now on when this one went through."""
    body = done.response.body if isinstance(done.response, web.Response) else b""
    kind = refusal_kind(body if isinstance(body, bytes) else b"")
    why = f"the provider refused the request hdcontext edited ({kind}): sent again as it came"
    _unchanged(state, api, why)
    try:
        await state.compactor.refused(session_id)
    except Exception as exc:
        log.warning("%s: a refused call not taken back: %s", api.name, type(exc).__name__)
    started = time.perf_counter()
    upstream = state.upstreams[api.upstream]
    again = await forward(_session(state), request, upstream, raw, api.billed, None, api.name)
    _answered(api.name, session_id, again, started)
    if again.status < 400:
        state.compactor.as_sent.add(session_id)
        log.warning(
            "%s %s: the provider took the request as the agent sent it; this conversation "
            "goes as it comes from now on",
            api.name,
            session_id,
        )
    return again


def refresher(state: ProxyState) -> Send:
    """How ``--keep-warm`` makes a refresh call: the request ``Compactor.refresh_body``
    writes, sent with the headers of the session's last request (its key among them), the
    answer read whole, its usage told to the daemon. Logged without content or headers."""

    async def send(session_id: str, caller: Caller, result: CompactResult, at: int) -> None:
        api = state.apis[caller.api]
        upstream = state.upstreams[api.upstream]
        data = state.compactor.refresh_body(api, caller.params, result)
        url = upstream.url(caller.path)
        headers = CIMultiDict(caller.headers)
        headers["Content-Type"] = "application/json"
        headers.update(upstream.route.request_headers(url))
        try:
            async with _session(state).post(
                url,
                data=data,
                headers=headers,
                proxy=upstream.route.via,
                proxy_headers=upstream.route.connect_headers(url),
            ) as response:
                answer = await response.read()
                status = response.status
        except aiohttp.ClientConnectorError:
            await state.compactor.refused(session_id)  # it never left: nothing refreshed
            raise
        billed = from_json(answer, api.billed) if status == 200 else None
        log.info(
            "keep-warm %s: a refresh call of %d bytes answered %d%s",
            session_id,
            len(data),
            status,
            ""
            if billed is None
            else f" ({billed.cache_read_tokens} tokens read from the cache, "
            f"{billed.cache_write_tokens} written)",
        )
        if status >= 400:
            await state.compactor.refused(session_id)  # nothing was billed or refreshed
        if status != 200:
            raise RefreshRefused(f"the upstream answered {status}")
        if billed is not None:
            await state.compactor.record(session_id, billed, at)

    return send


class RefreshRefused(RuntimeError):
    """The upstream did not take a refresh call (the session's timer stops)."""


def _verdict(compacted: Compacted | None) -> str:
    if compacted is None:
        return "passed it on as it came"
    if compacted.passed:
        return "passed it on as it came, taking the conversation in meanwhile"
    return "compacted"


async def read_body(request: web.Request) -> bytes:
    """The request's body in one piece, its chunks joined once. ``request.read()`` grows a
    bytearray chunk by chunk and copies it whole at the end: for an agent's body of
    megabytes, several times the time of one copy."""
    content = request.content
    chunks: list[bytes] = []
    size = 0
    while chunk := await content.readany():
        size += len(chunk)
        if size > MAX_BODY:
            raise web.HTTPRequestEntityTooLarge(max_size=MAX_BODY, actual_size=size)
        chunks.append(chunk)
    return b"".join(chunks)


async def _compacted(
    state: ProxyState, api: Api, request: web.Request, raw: bytes, model: str | None = None
) -> Compacted | None:
    """The request through hdcontext, or ``None`` to send it as it came (and why, logged)."""
    try:
        compacted = await state.compactor.compact(
            api,
            raw,
            session=request.headers.get(SESSION_HEADER) or None,
            client=client_name(request.headers.get("User-Agent")),
            model=model,
        )
    except NotJson as exc:
        return _unchanged(state, api, str(exc))
    except Unsupported as exc:
        return _unchanged(state, api, f"not carried: {exc}")
    except TooSlow as exc:
        return _unchanged(state, api, str(exc))
    except StoreUnavailable:  # the store said it in the log, once, with why
        return _unchanged(state, api, DATABASE_AWAY, said=True)
    except Exception as exc:
        return _unchanged(state, api, f"hdcontext failed: {type(exc).__name__}")
    if compacted.passed:
        state.unchanged += 1
        state.uncarried.note(api.name, AS_SENT, TAKING_IN)
        log.info(
            "%s %s: a conversation not seen before (%d bytes) goes as it came while it is taken in",
            api.name,
            compacted.session_id,
            len(raw),
        )
        return compacted
    state.compacted += 1
    log.info(
        "%s %s: %d entries in, %d out, %d tokens, breakpoints %s, %d → %d bytes",
        api.name,
        compacted.session_id,
        compacted.entries_in,
        compacted.entries_out,
        compacted.tokens,
        list(compacted.breakpoints),
        len(raw),
        len(compacted.body),
    )
    return compacted


def _unchanged(state: ProxyState, api: Api, why: str, said: bool = False) -> Compacted | None:
    """``None``, after saying in the log why the request goes as it came: a warning the
    first time in an hour that this reason comes, a debug line for it again meanwhile (and
    only that when the reason was ``said`` already, by whom it concerns)."""
    state.unchanged += 1
    now, key = time.monotonic(), f"{api.name} {why}"
    state.uncarried.note(api.name, AS_SENT, why)
    last = state.said.get(key)
    if said or (last is not None and now - last < SAID_AGAIN_AFTER_S):
        log.debug("%s request forwarded unchanged again: %s", api.name, why)
        return None
    state.said.pop(key, None)
    state.said[key] = now
    while len(state.said) > SAID_KEPT:
        del state.said[next(iter(state.said))]
    log.warning("%s request forwarded unchanged: %s", api.name, why)
    return None
