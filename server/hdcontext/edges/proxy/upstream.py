"""Forwarding to the provider, and the answer back to the client as it came.

Every header of the client's request goes upstream (its API key among them, and nowhere else)
except those that describe one hop of HTTP (``Connection``, ``Host``, ``Content-Length``…) and
hdcontext's own ``x-hdcontext-session``; the client's ``Accept-Encoding`` is replaced by the
HTTP library's, which decodes the answer, so that its usage can be read. The answer keeps its
status, headers (less the hop ones and the encoding already undone) and body: a refusal reaches
the client with the upstream's status and body. An event stream is passed on chunk by chunk as
it arrives, and so is Gemini's stream without ``alt=sse`` (one JSON array the model writes as
it goes: read whole first, the agent would see nothing of it until its end). An upstream that
cannot be reached is a 502 that names which one.

Never worse than no proxy, when the upstream breaks off too. An event stream cut short (the
connection gone before the closing chunk, a read that timed out) reaches the client as the same
broken transfer: its connection is closed without the closing chunk, so that its HTTP library
raises as it would have without the proxy and its SDK may retry, where a proxy that ended the
response properly would hand it a cut-off answer that looks finished. A JSON answer cut short
has not reached the client yet (it is read whole, for its usage): it becomes a 502 in the API's
error shape that says which upstream broke off, which SDKs retry as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import aiohttp
import aiohttp.payload
from aiohttp import web
from aiohttp.abc import AbstractStreamWriter
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from .egress import DIRECT, Route
from .usage import Billed, StreamUsage, from_json

log = logging.getLogger(__name__)
T = TypeVar("T")

SESSION_HEADER = "x-hdcontext-session"
HOP_HEADERS = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "trailers",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)
_REQUEST_DROP = HOP_HEADERS | {"accept-encoding", SESSION_HEADER}
_RESPONSE_DROP = HOP_HEADERS | {"content-encoding"}
MAX_USAGE_BODY = 64 * 1024 * 1024
"""A JSON answer longer than this is passed on without reading its usage."""


@dataclass(frozen=True)
class Upstream:
    name: str
    """``anthropic``, ``openai`` or ``gemini``."""
    base: URL
    route: Route = DIRECT
    """Directly, or through the proxy the environment names (``egress.py``)."""

    def url(self, path_qs: str) -> URL:
        """The upstream URL for a request path: the base's path, then the request's, without
        a second version segment when the base already ends with it
        (``https://api.openai.com/v1``, a Gemini base ending in ``/v1beta``)."""
        base_path = self.base.path.rstrip("/")
        path = path_qs
        version = "/" + base_path.rpartition("/")[2]
        if version in ("/v1", "/v1beta", "/v1alpha") and (
            path == version or path.startswith((version + "/", version + "?"))
        ):
            path = path[len(version) :]
        return URL(str(self.base.with_path("").with_query(None)) + base_path + path, encoded=True)

    def shown(self) -> str:
        """The base for a log line or an error: no user or password in it."""
        return str(self.base.with_user(None))


def request_headers(headers: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in _REQUEST_DROP)


def response_headers(headers: CIMultiDictProxy[str]) -> CIMultiDict[str]:
    return CIMultiDict((k, v) for k, v in headers.items() if k.lower() not in _RESPONSE_DROP)


def unreachable(upstream: Upstream, exc: BaseException) -> web.Response:
    """The 502 a client gets when the upstream cannot be reached, in the API's error shape."""
    return bad_gateway(upstream, f"could not be reached ({type(exc).__name__})")


def broke_off(upstream: Upstream, exc: BaseException) -> web.Response:
    """The 502 a client gets when the upstream's answer stopped short of its end."""
    return bad_gateway(upstream, f"broke off its answer ({type(exc).__name__})")


def bad_gateway(upstream: Upstream, what: str) -> web.Response:
    """A 502 in the API's error shape, so that the client's SDK reads it as the provider's
    own error (and retries it); the message names the upstream (no user or password) and
    what went wrong, never a header or the conversation."""
    message = f"hdcontext proxy: the {upstream.name} upstream ({upstream.shown()}) {what}"
    if upstream.name == "anthropic":
        body: object = {"type": "error", "error": {"type": "api_error", "message": message}}
    elif upstream.name == "gemini":
        body = {"error": {"code": 502, "message": message, "status": "UNAVAILABLE"}}
    else:
        body = {"error": {"message": message, "type": "upstream_unreachable", "code": 502}}
    return web.json_response(body, status=502)


class _Body(aiohttp.payload.BytesPayload):
    """A request body sent after its headers, not joined to them. aiohttp writes a body's
    headers and its bytes in one piece, copied together on Pythons before 3.12.9: a copy of
    the whole conversation (a millisecond at 3 MB) on every request's way upstream."""

    async def write_with_length(
        self, writer: AbstractStreamWriter, content_length: int | None
    ) -> None:
        value: bytes = self._value
        if content_length is not None and content_length < len(value):
            value = value[:content_length]
        if len(value) >= SEPARATE_HEADERS_BYTES:
            writer.send_headers()
        await writer.write(value)


SEPARATE_HEADERS_BYTES = 64 * 1024
"""From this size on, a body is written apart from its headers (a write more, a copy less)."""


@dataclass
class Forwarded:
    response: web.StreamResponse
    billed: Billed | None
    status: int
    refused: bool = False
    """The call is known not to have reached the model: the upstream answered it with an
    error status, or could not be connected to. (Not a call cut off after it was sent, nor
    one its client gave up: the provider may have run those.)"""


async def forward(
    client: aiohttp.ClientSession,
    request: web.Request,
    upstream: Upstream,
    body: bytes,
    billed_of: Callable[[object], Billed | None] | None = None,
    saving: asyncio.Future[None] | None = None,
    dialect: str | None = None,
    before_end: Callable[[Forwarded], Awaitable[None]] | None = None,
) -> Forwarded:
    """Send ``body`` upstream in place of the request's, and answer the client with what comes
    back. ``billed_of`` reads the usage of a successful answer (``None``: not read), from an
    event stream as the API ``dialect`` writes it (the upstream's name when not said).
    ``saving``: the session's commit being written; a streamed answer ends only after it, and
    after ``before_end`` (the call told to its session: its usage read, so that the client's
    next request, which may come the moment the answer ends, finds it told) (an answer in one
    body goes out after ``forward`` returns: its caller waits for both)."""
    if _gone(request):  # while hdcontext worked: no call is made for nobody
        return _given_up(upstream, "before the call was made")
    url = upstream.url(request.path_qs)
    headers = request_headers(request.headers)
    headers.update(upstream.route.request_headers(url))
    try:
        answer = await _unless_gone(
            request,
            client.request(
                request.method,
                url,
                data=_Body(body),
                headers=headers,
                allow_redirects=False,
                proxy=upstream.route.via,
                proxy_headers=upstream.route.connect_headers(url),
            ),
        )
    except ClientGone:
        return _given_up(upstream, "before its answer began")
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        log.warning(
            "%s upstream %s unreachable: %s", upstream.name, upstream.shown(), type(exc).__name__
        )
        response = unreachable(upstream, exc)
        return Forwarded(response, None, 502, isinstance(exc, aiohttp.ClientConnectorError))
    async with answer:
        headers = response_headers(answer.headers)
        read = billed_of is not None and answer.status == 200
        if _streamed(request, answer):
            usage_of = billed_of if read else None
            streamed = await _stream(
                request,
                answer,
                headers,
                upstream,
                usage_of,
                saving,
                dialect or upstream.name,
                before_end,
            )
            return replace(streamed, refused=answer.status >= 400)
        try:
            data = await _unless_gone(request, answer.read())
        except ClientGone:
            return _given_up(upstream, "while its answer was read")
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            log.warning(
                "%s upstream %s broke off an answer (status %d): %s",
                upstream.name,
                upstream.shown(),
                answer.status,
                type(exc).__name__,
            )
            return Forwarded(broke_off(upstream, exc), None, 502, answer.status >= 400)
        billed = None
        if read and billed_of is not None and len(data) <= MAX_USAGE_BODY:
            billed = from_json(data, billed_of)
        response = web.Response(
            status=answer.status, reason=answer.reason, headers=headers, body=data
        )
        return Forwarded(response, billed, answer.status, answer.status >= 400)


GEMINI_STREAM = ":streamGenerateContent"


def _streamed(request: web.Request, answer: aiohttp.ClientResponse) -> bool:
    """Whether an answer goes on as it arrives: an event stream, or a Gemini stream's
    answer in JSON (an error's comes whole)."""
    if answer.content_type == "text/event-stream":
        return True
    return answer.status == 200 and request.path.endswith(GEMINI_STREAM)


class ClientGone(Exception):
    """The client's connection closed while the proxy waited on the upstream for it."""


GONE_CHECK_S = 0.5
"""How often a wait on the upstream looks whether its client is still there."""
CLIENT_CLOSED = 499
"""The status logged for a call the client gave up (nginx's "client closed request")."""


async def _unless_gone(request: web.Request, work: Awaitable[T]) -> T:
    """``work``, given up (cancelled, its upstream connection closed) once the client's
    connection is closed. Without the proxy, a client that goes away (an agent stopped, its
    process ended) closes its connection to the provider, which stops working for it; through
    the proxy the upstream call would otherwise run to its end, billed, for nobody. (aiohttp
    does not cancel a handler whose client left: a stream's next write finds it, an answer
    in one body is waited for whole.)"""
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=GONE_CHECK_S)
            if done:
                return task.result()
            if _gone(request):
                raise ClientGone
    finally:
        if not task.done():
            abandon(task)


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def abandon(task: asyncio.Future[Any]) -> None:
    """Cancel work given up on. It may still fail as it goes: its exception is nobody's to
    raise (nor to be logged as never retrieved)."""
    task.cancel()
    task.add_done_callback(_consume)


