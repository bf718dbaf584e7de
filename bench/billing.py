"""What a provider bills for a conversation's requests, call by call: the bench's one cost model.

The replay (``replay.py``), the peers (``peers.py``) and the cache property test price every
request here, reckoned on its own from how the providers describe their prompt caches, not with
the daemon's model of them (``core/cache/``), which this checks.

A request is its entries (their JSON), the tokens and content blocks of each, and the prefix
lengths whose last block carries a message breakpoint (the last entry always). How much of it
the provider reads from its cache:

- **any prefix** (OpenAI before GPT-5.6, Gemini): the entries it shares with the previous
  request, if that one was made within the cache's lifetime;
- **at breakpoints** (Anthropic; OpenAI from GPT-5.6 on): a cache entry exists only where an
  earlier request put a breakpoint, and lives for the cache's lifetime after it was last written
  or read. The request reads the longest entry it still starts with that lies at most
  ``lookback`` content blocks before one of its breakpoints (Anthropic 20; OpenAI no limit, but
  only the newest 80 entries). Then every one of its breakpoints holds an entry, and the entry
  read was read again now.

Tokens up to the entry read cost the read price, the rest up to the last breakpoint a write
price, any after it the plain price (none: the last entry always carries one). A breakpoint may
ask the longer lifetime (Anthropic's ``"ttl": "1h"``, the longer ones first): with ``A`` the
tokens read, ``B`` those up to the last breakpoint of the longer lifetime and ``C`` those up to
the last breakpoint, the provider bills ``read·A + write_long·(B−A)⁺ + write·(C−max(A, B))``.
An entry lives its own lifetime after it was last written or read: a breakpoint past the read
writes it with the lifetime it asks; reading it, or a breakpoint on it, keeps it for the
lifetime it was written with; a breakpoint before the read where none was held makes one of the
read entry's lifetime. The previous request's entries past the read point that the request
sends again are tokens the provider held and writes again (``lost``).

The model's minimum cacheable prompt is not applied (``min_prefix`` 0): it counts the system
prompt and tools, which the transcripts leave out and agents' own exceed. Gemini's price models
apply it (``gemini``): the Gemini replay counts that prompt, and Gemini reads no shared prefix
shorter than its model's minimum. A refresh call (``refresh``) is billed
the same way, its line of text and its one token of
output as plain tokens; it changes nothing but the entries' lives.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from hdcontext.core.prices import lookup, multiples

ANTHROPIC_LOOKBACK = 20


@dataclass(frozen=True)
class PriceModel:
    """One way a provider bills, and the session the replay runs for it."""

    read: float
    write: float
    ttl_ms: int
    at_breakpoints: bool
    lookback: int | None = None
    """Content blocks before a breakpoint within which it finds an entry (None: any)."""
    max_entries: int = 80
    model: str = "claude-sonnet-4-6"
    """The session's model, so that the daemon plans for this provider as for its users."""
    slots: int = 2
    """``cache.maxBreakpoints`` the session is given; 1: the client ignores the daemon's
    breakpoints and puts one on the last message only, as most agents do."""
    description: str = ""
    write_long: float | None = None
    """A token written to an entry of the longer lifetime (None: the provider has none)."""

    min_prefix: int = 0
    """Tokens a shared prefix reaches before the provider reads it (any-prefix caches; 0: not
    applied)."""

    long_ttl_ms: int = 3_600_000
    agent_ttl: str | None = None
    """The lifetime the agent itself asks on every breakpoint: ``1h`` makes every session of
    it ``cache.ttl: 1h`` (hdcontext never shortens it), its baseline included; ``None``: the
    provider's default, and the settings row says what hdcontext may ask."""


def priced(model: str, description: str, **geometry: Any) -> PriceModel:
    """A price model from the package's price table (``core/prices.py``, the one source
    of prices): the row's multiples of its input price, lifetime, minimum prefix and cache
    geometry, with ``geometry`` over them (a kinder cache, another client)."""
    row = lookup(model).row
    assert row is not None, model
    m = multiples(row)
    fields: dict[str, Any] = {
        "read": m.read,
        "write": m.write_5m,
        "ttl_ms": row.ttl_s * 1000,
        "at_breakpoints": row.at_breakpoints,
        "lookback": row.lookback_blocks,
        "max_entries": row.max_entries,
        "model": model,
        "description": description,
        "write_long": m.write_1h,
    }
    return PriceModel(**{**fields, **geometry})


