"""The hdcontext part of a proxied request: conversation in, compacted request out.

One request: the conversation becomes IContent (the provider's importer), goes to its session
as ``history/sync`` does it (these clients resend everything: what is new is appended, an
edited or regenerated message forks), is compacted as ``history/compact`` does it with ``at``
the time of the call, and comes back as the provider's request with the breakpoints the
daemon named (``cache.breakpoints``). The session's calls go through the daemon's own methods,
so the proxy's sessions are locked, stored and committed exactly like an editor's, in the same
private storage.

The part is bounded in time: past ``bound_s`` it is cancelled (a compaction that was cancelled
changes nothing) and the caller forwards the request as it came. So is a result that would
break the provider's rules, which is checked on what is sent before it goes anywhere.

A turn costs what it adds, not what the conversation holds. For each conversation the
compactor keeps what it made of the previous request (``Memo``): the request's bytes and where
each message stands in them (``prefix.py``), the entries they became (their digests, the calls
they made) and the messages it sent (``assembly.Pieces``). A new body is compared with the
kept bytes; the messages that lie inside the common prefix up to the last assistant message
there are not parsed, checked, imported or digested again (an assistant message starts
exactly one entry in both APIs, and calls are answered right after theirs, so nothing before
it depends on what follows); what follows is, and is checked as the continuation of what was
valid (``core.validity``). The daemon gets the new entries as IContent, parsed once. Out, only
the entries the daemon returns for the first time are exported and encoded, and the request
is the client's own bytes around the conversation written from kept pieces.

A conversation the proxy has not seen (a new or resumed chat) is read whole and handed to the
daemon in one ``history/sync`` of IContent entries, off the event loop. A restart loses no
memo of the last hour's conversations: the proxy keeps their last requests in its storage when
it stops (``keep_for_restart``) and takes them in again at its next start, in the background,
their sessions loaded and warmed (``resume``); a request that comes before its conversation is
taken in waits for it, one that comes after is a turn.

What the proxy holds is bounded (``kept.py``): the memos of the conversations used last, and
the daemon keeps the proxy's sessions used last loaded; the others stay in its storage, loaded
again when their agent comes back.

A session is named by the header ``x-hdcontext-session`` when the client sends one, else by a
digest of the API, the client's name (its User-Agent's first word), its system prompt and
tools, and the conversation's first entry: the same conversation resent is the same session,
an edited one a fork of it, and a client's side requests (a title, a summary, with prompts of
their own) sessions of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import hashlib
import logging
import time
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

import orjson

from ...core.content import IContent
from ...core.history.sync import entry_digest
from ...core.prices import lookup
from ...core.session.reply import CompactResult
from ...core.validity import entry_turn, turn_calls, turn_problems
from ..daemon import memory
from ..daemon.conversation import Conversation as Resent
from ..daemon.daemon import Daemon
from ..storage.records import ResumeRow
from .api import Api, Unsupported
from .assembly import Pieces, assemble, encoded
from .keepwarm import REFRESH_TEXT
from .kept import PROXY, Capacity, Kept
from .marks import ONE_HOUR, asks_long_in
from .openai_cache import (
    LONG_OPTIONS_TTL,
    LONG_OPTIONS_TTL_S,
    LONG_RETENTION,
    LONG_RETENTION_TTL_S,
    OPTIONS_KEY,
    RETENTION_KEY,
    retention_to_ask,
)
from .prefix import Layout, LayoutError, Splicer, after, common_prefix, find, walk
from .resend import AsSent
from .saving import SaveSoon
from .upstream import abandon
from .usage import Billed

log = logging.getLogger(__name__)
T = TypeVar("T")

DEFAULT_BOUND_S = 10.0
SESSION_PREFIX = "proxy-"
KEPT_LONG = 4096
"""Sessions remembered as asking an hour (a forgotten one is found again by its marks)."""
PASS_BYTES = 256 * 1024
"""The size from which a conversation the daemon does not know is forwarded as it came and
taken in meanwhile: a smaller one is taken in and compacted within its request (tens of
milliseconds), a larger one would hold its request up for seconds (a 3 MB one: counted,
indexed and stored)."""
RESUME_WITHIN_MS = 3600 * 1000
"""The conversations whose last request was made this recently are kept across a restart (an
hour: the longest a provider's prompt cache lasts; a restart is usually seconds)."""
AS_SENT = "the provider refused a request hdcontext edited in this conversation: it goes as sent"
FORWARD_WAIT_S = 900.0
"""How long a taking in waits for its request's answer before it starts anyway (the
upstream's own read timeout)."""
GLANCED = 64
"""Elements read to name the session of a conversation not seen before (its first entry)."""
INLINE_BYTES = 256 * 1024
"""A request whose new part is smaller is read on the event loop (a thread's hand-off costs
more than that); a larger one, or a conversation not seen before, on a worker thread."""


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class InvalidResult(RuntimeError):
    """The rebuilt request breaks the provider's rules: it is not sent."""


class NotJson(Unsupported):
    """The body is not a JSON object: nothing of it was read as a conversation."""


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
    passed: bool = False
    """The body is the client's, as it came: the conversation is being taken in."""
    refresh_at: int | None = None
    """When a refresh call would pay if no call came first (``cache.refreshAt``)."""
    params: Mapping[str, Any] | None = None
    """The request's fields besides its conversation (what a refresh call repeats)."""
    saving: asyncio.Future[None] | None = None
    """The session's commit being written while the request goes upstream (done once it
    is on disk; ``None``: written already). Its answer ends after it."""
    forwarded: asyncio.Event | None = None
    """For a conversation taken in meanwhile (``passed``): set by the caller once the
    request went upstream and its answer came back, which the taking in waits for (it must
    not slow the request down: it holds the interpreter for seconds at 10×)."""


def window_of(model: str | None) -> int | None:
    """The input window of the model a request names, when the price table knows the model
    itself (by its id or its family's): a session compresses near its own model's window,
    not near a default that can be a fraction of it (Codex's models take 272,000 tokens;
    compressing every turn from 170,000 on rewrote the whole cache at each, 1.99x the cost of
    sending everything in one real session)."""
    found = lookup(model)
    if found.row is None or found.how not in ("exact", "family"):
        return None
    return found.row.context_window


def _passed(raw: bytes, session: str) -> Compacted:
    """A request that goes as it came while its conversation is taken in."""
    return Compacted(
        body=raw,
        session_id=session,
        entries_in=0,
        entries_out=0,
        tokens=0,
        breakpoints=(),
        passed=True,
    )


def client_name(user_agent: str | None) -> str:
    """The product a User-Agent names first (``claude-cli``, ``OpenAI``…)."""
    if not user_agent:
        return ""
    return user_agent.strip().split("/", 1)[0].split(" ", 1)[0][:40]


def session_id_for(api: Api, client: str, start: object, first: object) -> str:
    """The session of a conversation: ``start`` is ``api.start`` of its request, ``first``
    its first entry as JSON (``to_wire``)."""
    key = orjson.dumps(
        [api.name, client, start, first],
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=str,
    )
    digest = hashlib.blake2b(key, digest_size=12).hexdigest()
    return f"{SESSION_PREFIX}{api.name}-{digest}"


@dataclass(frozen=True, slots=True)
class Memo:
    """What the compactor made of a conversation's previous request, kept as bytes and
    arrays where it can be (few objects for the garbage collector to walk)."""

    api: str
    session_id: str
    raw: bytes
    """The request's body as it came."""
    layout: Layout
    """Where each element of its ``messages`` stands in ``raw``."""
    head: int
    """Leading elements that are the client's prompt (not the conversation)."""
    first: bytes
    """The conversation's first entry as JSON (for the session id)."""
    digests: tuple[bytes, ...]
    """Each entry's digest, as the daemon's sync takes it."""
    calls: tuple[str, ...]
    """The call ids the entries make, in order."""
    cut_at: array[int]
    """Element index of each assistant message, increasing: where a request can resume."""
    cut_entry: array[int]
    """The entry each of those messages starts."""
    cut_calls: array[int]
    """How many of ``calls`` the entries before it make."""
    cut_mode: tuple[str, ...]
    """The export mode the messages before it give (``api.export_mode``)."""
    pieces: Pieces | None = None
    """The messages the request sent (``None`` until one was sent)."""
    no_long_mark: bool = False
    """Its bytes were looked through for a mark asking an hour (``marks.asks_long_in``) and
    held none: a request that shares its first bytes needs only the rest looked through."""
    client: str = ""
    """The client's name, as the session's is made of it (``client_name``)."""
    at: int = 0
    """When the request was made (ms; 0: it was not sent): the memos of the last hour are
    kept across a restart (``Compactor.keep_for_restart``)."""

    @property
    def size(self) -> int:
        return len(self.raw) + (self.pieces.size if self.pieces is not None else 0)

    def resumes(self, common: int) -> int:
        """The index in ``cut_at`` of the last assistant message whose elements before it
        lie within the first ``common`` bytes and hold the conversation's first message;
        -1 when there is none."""
        elements = self.layout.within(common)
        k = bisect_right(self.cut_at, elements) - 1
        return k if k >= 0 and self.cut_at[k] > self.head else -1


@dataclass(frozen=True)
class _Match:
    memo: Memo
    k: int
    """Index in ``memo.cut_at``: the request resumes at that assistant message."""

    @property
    def stop(self) -> int:
        """Where the known elements end in the body."""
        return self.memo.layout.ends[self.memo.cut_at[self.k] - 1]


@dataclass(frozen=True)
class _Taken:
    """A request's conversation, read: its body (the known messages cut out), its entries
    and what the next request needs of it."""

    body: dict[str, Any]
    memo: Memo
    """The memo of this request (``pieces`` not yet set)."""
    tail: list[IContent]
    """The entries not taken from a memo."""
    kept: int
    """Entries taken from a memo (before ``tail``)."""
    mode: str
    resent: Callable[[], list[IContent]]
    """Every entry, read again from the body (for a daemon that asks for known ones)."""


def best_match(api: Api, raw: bytes, memos: Iterable[Memo]) -> _Match | None:
    """Of ``memos``, the one that shares the most messages with ``raw``, byte for byte, and
    where its request resumes (the first best, in the order given)."""
    best: _Match | None = None
    for memo in memos:
        if memo.api != api.name or not len(memo.cut_at):
            continue
        k = memo.resumes(common_prefix(raw, memo.raw))
        if k >= 0 and (best is None or memo.cut_at[k] > best.memo.cut_at[best.k]):
            best = _Match(memo, k)
    return best


def _take(api: Api, raw: bytes, match: _Match | None, splicer: Splicer, client: str) -> _Taken:
    """The conversation of ``raw`` as entries, reusing what ``match`` knows when the body
    holds its bytes where it says. The known bytes end before an assistant message of the
    previous body; what follows them here must be one too (an edit may have put another
    message there): else the cut before it is tried, then the body is read whole."""
    for k in (match.k, match.k - 1) if match is not None else ():
        assert match is not None
        memo = match.memo
        if k < 0 or memo.cut_at[k] <= memo.head:
            break
        cut = memo.cut_at[k]
        stop = memo.layout.ends[cut - 1]
        body = splicer.parse(raw, memo.layout.starts[memo.head], stop, memo.head, api.key)
        if body is None:
            break
        _carried(api, body)
        elements: list[Any] = body[api.key]
        tail_messages = elements[memo.head + 1 :]
        # The element before the cut is the memo's, which opened no turn of the model.
        if not tail_messages or not api.opens(tail_messages[0], None):
            continue
        api.check(tail_messages, cut - memo.head)
        starts, ends = memo.layout.prefix(cut)
        try:
            layout: Layout | None = walk(raw, after(raw, stop, True), tail_messages, starts, ends)
        except LayoutError:
            layout = None
        head = elements[: memo.head]
        return _finish(api, raw, body, head, tail_messages, layout, memo, k, client)
    return _take_whole(api, raw, client)


def _parsed(api: Api, raw: bytes) -> tuple[dict[str, Any], list[Any], int]:
    """The body parsed whole: (the body, its ``messages``, how many of them are the
    client's prompt); Unsupported unless a conversation follows the prompt."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise NotJson("the body is not JSON") from None
    if not isinstance(body, dict):
        raise NotJson("the body is not a JSON object")
    _carried(api, body)
    elements = body.get(api.key)
    if not isinstance(elements, list) or not elements:
        raise Unsupported(f"no '{api.key}' list")
    head = api.head(elements)
    if head >= len(elements):
        raise Unsupported("no conversation after the system messages")
    return body, elements, head


def _carried(api: Api, body: Mapping[str, Any]) -> None:
    """Unsupported when the API says the request must go as it came (``api.as_sent``)."""
    reason = api.as_sent(body)
    if reason is not None:
        raise Unsupported(reason)


@dataclass(frozen=True)
class _Glance:
    """A body not seen before, parsed, and the session its conversation belongs to."""

    body: dict[str, Any]
    session_id: str


def _glance(api: Api, raw: bytes, client: str) -> _Glance:
    """Parse a body and name its session from its first message alone: what deciding how
    to take a conversation not seen before needs."""
    body, elements, head = _parsed(api, raw)
    # The first entry may span several elements (the Responses API's items of one turn):
    # enough of them are read that it is whole, as reading the conversation whole reads it.
    first = _whole_turns(api, elements[head:], GLANCED)
    api.check(first, 0)
    entries = api.import_messages(first, head)
    wire = entries[0].to_wire() if entries else None
    return _Glance(body, session_id_for(api, client, api.start(body, elements[:head]), wire))


def _whole_turns(api: Api, elements: list[Any], at_most: int) -> list[Any]:
    """The first ``at_most`` elements, less a turn of the model they cut (one whose items go
    on after them): checked alone, its reasoning would be read as led by nothing, and the
    request refused. Cut before the last element that opens a turn, if one does."""
    if len(elements) <= at_most or api.opens(elements[at_most], elements[at_most - 1]):
        return elements[:at_most]
    for end in range(at_most - 1, 0, -1):
        if api.opens(elements[end], elements[end - 1]):
            return elements[:end]
    return elements[:at_most]


def _take_whole(api: Api, raw: bytes, client: str, parsed: dict[str, Any] | None = None) -> _Taken:
    """The conversation of ``raw`` read whole (``parsed``: the body, when it was parsed)."""
    if parsed is None:
        body, elements, head_count = _parsed(api, raw)
    else:
        body = parsed
        elements = body[api.key]
        head_count = api.head(elements)
    messages = elements[head_count:]
    api.check(messages, 0)
    try:
        layout: Layout | None = find(raw, elements, api.key)
    except LayoutError:
        layout = None
    return _finish(api, raw, body, elements[:head_count], messages, layout, None, -1, client)


def _finish(
    api: Api,
    raw: bytes,
    body: dict[str, Any],
    head: list[Any],
    tail_messages: list[Any],
    layout: Layout | None,
    memo: Memo | None,
    k: int,
    client: str,
) -> _Taken:
    """Import, check and digest ``tail_messages``: the conversation's messages from the one
    ``memo`` resumes at (cut ``k``), or all of them when ``memo`` is ``None``; and make the
    memo of this request."""
    base = memo.cut_at[k] if memo is not None else len(head)  # tail_messages[0]'s element
    tail = api.import_messages(tail_messages, base)
    if memo is not None:
        kept = memo.cut_entry[k]
        calls_before = memo.calls[: memo.cut_calls[k]]
        mode = memo.cut_mode[k]
    else:
        kept, calls_before, mode = 0, (), ""
    turns = [entry_turn(e) for e in tail]
    found = turn_problems(turns, calls_before, kept) if kept else turn_problems(turns)
    if found:
        raise Unsupported(f"the conversation breaks the provider's rules ({found[0].kind})")
    wires = [e.to_wire() for e in tail]
    digests = (*(memo.digests[:kept] if memo is not None else ()), *map(entry_digest, wires))
    cut_at = memo.cut_at[: k + 1] if memo is not None else array("q")
    cut_entry = memo.cut_entry[: k + 1] if memo is not None else array("q")
    cut_calls = memo.cut_calls[: k + 1] if memo is not None else array("q")
    cut_mode = list(memo.cut_mode[: k + 1]) if memo is not None else []
    calls = list(calls_before)
    ai = iter(i for i, e in enumerate(tail) if e.speaker == "ai")
    opening = [
        api.opens(m, tail_messages[i - 1] if i else None) for i, m in enumerate(tail_messages)
    ]
    aligned = sum(1 for e in tail if e.speaker == "ai") == sum(opening)
    entry_at = 0
    for i, message in enumerate(tail_messages):
        if aligned and opening[i] and (i > 0 or memo is None):
            e = next(ai)
            for turn in turns[entry_at:e]:
                calls.extend(turn_calls(turn))
            entry_at = e
            cut_at.append(base + i)
            cut_entry.append(kept + e)
            cut_calls.append(len(calls))
            cut_mode.append(mode)
        elif aligned and opening[i]:
            next(ai)  # the message the request resumed at: its cut is the memo's
        mode = api.export_mode(body, (message,), mode)
    for turn in turns[entry_at:]:
        calls.extend(turn_calls(turn))
    first = memo.first if memo is not None else encoded(wires[0] if wires else None)
    session_id = session_id_for(api, client, api.start(body, head), orjson.loads(first))
    made = Memo(
        api=api.name,
        session_id=session_id,
        raw=raw,
        layout=layout if layout is not None else Layout(array("q"), array("q")),
        head=len(head),
        first=first,
        digests=digests,
        calls=tuple(calls),
        cut_at=cut_at if layout is not None else array("q"),
        cut_entry=cut_entry,
        cut_calls=cut_calls,
        cut_mode=tuple(cut_mode),
        client=client,
    )

    def resent() -> list[IContent]:
        return _take_whole(api, raw, client).tail

    return _Taken(body, made, tail, kept, mode, resent)


class _Known(Resent):
    """The conversation as ``Daemon.sync`` reads it: the digests made (most of them at the
    previous request), the new entries as IContent already (the daemon's bulk path: nothing
    parsed or validated twice), earlier ones read again from the body only if asked for."""

    def __init__(self, taken: _Taken) -> None:
        super().__init__([])
        self._taken = taken

    @property
    def total(self) -> int:
        return len(self._taken.memo.digests)

    def digests(self) -> list[bytes]:
        return list(self._taken.memo.digests)

    def entries_from(self, start: int) -> list[IContent]:
        taken = self._taken
        if start >= taken.kept:
            return taken.tail[start - taken.kept :]
        return taken.resent()[start:]

    def raw_from(self, start: int) -> list[Any]:
        return [e.to_wire() for e in self.entries_from(start)]


class Compactor:
    def __init__(
        self,
        daemon: Daemon,
        bound_s: float = DEFAULT_BOUND_S,
        pass_bytes: int = PASS_BYTES,
        capacity: Capacity = PROXY,
    ) -> None:
        self.daemon = daemon
        self.bound_s = bound_s
        self.pass_bytes = pass_bytes
        """A conversation the daemon does not know, this large or larger, goes as it came
        while it is taken in (``_pass``)."""
        self._ingests: dict[str, asyncio.Future[None]] = {}
        self.saving = SaveSoon(daemon)
        """What each call billed, saved soon after it was told (``saving.py``)."""
        self.context_limit: int | None = None
        """``contextLimit`` for the sessions the proxy opens (None: the settings' own)."""
        self.kept: Kept[Memo] = Kept(daemon, capacity)
        self._memos = self.kept.memos
        self._long: OrderedDict[str, None] = OrderedDict()
        """Sessions whose agent asked its prompt cache an hour (the latest ones)."""
        self._splicer = Splicer()
        self._resuming: list[tuple[ResumeRow, asyncio.Future[None]]] = []
        """The conversations of the last start's ``resume``, each done when taken in."""
        self._resume_task: asyncio.Task[None] | None = None
        self._listed: asyncio.Event | None = None
        """Set once ``resume`` has read which conversations it takes in."""
        self._forwarded: dict[str, asyncio.Event] = {}
        """Each taking in's wait for its request's answer (all set when the proxy stops)."""
        self.as_sent = AsSent()
        """Conversations whose edited request the provider refused (``resend.py``)."""

    async def compact(
        self,
        api: Api,
        raw: bytes,
        *,
        session: str | None = None,
        client: str = "",
        at: int | None = None,
        model: str | None = None,
    ) -> Compacted:
        """The request to send instead of ``raw``; raises on anything that should send
        ``raw`` as it came (Unsupported, TooSlow, InvalidResult, or a failure). ``model``:
        the model the request is for when its body does not name it (Gemini names it in
        the path)."""
        task = asyncio.ensure_future(self._compact(api, raw, session, client, at, model))
        done, _ = await asyncio.wait({task}, timeout=self.bound_s)
        if not done:
            abandon(task)
            raise TooSlow(f"hdcontext took longer than {self.bound_s:g} s")
        return task.result()

    async def _compact(
        self,
        api: Api,
        raw: bytes,
        session: str | None,
        client: str,
        at: int | None,
        model: str | None = None,
    ) -> Compacted:
        at = now_ms() if at is None else at
        if self._listed is not None:
            await self._listed.wait()
        if self._resuming:
            await self._resumed(raw)
        match = best_match(api, raw, reversed(self._memos.values()))
        glance: _Glance | None = None
        if match is not None and (session or match.memo.session_id) in self._ingests:
            return self._follow(api, raw, session or match.memo.session_id, client, at, model)
        if match is None:
            glance = await _off_loop(len(raw), _glance, api, raw, client)
            named = session or glance.session_id
            if named in self._ingests:
                return self._follow(api, raw, named, client, at, model)
            if len(raw) >= self.pass_bytes and not await self.daemon.knows(named):
                return await self._pass(api, raw, named, client, glance, at, model)
        if match is not None and len(raw) - match.stop < INLINE_BYTES:
            taken = _take(api, raw, match, self._splicer, client)
        elif glance is not None:
            taken = await asyncio.to_thread(_take_whole, api, raw, client, glance.body)
        else:
            taken = await asyncio.to_thread(_take, api, raw, match, self._splicer, client)
        frozen = taken.kept == 0 and len(taken.tail) >= memory.LARGE_APPEND
        session = session or taken.memo.session_id
        if session in self.as_sent:
            raise Unsupported(AS_SENT)
        if session in self._ingests:
            return self._follow(api, raw, session, client, at, model)
        before = self._memos.get(session)
        pieces = before.pieces if before is not None else None
        # Kept at once: the bytes are read whatever becomes of the rest of the request.
        self.kept.keep(session, _with_pieces(taken.memo, pieces))
        await self.kept.hold(session)
        overrides = self._lifetime(api, raw, taken.body, session, match)
        # The commit is written while the request goes upstream (its answer waits for it).
        result = await self.daemon.sync_compact(
            self._params(session, taken, model), at, overrides, save_later=True
        )
        saving = self.daemon.registry.saving(session)
        blobs = result.history.blobs
        breakpoints = tuple(result.cache.breakpoints) or (len(blobs) - 1,)
        ttls = tuple(result.cache.breakpoint_ttls)
        if overrides.get("cache.ttl") == ONE_HOUR:  # never shorter than the agent asked
            ttls = (ONE_HOUR,) * len(breakpoints)
        if pieces is not None and pieces.mode == taken.mode:
            built = assemble(api, taken.body, blobs, breakpoints, taken.mode, pieces, ttls)
        else:
            built = await asyncio.to_thread(
                assemble, api, taken.body, blobs, breakpoints, taken.mode, pieces, ttls
            )
        if built.problems:
            raise InvalidResult("the compacted request breaks the provider's rules")
        data = _body(api, raw, taken, built.messages, api.body_edits(taken.body, built.marked))
        built.pieces.size = len(data)
        no_long_mark = api.name == "anthropic" and not overrides
        self.kept.keep(
            session,
            replace(taken.memo, pieces=built.pieces, no_long_mark=no_long_mark, at=at),
        )
        if frozen:
            # A conversation taken in whole: what the daemon and the memo now hold of it
            # lives as long as the conversation; the collector need not walk it again.
            gc.freeze()
        return Compacted(
            body=data,
            session_id=session,
            entries_in=len(taken.memo.digests),
            entries_out=len(blobs),
            tokens=result.status.total_tokens,
            breakpoints=breakpoints,
            refresh_at=result.cache.refresh_at,
            params=taken.body,
            saving=saving,
        )

    def refresh_body(self, api: Api, params: Mapping[str, Any], result: CompactResult) -> bytes:
        """A refresh call's request (``keepwarm.py``): the agent's last request's fields
        (``params``: model, system, tools…), the conversation ``history/refresh`` gives with
        its breakpoints, then one short user line, and one output token asked. What the
        provider caches is read; the line and the token are all that is new."""
        blobs = result.history.blobs
        built = assemble(
            api,
            params,
            blobs,
            tuple(result.cache.breakpoints) or (len(blobs) - 1,),
            api.export_mode(params, (), ""),
            None,
            tuple(result.cache.breakpoint_ttls),
        )
        if built.problems:
            raise InvalidResult("the refresh call would break the provider's rules")
        messages = [orjson.loads(m) for m in built.messages]
        body = {k: v for k, v in params.items() if k not in (api.key, "stream")}
        body.update(api.body_edits(params, built.marked))
        body.update(api.refresh_fields(messages, REFRESH_TEXT))
        return orjson.dumps(body)

    def _lifetime(
        self,
        api: Api,
        raw: bytes,
        body: Mapping[str, Any],
        session: str,
        match: _Match | None = None,
    ) -> dict[str, object]:
        """The session's overrides the request says about its cache's lifetime. An
        Anthropic agent that asked an hour on any mark (now or before: it does not change its
        mind) gets ``cache.ttl: 1h``, so that the daemon prices what the provider keeps and
        every mark the proxy writes asks an hour. An OpenAI request asking a day's retention
        (its own, or the proxy's) keeps entries longer than in memory, and one whose
        ``prompt_cache_options`` ask twelve hours (GPT-5.6 on) keeps them that long at
        least."""
        if api.name == "anthropic":
            if session in self._long or asks_long_in(_unread(raw, match)):
                self._long[session] = None
                self._long.move_to_end(session)
                while len(self._long) > KEPT_LONG:
                    self._long.popitem(last=False)
                return {"cache.ttl": ONE_HOUR}
            return {}
        options = body.get(OPTIONS_KEY)
        if isinstance(options, Mapping) and options.get("ttl") == LONG_OPTIONS_TTL:
            return {"cache.ttlSeconds": LONG_OPTIONS_TTL_S}
        if retention_to_ask(body) is not None or body.get(RETENTION_KEY) == LONG_RETENTION:
            return {"cache.ttlSeconds": LONG_RETENTION_TTL_S}
        return {}

    def _params(self, session: str, taken: _Taken, named: str | None = None) -> dict[str, Any]:
        """``history/sync``'s params for the conversation ``taken`` (``named``: its model,
        when its body names none)."""
        # The agents behind the proxy have no hdcontext_retrieve tool: pointers say so.
        self.daemon.serve_without_retrieve_tool(session)
        params: dict[str, Any] = {"sessionId": session, "entries": _Known(taken)}
        model = taken.body.get("model") or named
        if isinstance(model, str) and model:
            params["model"] = model
        limit = self.context_limit or window_of(model if isinstance(model, str) else None)
        if limit is not None:
            params["contextLimit"] = limit
        return params

    async def _pass(
        self,
        api: Api,
        raw: bytes,
        session: str,
        client: str,
        glance: _Glance,
        at: int,
        model: str | None = None,
    ) -> Compacted:
        """A large conversation the daemon does not know (a chat resumed with a new proxy,
        or elsewhere): it goes as it came, at once, while the daemon takes it in (off the
        request's way); the next request finds it held, and the call told to the session
        as sent unchanged, so that what the provider now caches is weighed."""
        await self.kept.hold(session)
        forwarded = asyncio.Event()
        task = asyncio.ensure_future(
            self._take_in(api, raw, session, client, glance, at, forwarded, model)
        )
        self._register(session, task, forwarded)
        return replace(_passed(raw, session), forwarded=forwarded)

    def _register(self, session: str, task: asyncio.Future[None], forwarded: asyncio.Event) -> None:
        """``task`` is now what takes ``session`` in (a later one replaces an earlier)."""
        self._ingests[session] = task
        self._forwarded[session] = forwarded

        def done(_: object) -> None:
            if self._ingests.get(session) is task:
                del self._ingests[session]
                self._forwarded.pop(session, None)

        task.add_done_callback(done)

    def _follow(
        self, api: Api, raw: bytes, session: str, client: str, at: int, model: str | None
    ) -> Compacted:
        """A request of a conversation being taken in: it goes as it came, at once, rather
        than wait seconds for it (without the proxy there is no wait). Once the taking in is
        done and this request answered, its conversation is synced the same way, the call
        told as sent: each call has its row, and the next request is a turn."""
        before = self._ingests[session]
        forwarded = asyncio.Event()
        task = asyncio.ensure_future(
            self._take_in_after(before, api, raw, session, client, at, forwarded, model)
        )
        self._register(session, task, forwarded)
        return replace(_passed(raw, session), forwarded=forwarded)

    async def _take_in_after(
        self,
        before: asyncio.Future[None],
        api: Api,
        raw: bytes,
        session: str,
        client: str,
        at: int,
        forwarded: asyncio.Event,
        model: str | None,
    ) -> None:
        with contextlib.suppress(Exception):
            await asyncio.shield(before)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(forwarded.wait(), FORWARD_WAIT_S)
        try:
            kept = self._memos.get(session)
            match = best_match(api, raw, [kept] if kept is not None else [])
            if match is None:
                taken = await asyncio.to_thread(_take_whole, api, raw, client)
            else:
                taken = await asyncio.to_thread(_take, api, raw, match, self._splicer, client)
            await self._synced_passed(api, raw, session, taken, at, model)
        except Exception as exc:  # the request went as it came; the next one tries again
            log.warning("%s: taking in %s failed: %s", api.name, session, type(exc).__name__)

    async def _take_in(
        self,
        api: Api,
        raw: bytes,
        session: str,
        client: str,
        glance: _Glance,
        at: int,
        forwarded: asyncio.Event,
        model: str | None = None,
    ) -> None:
        """The daemon's bulk path for a conversation forwarded as it came: read whole,
        synced in one commit with the call told as sent (``Daemon.sync_passed``), the
        messages it would send made ready for the next request. It starts once the request
        was answered (or ``FORWARD_WAIT_S`` at most), off its way."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(forwarded.wait(), FORWARD_WAIT_S)
        try:
            taken = await asyncio.to_thread(_take_whole, api, raw, client, glance.body)
            await self._synced_passed(api, raw, session, taken, at, model)
        except Exception as exc:  # the request went as it came; the next one tries again
            log.warning("%s: taking in %s failed: %s", api.name, session, type(exc).__name__)

    async def _synced_passed(
        self, api: Api, raw: bytes, session: str, taken: _Taken, at: int, model: str | None
    ) -> None:
        """``taken``'s conversation synced in one commit with the call told as sent
        (``Daemon.sync_passed``), the messages it would send made ready for the next
        request."""
        self.kept.keep(session, replace(taken.memo, at=at))
        result = await self.daemon.sync_passed(self._params(session, taken, model), at)
        pieces = await _pieces(api, taken, result.history.blobs)
        current = self._memos.get(session)
        if pieces is not None and current is not None and current.raw is raw:
            self.kept.keep(session, replace(taken.memo, pieces=pieces, at=at))
        gc.freeze()
        memory.release()  # reading it whole left free pages behind

    # -- across a restart -------------------------------------------------------------------

    async def keep_for_restart(self, now: int | None = None) -> int:
        """Keep in the storage the last request of each conversation made in the last
        ``RESUME_WITHIN_MS`` (``Store.keep_resume``), for the next start to take in
        (``resume``); how many were kept. When the proxy stops, its requests done."""
        now = now_ms() if now is None else now
        rows = [
            ResumeRow(session, memo.at, memo.api, memo.client, memo.raw)
            for session, memo in reversed(self._memos.items())
            if memo.at and now - memo.at <= RESUME_WITHIN_MS
        ]
        if not rows:
            return 0
        try:
            return await self.daemon.store.keep_resume(rows)
        except Exception as exc:  # the next start reads them whole, as before
            log.warning("the last requests were not kept for restart: %s", type(exc).__name__)
            return 0

    def resume(self, apis: Mapping[str, Api], now: int | None = None) -> None:
        """Take in, in the background, the conversations the last run kept
        (``keep_for_restart``): each session loaded and warmed, its last request read as it
        was then, so that the first request after the restart resumes from it like a turn.
        A request that comes first waits for its conversation's (``_resumed``)."""
        since = (now_ms() if now is None else now) - RESUME_WITHIN_MS
        listed = self._listed = asyncio.Event()
        self._resume_task = asyncio.ensure_future(self._resume_all(apis, since, listed))

    async def _resume_all(self, apis: Mapping[str, Api], since: int, listed: asyncio.Event) -> None:
        """``resume``'s work. Whatever becomes of it (a failure, the proxy stopping), no
        request is left waiting: the list is said read, and each conversation done."""
        try:
            try:
                rows = await self.daemon.store.take_resume(since)
            except Exception as exc:
                log.warning("the last run's requests could not be read: %s", type(exc).__name__)
                rows = []
            loop = asyncio.get_running_loop()
            self._resuming = [
                (row, loop.create_future()) for row in rows[: self.kept.capacity.memos]
            ]
        finally:
            listed.set()
        started, resumed = time.monotonic(), 0
        try:
            for row, done in self._resuming:  # the most recent first
                try:
                    api = apis.get(row.api)
                    if api is not None:
                        resumed += await self._resume_one(api, row)
                except Exception as exc:  # its next request is read whole, as before
                    log.warning("resuming %s failed: %s", row.session_id, type(exc).__name__)
                finally:
                    done.set_result(None)
        finally:
            for _, done in self._resuming:
                if not done.done():
                    done.set_result(None)
            self._resuming = []
        if resumed:
            log.info(
                "took in %d conversation(s) of the last run in %.1f s",
                resumed,
                time.monotonic() - started,
            )

    async def _resume_one(self, api: Api, row: ResumeRow) -> bool:
        """Whether the conversation was taken in (not if deleted meanwhile, or if a request
        of it came first)."""
        taken = await asyncio.to_thread(_take_whole, api, row.body, row.client)
        session = row.session_id
        blobs = await self.daemon.warm(session, taken.memo.digests)
        if blobs is None or session in self._memos:
            return False
        await self.kept.hold(session, oldest=True)  # the rows come most recent first
        pieces = await _pieces(api, taken, blobs)
        if pieces is None or session in self._memos:
            return False
        no_long_mark = api.name == "anthropic" and not self._lifetime(
            api, row.body, taken.body, session
        )
        memo = replace(taken.memo, pieces=pieces, no_long_mark=no_long_mark, at=row.at)
        self.kept.keep(session, memo, oldest=True)
        gc.freeze()
        memory.release()
        return True

    async def _resumed(self, raw: bytes) -> None:
        """Wait for the conversation being resumed that ``raw`` continues: the one whose
        last request shares the most of its first bytes, when that is at least half of it (a
        conversation's next request holds the last one whole, up to its end; another
        conversation of the same agent shares its prompt and tools at most). Waiting for the
        wrong one only delays; not waiting for the right one reads the request whole."""
        pending = [(row, done) for row, done in self._resuming if not done.done()]
        if not pending:
            return
        shared = [common_prefix(raw, row.body) for row, _ in pending]
        most = max(shared)
        waits = [
            asyncio.shield(done)
            for (row, done), n in zip(pending, shared, strict=True)
            if n == most and 2 * n >= len(row.body)
        ]
        if waits:
            await asyncio.gather(*waits)

    async def record(self, session_id: str, billed: Billed, at: int | None = None) -> None:
        """``history/usage`` for the call just made: counted at once (``Daemon.note_usage``),
        saved with the session's next commit, or a moment later if no commit came
        first (then its ``calls`` row gets the bill). A conversation being taken in is taken
        in first."""
        at = now_ms() if at is None else at
        await self._taken_in(session_id)
        await self.daemon.note_usage(
            billed.params(session_id, at),
            write_1h_tokens=billed.cache_write_1h_tokens,
            waiting=billed.waits_on,
        )
        self.saving.soon(session_id)

    async def refused(self, session_id: str) -> None:
        """The call just made for the conversation never reached the model
        (``Daemon.note_refused``): saved as ``record``'s usage is."""
        await self._taken_in(session_id)
        if await self.daemon.note_refused(session_id):
            self.saving.soon(session_id)

    def taking_in(self) -> bool:
        """Whether a conversation is being taken in."""
        return bool(self._ingests)

    async def taken_in(self) -> None:
        """Wait for every conversation being taken in (each once its request was answered)."""
        for task in list(self._ingests.values()):
            await asyncio.shield(task)

    async def _taken_in(self, session_id: str) -> None:
        """Wait for the conversation's taking in, if one runs (it is not cancelled with us)."""
        ingest = self._ingests.get(session_id)
        if ingest is not None:
            await asyncio.shield(ingest)

    async def saved(self) -> None:
        """Save now the usage still waiting to be saved (``saving.py``)."""
        await self.saving.now()

    async def close(self) -> None:
        """Finish taking in what is being taken in, and save what is not saved yet (the last
        calls' usage)."""
        if self._resume_task is not None:  # done, or given up: nothing of it to raise
            await asyncio.wait({self._resume_task})
        for forwarded in list(self._forwarded.values()):
            forwarded.set()
        for task in list(self._ingests.values()):
            await asyncio.shield(task)
        await self.saved()


def _unread(raw: bytes, match: _Match | None) -> bytes:
    """What of a request's bytes is yet to be looked through for a mark asking an hour: the
    bytes after its known messages when the request it resumes held none. Those first bytes are
    that request's, byte for byte, and a mark lies within one message, so none can start
    before them and end after (the parts before the messages are in them too; the parts after,
    a top-level mark among them, are in what is read)."""
    if match is None or not match.memo.no_long_mark:
        return raw
    return raw[match.stop :]


async def _pieces(api: Api, taken: _Taken, blobs: Sequence[bytes]) -> Pieces | None:
    """What the next request of ``taken``'s conversation starts from when the daemon's
    entries are ``blobs`` (a memo's ``pieces``), made off the event loop; None when they would
    break the provider's rules. Pieces keep no breakpoints, so none are asked for."""
    built = await asyncio.to_thread(assemble, api, taken.body, blobs, (), taken.mode, None)
    if built.problems:
        return None
    built.pieces.size = sum(map(len, built.messages))
    return built.pieces


def _with_pieces(memo: Memo, pieces: Pieces | None) -> Memo:
    return replace(memo, pieces=pieces)


def _body(
    api: Api,
    raw: bytes,
    taken: _Taken,
    messages: list[bytes],
    edits: Mapping[str, Any] | None = None,
) -> bytes:
    """The request sent: the client's bytes, its conversation replaced by ``messages``;
    with ``edits`` (other fields sent otherwise, rarely), the body less its conversation
    written again, the conversation's bytes kept."""
    memo = taken.memo
    layout = memo.layout
    key = api.key
    if edits:
        body = {k: v for k, v in taken.body.items() if k != key}
        body.update(edits)
        if len(layout) == 0:
            head = [orjson.dumps(m) for m in taken.body[key][: memo.head]]
            elements = b",".join([*head, *messages])
        elif memo.head == 0:
            elements = b",".join(messages)
        else:
            first = layout.starts[memo.head] if messages else layout.ends[memo.head - 1]
            elements = raw[layout.starts[0] : first] + b",".join(messages)
        body[key] = orjson.Fragment(b"[" + elements + b"]")
        return orjson.dumps(body)
    if len(layout) == 0:
        body = dict(taken.body)
        head = [orjson.dumps(m) for m in body[key][: memo.head]]
        joined = b"[" + b",".join([*head, *messages]) + b"]"
        body[key] = orjson.Fragment(joined)
        return orjson.dumps(body)
    first, last = layout.starts[memo.head], layout.ends[-1]
    if not messages:
        first = layout.ends[memo.head - 1] if memo.head else first
        return raw[:first] + raw[last:]
    # One copy of the conversation: the client's bytes around it join its first and last.
    ends = [raw[:first] + messages[0], *messages[1:]]
    ends[-1] = ends[-1] + raw[last:]
    return b",".join(ends)


async def _off_loop(size: int, fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)``, on a worker thread when the body it reads is large."""
    if size < INLINE_BYTES:
        return fn(*args)
    return await asyncio.to_thread(fn, *args)
