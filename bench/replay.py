"""Replay real sessions call by call, priced as the providers bill (issues 10 and 21).

Each model response in a transcript marks a model call: everything before it is appended to a
session, ``history/compact`` runs (``at`` = the response's time), and what it returns is the
request, with the message breakpoints it names (``cache.breakpoints``). ``billing.py`` prices
each request against what the provider holds from the earlier ones, under every price model;
the same replay with every density rule off is the reference.

A session is run once per kind of client the price models assume (its model, so that the
schedule plans for that provider; how many breakpoints it places): a Claude model placing the
daemon's two breakpoints (Anthropic as it bills, and the older, kinder models of its cache), a
Claude model whose client places one on its last message only, GPT-4.1 and GPT-5.6.

Figures per settings row: tokens sent, the cost under each price model (relative to density
off), the sessions dearer than density off, prefix breaks (calls whose request did not start
with the previous request), the calls that made Anthropic write again tokens it held and those
tokens, blind edits (``sight.py``), the largest request, and compressions.

The replay runs the daemon's own ``Session`` in-process (the code every request runs, without
the transport), with the transcript's own workspace root and no disk.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from hdcontext.core.content import IContent, entry_from_json
from hdcontext.core.session.reply import CompactResult
from hdcontext.core.session.session import Session
from hdcontext.core.tokens import count_text

from .billing import MAIN, PRICE_MODELS, Bill, shared_prefix
from .outcome import Replayed, summarize
from .sight import blind, edited_files
from .transcripts import Transcript, corpus, model_calls

OFF: dict[str, object] = {
    "compression.density.readWritePruning": False,
    "compression.density.fileDedupe": False,
    "compression.density.recencyPruning": False,
    "compression.density.masking": "off",
}
SEEDS: dict[str, object] = {
    "compression.density.schedule": "every-turn",
    "compression.density.keepLatestView": False,
}
RECENCY: dict[str, object] = {"compression.density.recencyPruning": True}
NO_MASKING: dict[str, object] = {"compression.density.masking": "off"}
AUTO_TTL: dict[str, object] = {"cache.ttl": "auto"}
REFRESH: dict[str, object] = {"cache.refresh": True}
REFRESH_TEXT = "(hdcontext keeps the prompt cache: answer with one token)"
"""The line of user text a refresh call sends after the history (bench's own wording)."""
OUTPUT_PRICE = 5.0
"""A token of output, in uncached input tokens (Anthropic: 5×): a refresh call asks one."""

ROWS: dict[str, dict[str, object]] = {
    "density off": OFF,
    "seeds: every turn, any write prunes": SEEDS,
    "seeds + recency": {**SEEDS, **RECENCY},
    "every turn, latest view, no masking": {
        "compression.density.schedule": "every-turn",
        **NO_MASKING,
    },
    "default: cache-aware, latest view, masking cold": {},
    "default, masking off": NO_MASKING,
    "default, masking always": {"compression.density.masking": "always"},
    "default, masking cold, retention 10": {"compression.density.maskRetention": 10},
    "default + recency": RECENCY,
    "default + recency, masking off": {**RECENCY, **NO_MASKING},
    "default + recency, retention 1, masking off": {
        **RECENCY,
        **NO_MASKING,
        "compression.density.recencyRetention": 1,
    },
    "default, an hour on every breakpoint": {"cache.ttl": "1h"},
    "default, ttl auto": AUTO_TTL,
    "default, refresh calls (5m)": REFRESH,
    "default, ttl auto + refresh calls": {**AUTO_TTL, **REFRESH},
    "default + recency, ttl auto + refresh": {**RECENCY, **AUTO_TTL, **REFRESH},
}

Client = tuple[str, int, str | None]
"""(the session's model, the breakpoints its client places, the lifetime the agent asks)."""


def clients() -> dict[Client, list[str]]:
    """The price models each kind of client run is billed under; the main one first."""
    out: dict[Client, list[str]] = {}
    for name, m in sorted(PRICE_MODELS.items(), key=lambda item: item[0] != MAIN):
        out.setdefault((m.model, m.slots, m.agent_ttl), []).append(name)
    return out


async def replay(
    transcript: Transcript,
    settings: Mapping[str, object],
    client: Client = (PRICE_MODELS[MAIN].model, PRICE_MODELS[MAIN].slots, None),
    priced: Sequence[str] = (MAIN,),
    out: Replayed | None = None,
) -> Replayed:
    """One conversation with one settings row, for one kind of client, billed under the
    ``priced`` models (into ``out``'s costs). Breaks, rewrites, blind edits and the rest are
    counted when the main price model is among them. With ``cache.refresh`` the client makes
    the refresh calls the daemon names, until the next model call (after the last one, until
    the daemon names none: a session that ends pays for them too)."""
    model, slots, agent_ttl = client
    entries = transcript.entries
    root = transcript.root
    values = {**settings, "cache.maxBreakpoints": slots}
    if agent_ttl is not None:
        values["cache.ttl"] = agent_ttl
    ticks = iter(range(1, 10**9))
    session = Session(
        "replay",
        settings=lambda: values,
        workspace_root=lambda: root,
        clock=lambda: 1_000_000 + next(ticks),
    )
    session.model = model
    out = out if out is not None else Replayed()
    main = MAIN in priced
    bills = {name: Bill(PRICE_MODELS[name]) for name in priced}
    blocks_of: dict[bytes, int] = {}
    previous: Sequence[bytes] = ()
    appended = 0
    clock = 0
    calls = model_calls(entries)
    times = _times(entries, calls)
    plain = count_text(REFRESH_TEXT) + OUTPUT_PRICE
    for k, i in enumerate(calls):
        session.append(entries[appended:i])
        appended = i
        clock = times[k]
        result = await session.compact(at=clock)
        request, tokens, blocks, breakpoints, long = _request(session, result, slots, blocks_of)
        for name, bill in bills.items():
            out.cost[name] += bill.call(request, tokens, blocks, breakpoints, clock, long)
        following = times[k + 1] if k + 1 < len(calls) else None
        due = result.cache.refresh_at
        if due is not None:
            # A client that makes refresh calls tells the daemon the model's answer as it
            # comes (the proxy does): a refresh after a turn's last answer keeps it too.
            session.append(entries[i : i + 1])
            appended = i + 1
        while due is not None and (following is None or due < following):
            refreshed = session.refresh(at=due)
            if not refreshed.history:
                break  # it no longer pays: nothing to send
            parts = _request(session, refreshed, slots, blocks_of)
            for name, bill in bills.items():
                out.cost[name] += bill.refresh(*parts[:4], due, parts[4], int(plain))
            out.refreshes += main
            due = refreshed.cache.refresh_at
        if not main:
            continue
        total = sum(tokens)
        out.calls += 1
        out.tokens += total
        out.peak = max(out.peak, total)
        out.prefix_breaks += shared_prefix(previous, request) < len(previous)
        out.compressions += result.compression is not None
        edited = edited_files(entries[i])
        if edited:
            out.edits += len(edited)
            out.blind += blind(edited, entries[:i], list(result.history))
        previous = request
    if main:
        out.rewrites, out.lost = bills[MAIN].rewrites, bills[MAIN].lost
    return out


def _times(entries: Sequence[IContent], calls: Sequence[int]) -> list[int]:
    """When each model call was made: its answer's time, else 10 s after the one before."""
    out: list[int] = []
    clock = 0
    for i in calls:
        stamp = entries[i].timestamp
        clock = stamp if stamp is not None else clock + 10_000
        out.append(clock)
    return out


def _request(
    session: Session, result: CompactResult, slots: int, known: dict[bytes, int]
) -> tuple[list[bytes], list[int], list[int], list[int], list[bool]]:
    """A reply as the bill sees it: the entries (their JSON), the tokens and content blocks
    of each, the breakpoints as prefix lengths and whether each asks the longer lifetime (a
    client of one breakpoint puts it on the last message, of the lifetime the daemon gave)."""
    history = session.history
    counts = dict(zip(history.raw_json, history.tokens, strict=True))
    request = list(result.history.blobs)
    tokens = [counts[b] for b in request]
    blocks = [_blocks(b, known) for b in request]
    ttls = result.cache.breakpoint_ttls
    if slots > 1:
        breakpoints = [b + 1 for b in result.cache.breakpoints]
        long = [t == "1h" for t in ttls]
    else:
        breakpoints, long = [len(request)], [bool(ttls) and ttls[-1] == "1h"]
    return request, tokens, blocks, breakpoints, long


def _blocks(blob: bytes, known: dict[bytes, int]) -> int:
    count = known.get(blob)
    if count is None:
        count = known[blob] = len(entry_from_json(blob).blocks)
    return count


async def replay_all(transcript: Transcript, settings: Mapping[str, object]) -> Replayed:
    """One conversation with one settings row, under every price model."""
    out = Replayed()
    for client, priced in clients().items():
        await replay(transcript, settings, client, priced, out)
    return out


def run(found: Sequence[Transcript], with_peers: bool = True) -> dict[str, Any]:
    from .peers import PEERS, replay_peer

    sessions = corpus(found)
    rows: dict[str, list[Replayed]] = {}
    for name, settings in ROWS.items():
        rows[name] = [asyncio.run(replay_all(t, settings)) for t in sessions]
    if with_peers:
        for name, policy in PEERS.items():
            rows[name] = [replay_peer(t, policy) for t in sessions]
    return summarize(sessions, rows)