def _consume(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()


def _given_up(upstream: Upstream, when: str) -> Forwarded:
    log.info(
        "%s upstream %s: the client went away %s; the call was given up",
        upstream.name,
        upstream.shown(),
        when,
    )
    return Forwarded(web.Response(status=CLIENT_CLOSED), None, CLIENT_CLOSED)


async def _stream(
    request: web.Request,
    answer: aiohttp.ClientResponse,
    headers: CIMultiDict[str],
    upstream: Upstream,
    billed_of: Callable[[object], Billed | None] | None,
    saving: asyncio.Future[None] | None,
    dialect: str,
    before_end: Callable[[Forwarded], Awaitable[None]] | None = None,
) -> Forwarded:
    response = web.StreamResponse(status=answer.status, reason=answer.reason, headers=headers)
    await response.prepare(request)
    usage = StreamUsage(dialect) if billed_of is not None else None
    try:
        async for chunk in answer.content.iter_any():
            if usage is not None:
                usage.feed(chunk)
            await response.write(chunk)
    except (TimeoutError, aiohttp.ClientError, OSError) as exc:
        # The upstream broke off, or the client went away. Either way the client's transfer
        # must not end as a whole one: close its connection before the closing chunk.
        log.warning("%s stream ended early: %s", upstream.name, type(exc).__name__)
        _break(request)
        return Forwarded(response, None, answer.status)
    await saved(saving)
    done = Forwarded(
        response, usage.billed if usage is not None else None, answer.status, answer.status >= 400
    )
    if before_end is not None:
        await before_end(done)
    await response.write_eof()
    return done


async def saved(saving: asyncio.Future[None] | None) -> None:
    """Wait for the session's commit to be on disk, so that an answer the client has whole
    survives the proxy killed right after (``tests/proxy/test_durability.py``). A write that
    failed was undone and logged (``Registry.commit_then_save``; the next request syncs
    again); the answer goes out all the same."""
    if saving is None:
        return
    with contextlib.suppress(Exception):
        await asyncio.shield(saving)


def _break(request: web.Request) -> None:
    """End the client's connection where its answer stands, as the upstream's ended: what was
    written is flushed, then the socket closes without the chunked body's last chunk, so the
    client sees an incomplete transfer. aiohttp's own end of the response then finds the
    connection closed and gives up quietly (a ConnectionError it expects)."""
    transport = request.transport
    if transport is not None and not transport.is_closing():
        transport.close()
