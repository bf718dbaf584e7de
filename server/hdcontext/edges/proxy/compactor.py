"""The hdcontext part of a proxied request: conversation in, compacted request out.

One request: the conversation becomes IContent (the provider's importer), goes to its session
as ``history/sync`` does it (these clients resend everything: what is new is appended, an
edited or regenerated message forks), is compacted as ``history/compact`` does it with ``at``
the time of the call, and comes back as the provider's request with the breakpoints the
daemon named (``cache.breakpoints``). The
session's calls go through the daemon's own methods, so the proxy's sessions are locked,
stored and committed exactly like an editor's, in the same private storage.

The part is bounded in time: past ``bound_s`` it is cancelled (a compaction that was cancelled
changes nothing) and the caller forwards the request as it came. So is a result that would
break the provider's rules, which is checked on the rebuilt body before it goes anywhere.

A turn costs what it adds, not what the conversation holds. For each session the compactor
keeps what it made of the previous request (``Seen``): its messages, the entries and digests
they became, and each returned entry exported. A resent conversation is compared with it
message by message; only what follows the last assistant message they share is checked,
imported and digested again (an assistant message starts exactly one entry in both APIs,
and calls are answered right after theirs, so nothing before it depends on what follows);
and only the entries the daemon returns for the first time are exported.

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
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ...core.content import IContent, entry_from_json
from ...core.sync import entry_digest
from ...core.validity import problems
from ..daemon.conversation import Conversation as Resent
from ..daemon.daemon import Daemon
from .api import Api, Unsupported
from .usage import Billed

DEFAULT_BOUND_S = 10.0
SESSION_PREFIX = "proxy-"
KEPT_SESSIONS = 16
"""Conversations whose previous request the compactor keeps (the ones used last)."""


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


@dataclass(frozen=True)
class Seen:
    """What the compactor made of a session's previous request. Kept as bytes where it can
    be (one object a message or an entry, not a tree of them), so that what the proxy holds
    between requests adds little to what the garbage collector walks."""

    messages: tuple[bytes, ...]
    """Each message of the conversation, as JSON."""
    wire: tuple[bytes, ...]
    """Each entry as IContent JSON, as the daemon's sync takes it."""
    digests: tuple[bytes, ...]
    cuts: Mapping[int, int]
    """Message index of each assistant message (and 0) → index of the entry it starts."""
    mode: str = ""
    exports: Mapping[bytes, list[dict[str, Any]]] = field(default_factory=dict)
    """Each entry the daemon returned (its stored JSON) as the provider's messages."""


@dataclass(frozen=True)
class _Taken:
    messages: tuple[bytes, ...]
    wire: tuple[bytes, ...]
    digests: tuple[bytes, ...]
    cuts: dict[int, int]
    reused: int
    """Entries taken from the previous request as they were."""


class _Known(Resent):
    """The resent conversation with its digests already made (most of them last time), its
    entries parsed only from where the daemon asks for them (what it does not hold)."""

    def __init__(self, wire: Sequence[bytes], digests: Sequence[bytes]) -> None:
        super().__init__([])
        self._wire = wire
        self._made = list(digests)

    @property
    def total(self) -> int:
        return len(self._wire)

    def digests(self) -> list[bytes]:
        return list(self._made)

    def raw_from(self, start: int) -> list[Any]:
        return [orjson.loads(w) for w in self._wire[start:]]


def _shared(messages: Sequence[bytes], before: Sequence[bytes]) -> int:
    """How many leading messages the two requests have equal."""
    n = min(len(messages), len(before))
    k = 0
    while k < n and messages[k] == before[k]:
        k += 1
    return k