SONNET = "claude-sonnet-4-6"
"""The main replay's model: a cache read at 0.1× (Claude Opus and Sonnet 5.5 read at 0.05×)."""
PRICE_MODELS: dict[str, PriceModel] = {
    "anthropic": priced(
        SONNET,
        "Anthropic as it bills (Claude Sonnet 4.6: reads 0.1×): entries at breakpoints, "
        "20-block lookback, the daemon's breakpoints placed",
    ),
    "anthropic_005": priced(
        "claude-opus-5-5",
        "the same for Claude Opus 5.5, whose reads cost 0.05× (a rewrite costs 25 reads)",
    ),
    "anthropic_tail": priced(
        SONNET,
        "the same, the client ignoring the daemon's breakpoints (one on its last message)",
        slots=1,
    ),
    "anthropic_1h": priced(
        SONNET,
        "Anthropic as it bills, for an agent that asks an hour on every breakpoint "
        "(cache.ttl 1h, density off included)",
        agent_ttl="1h",
    ),
    "anthropic_ends": priced(
        SONNET,
        "Anthropic's prices, entries at breakpoints found however far back (the model "
        "before the lookback was priced)",
        lookback=None,
        write_long=None,
    ),
    "anthropic_any_prefix": priced(
        SONNET,
        "Anthropic's prices, any shared prefix read (the first model of issue 10)",
        at_breakpoints=False,
        lookback=None,
        write_long=None,
    ),
    "openai": priced("gpt-4.1", "OpenAI before GPT-5.6 (GPT-4.1: reads 0.25×, no write fee)"),
    "gpt_5_6": priced(
        "gpt-5.6",
        "OpenAI GPT-5.6 and later: breakpoints, newest 80 entries, 30 minutes",
    ),
}
MAIN = "anthropic"

RESPONSES_PRICE_MODELS: dict[str, PriceModel] = {
    "gpt_5_6": PRICE_MODELS["gpt_5_6"],
    "prefix": priced(
        "gpt-5-codex",
        "OpenAI before GPT-5.6 as Codex's own models bill (gpt-5-codex, like gpt-5.1-codex, "
        "gpt-5.2-codex, gpt-5.4: reads 0.1×, no write fee, any shared prefix; the row's five "
        "minutes in memory, which codex_replay.py sets to what each request asks)",
    ),
}
"""The Responses API's price models for the Codex replay (``codex_replay.py``): GPT-5.6's
breakpoints and write premium, and the any-prefix cache of the models Codex ran before it."""


def gemini(model: str) -> PriceModel:
    """Gemini's implicit cache for ``model``, as its row in the price table says: any shared
    prefix from the model's minimum on, read at the row's discount (a tenth), no write
    premium, the row's lifetime (five minutes: Google names none, the row says it is
    assumed)."""
    row = lookup(model).row
    assert row is not None and row.provider == "gemini", model
    return priced(
        model,
        f"Gemini's implicit cache ({row.model}: reads {row.cache_read / row.input:g}×, no write "
        f"fee, any prefix from {row.min_prefix:,} tokens, {row.ttl_s // 60} minutes"
        + (", unverified)" if "ttl_s" in row.unverified else ")"),
        min_prefix=row.min_prefix,
    )


def lifetime(price: PriceModel, seconds: int) -> PriceModel:
    """``price`` with entries that live ``seconds`` (OpenAI's ``prompt_cache_retention``)."""
    return replace(price, ttl_ms=seconds * 1000)


Entry = tuple[int, int, Sequence[bytes]]
"""(when last written or read, ms; how long it lives after that, ms; the request that wrote
it, whose first entries are the entry's prefix)."""


