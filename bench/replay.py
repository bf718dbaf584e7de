"""Replay real sessions call by call, priced under prompt caching (issue 10).

Each model response in a transcript marks a model call: everything before it is appended to a
session, ``history/compact`` runs (``at`` = the response's time), and what it returns is the
request. A request is priced against the previous one: the entries they share from the start
are what the provider holds in its prompt cache (if the previous call is no older than the
cache's lifetime), read at the read price; the rest is written at the write price. OpenAI
matches any shared prefix; Anthropic caches a prefix only where a request ended (agents put
its breakpoint on the last block), so an Anthropic-priced request reads from the cache up to
the end of the longest earlier request it still starts with whose prefix was used in the
cache's lifetime, and writes the rest. The same replay with every density rule off is the
reference.

Figures per settings row: tokens sent, the cost under Anthropic's and OpenAI's prices (both
relative to density off; the session's model is a Claude one, so that the schedule plans for
Anthropic, and for the OpenAI column a GPT one), the sessions dearer than density off
(Anthropic-priced), prefix breaks (calls whose
request did not start with the previous request), the breaks that made Anthropic write again
tokens it held (the entries of the previous request past the prefix the request hit that it
sends again) and those tokens, blind edits
(an ``Edit``/``MultiEdit`` of a file that the full history had a view of, a successful
``Read`` or a whole ``Write``, while the request held none), the largest request, and
compressions.

The replay runs the daemon's own ``Session`` in-process (the code every request runs, without
the transport), with the transcript's own workspace root and no disk.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from hdcontext.core.cache import prefixes
from hdcontext.core.compression.tool_summary import is_compact
from hdcontext.core.content import IContent, ToolCallBlock, ToolResponseBlock
from hdcontext.core.session import Session

from .transcripts import Transcript


@dataclass(frozen=True)
class Provider:
    """How one cost column prices a request, and the model the session is given for it (so
    that the schedule plans for that provider, as it would for its users)."""

    read: float
    write: float
    request_ends: bool
    """A cached prefix ends only where an earlier request ended (else: any shared prefix)."""
    ttl_ms: int
    model: str


MODEL = "claude-sonnet-4"
PROVIDERS: dict[str, Provider] = {
    "anthropic": Provider(0.1, 1.25, True, 300_000, MODEL),
    "anthropic_any_prefix": Provider(0.1, 1.25, False, 300_000, MODEL),
    "openai": Provider(0.1, 1.0, False, 300_000, "gpt-4.1"),
    "gpt_5_6": Provider(0.1, 1.25, True, 1_800_000, "gpt-5.6"),
}
"""The cost columns. ``anthropic_any_prefix``: Anthropic's prices with matching at any shared
prefix, the model the first figures of issue 10 were measured with; ``openai``: OpenAI before
GPT-5.6; ``gpt_5_6``: GPT-5.6 and later (breakpoints at request ends, 1.25× writes, 30
minutes)."""
TTL_MS = PROVIDERS["anthropic"].ttl_ms
EDIT_TOOLS = frozenset({"Edit", "MultiEdit"})

OFF: dict[str, object] = {
    "compression.density.readWritePruning": False,
    "compression.density.fileDedupe": False,
    "compression.density.recencyPruning": False,
}
SEEDS: dict[str, object] = {
    "compression.density.schedule": "every-turn",
    "compression.density.keepLatestView": False,
}
RECENCY: dict[str, object] = {"compression.density.recencyPruning": True}

ROWS: dict[str, dict[str, object]] = {
    "density off": OFF,
    "seeds: every turn, any write prunes": SEEDS,
    "seeds + recency": {**SEEDS, **RECENCY},
    "every turn, latest view": {"compression.density.schedule": "every-turn"},
    "default: cache-aware, latest view": {},
    "default + recency": RECENCY,
    "default + recency, retention 1": {**RECENCY, "compression.density.recencyRetention": 1},
}


@dataclass
class Replayed:
    """One conversation replayed with one settings row."""

    calls: int = 0
    tokens: int = 0
    cost: dict[str, float] = field(default_factory=lambda: dict.fromkeys(PROVIDERS, 0.0))
    prefix_breaks: int = 0
    rewrites: int = 0
    """Breaks on a warm cache that sent again, uncached, entries the provider held."""
    lost: int = 0
    """Tokens the provider held in its cache that a break made it write again."""
    edits: int = 0
    blind: int = 0
    peak: int = 0
    compressions: int = 0

    def count_rewrite(self, tokens: int) -> None:
        if tokens:
            self.rewrites += 1
            self.lost += tokens


def rewritten(after: Sequence[bytes], tokens: Sequence[int], request: Sequence[bytes]) -> int:
    """The tokens of ``after`` (the previous request's entries past a break) that ``request``
    sends again: the provider held them and writes them anew. An entry that is gone or
    changed is not among them: what replaces it is new content, paid whatever the schedule."""
    if not after:
        return 0
    sent = Counter(request)
    total = 0
    for blob, count in zip(after, tokens, strict=True):
        if sent[blob] > 0:
            sent[blob] -= 1
            total += count
    return total


class Cache:
    """What one provider holds between the calls of a replay."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.ends: tuple[prefixes.End, ...] = ()
        self.last_at: int | None = None

    def hit(self, shared: int, at: int) -> int:
        """How many entries of a request made at ``at`` that starts with ``shared`` entries of
        the previous one the provider reads from its cache."""
        p = self.provider
        if p.request_ends:
            self.ends = prefixes.live(self.ends, None, at, p.ttl_ms, shared)
            return prefixes.hit(self.ends, shared)
        warm = self.last_at is not None and 0 <= at - self.last_at <= p.ttl_ms
        return shared if warm else 0

    def cost(self, held_tokens: int, total: int) -> float:
        return held_tokens * self.provider.read + (total - held_tokens) * self.provider.write

    def called(self, shared: int, at: int, length: int) -> None:
        if self.provider.request_ends:
            self.ends = (*prefixes.after_call(self.ends, shared, at), (length, at))
        self.last_at = at


def model_calls(entries: Sequence[IContent]) -> list[int]:
    """Indices of the entries that answer a model call (every AI entry but a leading one)."""
    return [i for i, e in enumerate(entries) if e.speaker == "ai" and i > 0]


async def replay(
    transcript: Transcript, settings: Mapping[str, object], model: str = MODEL
) -> Replayed:
    """One conversation with one settings row, the session's model ``model``: the cost
    columns of the providers that model plans for are priced (the others stay 0); breaks,
    rewrites and lost tokens are Anthropic's when it is among them."""
    entries = transcript.entries
    root = transcript.root
    ticks = iter(range(1, 10**9))
    session = Session(
        "replay",
        settings=lambda: settings,
        workspace_root=lambda: root,
        clock=lambda: 1_000_000 + next(ticks),
    )
    session.model = model
    out = Replayed()
    previous: list[bytes] = []
    previous_tokens: list[int] = []
    previous_at: int | None = None
    caches = {name: Cache(p) for name, p in PROVIDERS.items() if p.model == model}
    appended = 0
    clock = 0
    for i in model_calls(entries):
        session.append(entries[appended:i])
        appended = i
        stamp = entries[i].timestamp
        clock = stamp if stamp is not None else clock + 10_000
        result = await session.compact(at=clock)
        history = session.history
        counts = dict(zip(history.raw_json, history.tokens, strict=True))
        request = list(result.history.blobs)
        tokens = [counts[b] for b in request]
        shared = 0
        for old, new in zip(previous, request, strict=False):
            if old is not new and old != new:
                break
            shared += 1
        warm = previous_at is not None and 0 <= clock - previous_at <= TTL_MS
        total = sum(tokens)
        for name, cache in caches.items():
            hit = cache.hit(shared, clock)
            out.cost[name] += cache.cost(sum(tokens[:hit]), total)
            if name == "anthropic" and warm:
                out.count_rewrite(rewritten(previous[hit:], previous_tokens[hit:], request))
            cache.called(shared, clock, len(request))
        out.calls += 1
        out.tokens += total
        out.peak = max(out.peak, total)
        out.prefix_breaks += shared < len(previous)
        out.compressions += result.compression is not None
        edited = _edited_files(entries[i])
        if edited:
            out.edits += len(edited)
            seen = _viewed_files(entries[:i])
            sent = _viewed_files(list(result.history))
            out.blind += sum(1 for f in edited if f in seen and f not in sent)
        previous, previous_tokens, previous_at = request, tokens, clock
    return out


def _edited_files(entry: IContent) -> list[str]:
    return [
        str(b.parameters["file_path"])
        for b in entry.blocks
        if isinstance(b, ToolCallBlock)
        and b.name in EDIT_TOOLS
        and isinstance(b.parameters, dict)
        and isinstance(b.parameters.get("file_path"), str)
    ]


def _viewed_files(entries: Sequence[IContent]) -> set[str]:
    """Files the entries show: a Read answered without error whose output is still there, or
    a Write with the whole content."""
    reads: dict[str, str] = {}
    shown: set[str] = set()
    for entry in entries:
        for b in entry.blocks:
            if isinstance(b, ToolCallBlock) and isinstance(b.parameters, dict):
                path = b.parameters.get("file_path")
                if not isinstance(path, str):
                    continue
                if b.name == "Read":
                    reads[b.id] = path
                elif b.name == "Write" and isinstance(b.parameters.get("content"), str):
                    shown.add(path)
            elif (
                isinstance(b, ToolResponseBlock)
                and b.call_id in reads
                and not b.error
                and not is_compact(b.result)
            ):
                shown.add(reads[b.call_id])
    return shown


def corpus(found: Sequence[Transcript], min_calls: int = 3) -> list[Transcript]:
    """The conversations worth replaying: three model calls or more."""
    return [t for t in found if len(model_calls(t.entries)) >= min_calls]


def run(found: Sequence[Transcript], with_peers: bool = True) -> dict[str, Any]:
    from .peers import PEERS, replay_peer

    sessions = corpus(found)
    rows: dict[str, list[Replayed]] = {}
    others = sorted({p.model for p in PROVIDERS.values()} - {MODEL})
    for name, settings in ROWS.items():
        rows[name] = [asyncio.run(replay(t, settings)) for t in sessions]
        for model in others:
            for r, t in zip(rows[name], sessions, strict=True):
                cost = asyncio.run(replay(t, settings, model)).cost
                for column, p in PROVIDERS.items():
                    if p.model == model:
                        r.cost[column] = cost[column]
    if with_peers:
        for name, policy in PEERS.items():
            rows[name] = [replay_peer(t, policy) for t in sessions]
    return summarize(sessions, rows)


def summarize(sessions: Sequence[Transcript], rows: Mapping[str, list[Replayed]]) -> dict[str, Any]:
    off = rows["density off"]
    table: dict[str, Any] = {}
    for name, results in rows.items():
        ratios = [
            r.cost["anthropic"] / o.cost["anthropic"] if o.cost["anthropic"] else 1.0
            for r, o in zip(results, off, strict=True)
        ]
        edits = sum(r.edits for r in results)
        table[name] = {
            "tokens": sum(r.tokens for r in results) / max(1, sum(o.tokens for o in off)),
            "anthropic": sum(r.cost["anthropic"] for r in results)
            / max(1.0, sum(o.cost["anthropic"] for o in off)),
            "openai": sum(r.cost["openai"] for r in results)
            / max(1.0, sum(o.cost["openai"] for o in off)),
            "anthropic_any_prefix": sum(r.cost["anthropic_any_prefix"] for r in results)
            / max(1.0, sum(o.cost["anthropic_any_prefix"] for o in off)),
            "gpt_5_6": sum(r.cost["gpt_5_6"] for r in results)
            / max(1.0, sum(o.cost["gpt_5_6"] for o in off)),
            "dearer": sum(1 for x in ratios if x > 1.0 + 1e-9),
            "dearer_1pct": sum(1 for x in ratios if x > 1.01),
            "worst": max(ratios, default=1.0),
            "prefix_breaks": sum(r.prefix_breaks for r in results),
            "rewrites": sum(r.rewrites for r in results),
            "lost": sum(r.lost for r in results),
            "edits": edits,
            "blind": sum(r.blind for r in results),
            "peak": max((r.peak for r in results), default=0),
            "compressions": sum(r.compressions for r in results),
            "per_session": {
                t.name: {"calls": r.calls, "anthropic_ratio": round(x, 4), "blind": r.blind}
                for t, r, x in zip(sessions, results, ratios, strict=True)
            },
        }
    return {
        "sessions": len(sessions),
        "calls": sum(r.calls for r in off),
        "rows": table,
    }
