"""The hdcontext part of a proxied request: conversation in, compacted request out.

One request: the conversation becomes IContent (the provider's importer), goes to its session
as ``history/sync`` does it (these clients resend everything: what is new is appended, an
edited or regenerated message forks), is compacted as ``history/compact`` does it with ``at``
the time of the call, and comes back as the provider's request with the breakpoints the
daemon named (``cache.breakpoints``; the last entry alone when the daemon names none). The
session's calls go through the daemon's own methods, so the proxy's sessions are locked,
stored and committed exactly like an editor's, in the same private storage.

The part is bounded in time: past ``bound_s`` it is cancelled (a compaction that was cancelled
changes nothing) and the caller forwards the request as it came. So is a result that would
break the provider's rules, which is checked on the rebuilt body before it goes anywhere.

A session is named by the header ``x-hdcontext-session`` when the client sends one, else by a
digest of the API, the client's name (its User-Agent's first word), its system prompt and
tools, and the conversation's first entry: the same conversation resent is the same session,
an edited one a fork of it, and a client's side requests (a title, a summary, with prompts of
their own) sessions of their own.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ...core.content import IContent
from ..daemon import Daemon
from .api import Api
from .usage import Billed

DEFAULT_BOUND_S = 10.0
SESSION_PREFIX = "proxy-"


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class InvalidResult(RuntimeError):
    """The rebuilt request breaks the provider's rules: it is not sent."""


class TooSlow(TimeoutError):
    """hdcontext's part took longer than the bound."""


@dataclass(frozen=True)
class Compacted:
    body: bytes
    session_id: str
    entries_in: int
    entries_out: int
    tokens: int
    breakpoints: tuple[int, ...]


def client_name(user_agent: str | None) -> str:
    """The product a User-Agent names first (``claude-cli``, ``OpenAI``…)."""
    if not user_agent:
        return ""
    return user_agent.strip().split("/", 1)[0].split(" ", 1)[0][:40]


def session_id_for(api: Api, client: str, body: Mapping[str, Any], first: IContent) -> str:
    key = orjson.dumps(
        [api.name, client, api.start(body), first.to_wire()],
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=str,
    )
    digest = hashlib.blake2b(key, digest_size=12).hexdigest()
    return f"{SESSION_PREFIX}{api.name}-{digest}"


class Compactor:
    def __init__(self, daemon: Daemon, bound_s: float = DEFAULT_BOUND_S) -> None:
        self.daemon = daemon
        self.bound_s = bound_s

    async def compact(
        self,
        api: Api,
        body: dict[str, Any],
        *,
        session: str | None = None,
        client: str = "",
        at: int | None = None,
    ) -> Compacted:
        """The request to send instead of ``body``; raises on anything that should send
        ``body`` as it came (Unsupported, TooSlow, InvalidResult, or a failure)."""
        task = asyncio.ensure_future(self._compact(api, body, session, client, at))
        done, _ = await asyncio.wait({task}, timeout=self.bound_s)
        if not done:
            task.cancel()
            task.add_done_callback(_consume)
            raise TooSlow(f"hdcontext took longer than {self.bound_s:g} s")
        return task.result()

    async def _compact(
        self, api: Api, body: dict[str, Any], session: str | None, client: str, at: int | None
    ) -> Compacted:
        entries = await asyncio.to_thread(api.conversation, body)
        session_id = session or session_id_for(api, client, body, entries[0])
        model = body.get("model")
        params: dict[str, Any] = {
            "sessionId": session_id,
            "entries": [e.to_wire() for e in entries],
        }
        if isinstance(model, str) and model:
            params["model"] = model
        await self.daemon.sync(params)
        result = await self.daemon.compact_result(session_id, 0, now_ms() if at is None else at)
        history = list(result.history)
        named = result.cache.to_wire().get("breakpoints")
        breakpoints = (
            tuple(i for i in named if isinstance(i, int))
            if isinstance(named, list)
            else (len(history) - 1,)
        )

        def rebuild() -> bytes:
            out = api.rebuild(body, history, breakpoints)
            if api.problems(out):
                raise InvalidResult("the compacted request breaks the provider's rules")
            return orjson.dumps(out)

        data = await asyncio.to_thread(rebuild)
        return Compacted(
            body=data,
            session_id=session_id,
            entries_in=len(entries),
            entries_out=len(history),
            tokens=result.status.total_tokens,
            breakpoints=breakpoints,
        )

    async def record(self, session_id: str, billed: Billed, at: int | None = None) -> None:
        """``history/usage`` for the call just made."""
        await self.daemon.usage(billed.params(session_id, now_ms() if at is None else at))


def _consume(task: asyncio.Future[Any]) -> None:
    """A part given up on may still fail: its exception is nobody's to raise."""
    if not task.cancelled():
        task.exception()