@dataclass
class Bill:
    """What one provider bills for one conversation's requests, call by call."""

    price: PriceModel
    total: float = 0.0
    reads: int = 0
    """Tokens read from the cache."""
    last_read: int = 0
    """Of those, the last request's (what its usage reports as cached)."""
    lost: int = 0
    """Tokens the provider held that a request wrote again."""
    rewrites: int = 0
    """Calls that wrote again tokens the provider held."""
    refreshes: int = 0
    refresh_total: float = 0.0
    """Refresh calls, and what they cost (part of ``total``)."""
    held: dict[int, Entry] = field(default_factory=dict)
    """Cache entry (prefix length) -> when last written or read, its lifetime, and a request
    that starts with its prefix."""
    previous: Sequence[bytes] = ()
    previous_tokens: Sequence[int] = ()
    previous_at: int | None = None
    touched_at: int | None = None
    """The last call the provider saw, refresh calls included."""

    def call(
        self,
        request: Sequence[bytes],
        tokens: Sequence[int],
        blocks: Sequence[int],
        breakpoints: Sequence[int],
        at: int,
        long: Sequence[bool] | None = None,
    ) -> float:
        """Bill one request; ``breakpoints`` as prefix lengths, ``long`` whether each asks
        the longer lifetime (default: none does). Returns its cost."""
        hit, cost = self._bill(request, tokens, blocks, breakpoints, at, long, 0)
        warm = self.previous_at is not None and 0 <= at - self.previous_at <= self.price.ttl_ms
        if warm or hit:
            again = rewritten(self.previous[hit:], self.previous_tokens[hit:], request)
            if again:
                self.rewrites += 1
                self.lost += again
        self.previous, self.previous_tokens, self.previous_at = request, tokens, at
        return cost

    def refresh(
        self,
        request: Sequence[bytes],
        tokens: Sequence[int],
        blocks: Sequence[int],
        breakpoints: Sequence[int],
        at: int,
        long: Sequence[bool] | None,
        plain: int,
    ) -> float:
        """Bill a refresh call: ``request`` then ``plain`` tokens after its last breakpoint
        (its line of text, its token of output). Returns its cost."""
        _, cost = self._bill(request, tokens, blocks, breakpoints, at, long, plain)
        self.refreshes += 1
        self.refresh_total += cost
        return cost

    def _bill(
        self,
        request: Sequence[bytes],
        tokens: Sequence[int],
        blocks: Sequence[int],
        breakpoints: Sequence[int],
        at: int,
        long: Sequence[bool] | None,
        plain: int,
    ) -> tuple[int, float]:
        p = self.price
        flags = list(long) if long is not None else [False] * len(breakpoints)
        assert flags == sorted(flags, reverse=True), "a longer lifetime after a shorter one"
        prefix = [0]
        for count in tokens:
            prefix.append(prefix[-1] + count)
        marks = list(zip(breakpoints, flags, strict=True))
        if p.at_breakpoints:
            hit = self._hit(request, blocks, marks, at)
        else:
            touched = self.touched_at
            warm = touched is not None and 0 <= at - touched <= p.ttl_ms
            hit = shared_prefix(self.previous, request) if warm else 0
            if prefix[hit] < p.min_prefix:
                hit = 0
        last = max([hit, *(b for b, _ in marks)])
        long_end = max([hit, *(b for b, f in marks if f and b > hit)])
        if p.write_long is None:
            long_end = hit
        cost = (
            prefix[hit] * p.read
            + (prefix[long_end] - prefix[hit]) * (p.write_long or p.write)
            + (prefix[last] - prefix[long_end]) * p.write
            + (prefix[-1] - prefix[last])
            + plain
        )
        self.total += cost
        self.reads += prefix[hit]
        self.last_read = prefix[hit]
        self.touched_at = at
        return hit, cost

    def _hit(
        self,
        request: Sequence[bytes],
        blocks: Sequence[int],
        marks: Sequence[tuple[int, bool]],
        at: int,
    ) -> int:
        """The entry the request reads (prefix length, 0: none), and the entries kept after
        it; ``marks``: its breakpoints that can hold an entry, each with its lifetime."""
        p = self.price
        shared: dict[int, int] = {}  # per request that wrote entries: what this one shares

        def starts_with(q: int, source: Sequence[bytes]) -> bool:
            if id(source) not in shared:
                shared[id(source)] = shared_prefix(source, request)
            return q <= shared[id(source)]

        live = {
            q: e for q, e in self.held.items() if 0 <= at - e[0] <= e[1] and starts_with(q, e[2])
        }
        live = dict(sorted(live.items(), key=lambda e: e[1][0])[-p.max_entries :])
        position = [0]
        for count in blocks:
            position.append(position[-1] + count)
        hit = 0
        for q in live:
            for b, _ in marks:
                if q <= b and (p.lookback is None or position[b] - position[q] <= p.lookback):
                    hit = max(hit, q)
                    break
        hit_life = live[hit][1] if hit else p.ttl_ms
        if hit:
            live[hit] = (at, hit_life, request)
        for b, f in marks:
            if b > hit:
                life = p.long_ttl_ms if f and p.write_long is not None else p.ttl_ms
            else:
                life = live[b][1] if b in live else hit_life
            live[b] = (at, life, request)
        self.held = live
        return hit


def shared_prefix(previous: Sequence[bytes], request: Sequence[bytes]) -> int:
    """How many entries at the head of ``request`` are those of ``previous``."""
    shared = 0
    for old, new in zip(previous, request, strict=False):
        if old is not new and old != new:
            break
        shared += 1
    return shared


def rewritten(after: Sequence[bytes], tokens: Sequence[int], request: Sequence[bytes]) -> int:
    """The tokens of ``after`` (the previous request's entries past the read point) that
    ``request`` sends again: the provider held them and writes them anew. An entry that is
    gone or changed is not among them: what replaces it is new content, paid whatever the
    schedule."""
    if not after:
        return 0
    sent = Counter(request)
    total = 0
    for blob, count in zip(after, tokens, strict=True):
        if sent[blob] > 0:
            sent[blob] -= 1
            total += count
    return total