def _take(api: Api, messages: list[Any], seen: Seen | None) -> _Taken:
    """The conversation as entries' JSON and digests, reusing the previous request's up to
    the last assistant message both share."""
    encoded = tuple(orjson.dumps(m) for m in messages)
    cut = 0
    if seen is not None:
        shared = _shared(encoded, seen.messages)
        cut = max((c for c in seen.cuts if c <= shared), default=0)
    api.check(messages, cut)
    tail = api.import_messages(messages[cut:])
    kept = seen.cuts[cut] if seen is not None and cut else 0
    # The kept part was valid and ends before an assistant message: what follows is checked.
    found = problems(tail)
    if found:
        raise Unsupported(f"the conversation breaks the provider's rules ({found[0].kind})")
    wire = [e.to_wire() for e in tail]
    cuts = {c: e for c, e in (seen.cuts.items() if seen is not None else ()) if c <= cut}
    cuts[0] = 0
    ai = [kept + i for i, e in enumerate(tail) if e.speaker == "ai"]
    assistants = [
        cut + i
        for i, m in enumerate(messages[cut:])
        if isinstance(m, Mapping) and m.get("role") == "assistant"
    ]
    if len(ai) == len(assistants):
        cuts.update(zip(assistants, ai, strict=True))
    head_wire = seen.wire[:kept] if seen is not None else ()
    head_digests = seen.digests[:kept] if seen is not None else ()
    return _Taken(
        messages=encoded,
        wire=(*head_wire, *(orjson.dumps(w) for w in wire)),
        digests=(*head_digests, *(entry_digest(w) for w in wire)),
        cuts=cuts,
        reused=kept,
    )


class Compactor:
    def __init__(self, daemon: Daemon, bound_s: float = DEFAULT_BOUND_S) -> None:
        self.daemon = daemon
        self.bound_s = bound_s
        self.context_limit: int | None = None
        """``contextLimit`` for the sessions the proxy opens (None: the settings' own)."""
        self._seen: OrderedDict[str, Seen] = OrderedDict()

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
        messages = api.messages(body)
        if session is None:
            api.check(messages[:1], 0)
            session = session_id_for(api, client, body, api.import_messages(messages[:1])[0])
        # The agents behind the proxy have no hdcontext_retrieve tool: pointers say so.
        self.daemon.serve_without_retrieve_tool(session)
        seen = self._seen.get(session)
        taken = await asyncio.to_thread(_take, api, messages, seen)
        model = body.get("model")
        params: dict[str, Any] = {
            "sessionId": session,
            "entries": _Known(taken.wire, taken.digests),
        }
        if isinstance(model, str) and model:
            params["model"] = model
        if self.context_limit is not None:
            params["contextLimit"] = self.context_limit
        await self.daemon.sync(params)
        result = await self.daemon.compact_result(session, 0, now_ms() if at is None else at)
        blobs = result.history.blobs
        breakpoints = tuple(result.cache.breakpoints) or (len(blobs) - 1,)
        mode = api.export_mode(body)
        known = seen.exports if seen is not None and seen.mode == mode else {}

        def rebuild() -> tuple[bytes, dict[bytes, list[dict[str, Any]]]]:
            exports: dict[bytes, list[dict[str, Any]]] = {}
            exported: list[list[dict[str, Any]]] = []
            for blob in blobs:
                produced = known.get(blob)
                if produced is None:
                    produced = api.export_entry(entry_from_json(blob), mode)
                exports[blob] = produced
                exported.append(produced)
            out = api.assemble(body, exported, breakpoints)
            if api.problems(out):
                raise InvalidResult("the compacted request breaks the provider's rules")
            return orjson.dumps(out), exports

        data, exports = await asyncio.to_thread(rebuild)
        self._keep(
            session, Seen(taken.messages, taken.wire, taken.digests, taken.cuts, mode, exports)
        )
        return Compacted(
            body=data,
            session_id=session,
            entries_in=len(taken.wire),
            entries_out=len(blobs),
            tokens=result.status.total_tokens,
            breakpoints=breakpoints,
        )

    def _keep(self, session: str, seen: Seen) -> None:
        self._seen[session] = seen
        self._seen.move_to_end(session)
        while len(self._seen) > KEPT_SESSIONS:
            self._seen.popitem(last=False)

    async def record(self, session_id: str, billed: Billed, at: int | None = None) -> None:
        """``history/usage`` for the call just made."""
        await self.daemon.usage(
            billed.params(session_id, now_ms() if at is None else at),
            write_1h_tokens=billed.cache_write_1h_tokens,
        )


def _consume(task: asyncio.Future[Any]) -> None:
    """A part given up on may still fail: its exception is nobody's to raise."""
    if not task.cancelled():
        task.exception()
