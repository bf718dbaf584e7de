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

Tokens up to the entry read cost the read price, the rest up to the last breakpoint the write
price, any after it the plain price (none: the last entry always carries one). The previous
request's entries past the read point that the request sends again are tokens the provider
held and writes again (``lost``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

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
    model: str = "claude-sonnet-4"
    """The session's model, so that the daemon plans for this provider as for its users."""
    slots: int = 2
    """``cache.maxBreakpoints`` the session is given; 1: the client ignores the daemon's
    breakpoints and puts one on the last message only, as most agents do."""
    description: str = ""


PRICE_MODELS: dict[str, PriceModel] = {
    "anthropic": PriceModel(
        0.1,
        1.25,
        300_000,
        True,
        ANTHROPIC_LOOKBACK,
        description="Anthropic as it bills: entries at breakpoints, 20-block lookback, the "
        "daemon's breakpoints placed",
    ),
    "anthropic_tail": PriceModel(
        0.1,
        1.25,
        300_000,
        True,
        ANTHROPIC_LOOKBACK,
        slots=1,
        description="the same, the client ignoring the daemon's breakpoints (one on its "
        "last message)",
    ),
    "anthropic_ends": PriceModel(
        0.1,
        1.25,
        300_000,
        True,
        None,
        description="Anthropic's prices, entries at breakpoints found however far back (the "
        "model before the lookback was priced)",
    ),
    "anthropic_any_prefix": PriceModel(
        0.1,
        1.25,
        300_000,
        False,
        description="Anthropic's prices, any shared prefix read (the first model of issue 10)",
    ),
    "openai": PriceModel(
        0.1, 1.0, 300_000, False, model="gpt-4.1", description="OpenAI before GPT-5.6"
    ),
    "gpt_5_6": PriceModel(
        0.1,
        1.25,
        1_800_000,
        True,
        None,
        model="gpt-5.6",
        description="OpenAI GPT-5.6 and later: breakpoints, newest 80 entries, 30 minutes",
    ),
}
MAIN = "anthropic"


@dataclass
class Bill:
    """What one provider bills for one conversation's requests, call by call."""

    price: PriceModel
    total: float = 0.0
    reads: int = 0
    """Tokens read from the cache."""
    lost: int = 0
    """Tokens the provider held that a request wrote again."""
    rewrites: int = 0
    """Calls that wrote again tokens the provider held."""
    held: dict[int, int] = field(default_factory=dict)
    """Cache entry (prefix length) -> when last written or read."""
    previous: Sequence[bytes] = ()
    previous_tokens: Sequence[int] = ()
    previous_at: int | None = None

    def call(
        self,
        request: Sequence[bytes],
        tokens: Sequence[int],
        blocks: Sequence[int],
        breakpoints: Sequence[int],
        at: int,
    ) -> float:
        """Bill one request; ``breakpoints`` as prefix lengths. Returns its cost."""
        p = self.price
        shared = shared_prefix(self.previous, request)
        warm = self.previous_at is not None and 0 <= at - self.previous_at <= p.ttl_ms
        if p.at_breakpoints:
            hit = self._hit(shared, blocks, breakpoints, at)
        else:
            hit = shared if warm else 0
        last = max(breakpoints, default=len(request))
        read = sum(tokens[:hit])
        written = sum(tokens[hit:last])
        cost = read * p.read + written * p.write + sum(tokens[last:])
        self.total += cost
        self.reads += read
        if warm:
            again = rewritten(self.previous[hit:], self.previous_tokens[hit:], request)
            if again:
                self.rewrites += 1
                self.lost += again
        self.previous, self.previous_tokens, self.previous_at = request, tokens, at
        return cost

    def _hit(self, shared: int, blocks: Sequence[int], breakpoints: Sequence[int], at: int) -> int:
        p = self.price
        live = {q: u for q, u in self.held.items() if q <= shared and 0 <= at - u <= p.ttl_ms}
        live = dict(sorted(live.items(), key=lambda e: e[1])[-p.max_entries :])
        position = [0]
        for count in blocks:
            position.append(position[-1] + count)
        hit = 0
        for q in live:
            for b in breakpoints:
                if q <= b and (p.lookback is None or position[b] - position[q] <= p.lookback):
                    hit = max(hit, q)
                    break
        if hit:
            live[hit] = at
        for b in breakpoints:
            live[b] = at
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
