"""The Anthropic request's cache breakpoints: whose they are, how long they live, how many.

An agent's request reaches the proxy with marks of its own: ``cache_control`` on tools, on
system blocks, on message blocks, and perhaps one at the top of the request (automatic
caching: Anthropic puts it on the last cacheable block and moves it forward each turn). The
proxy keeps the agent's tools and system marks, replaces the message marks with the daemon's
breakpoints, and must then send a request Anthropic accepts and that costs the agent no more
than its own would have:

- **Four slots.** Anthropic refuses a request with more than four breakpoints, and a top-level
  ``cache_control`` takes one. The agent's tools, system and top-level marks are counted
  first; the daemon's latest breakpoints fill what is left. The top-level mark already covers
  the request's tail, so a daemon breakpoint on the last message is not placed twice.
- **Never shorter.** A mark asking ``"ttl": "1h"`` keeps its entry an hour; written as a
  five-minute one, every pause of 5 to 60 minutes would be a full rewrite the agent does not
  pay without the proxy. When the agent asked an hour anywhere, every mark the proxy writes
  asks an hour (and the session is told, so the daemon prices it so).
- **One order.** In one request every one-hour mark comes before every five-minute one, in
  the order Anthropic reads the request (tools, system, messages, then the top-level mark on
  the tail); a request that breaks it is refused. The daemon's lifetimes keep that order among
  the messages; a one-hour message mark after a five-minute system or tools mark lifts those
  to an hour (they are read, not written, on nearly every call, so lifting them costs little),
  and a one-hour top-level mark lifts every message mark.

Pure: the proxy's Anthropic side calls it with the parsed parts of a request.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

Ttl = Literal["5m", "1h"]
FIVE_MINUTES: Ttl = "5m"
ONE_HOUR: Ttl = "1h"
MAX_BREAKPOINTS = 4
"""Anthropic refuses a request with more ``cache_control`` marks than this, the top-level one
included."""
HEAD_FIELDS = ("tools", "system")
"""The request's parts before its messages, in the order Anthropic reads them."""


_LONG_MARK = re.compile(rb'"cache_control"\s*:\s*\{[^{}]*"ttl"\s*:\s*"1h"')


def asks_long_in(raw: bytes) -> bool:
    """Whether a request's bytes hold a mark asking an hour, anywhere (its messages too,
    which the proxy does not parse again when it has read them before). Only a mark can
    match: inside a JSON string every quote is escaped, so text that quotes a mark does not.
    A byte search first: the pattern is looked for only where ``"1h"`` occurs at all."""
    return raw.find(b'"1h"') >= 0 and _LONG_MARK.search(raw) is not None


def ttl_of(control: object) -> Ttl | None:
    """The lifetime a ``cache_control`` value asks (None: not a mark). Anything but
    ``"1h"`` is the provider's default lifetime, as Anthropic reads it."""
    if not isinstance(control, Mapping) or not control:
        return None
    return ONE_HOUR if control.get("ttl") == ONE_HOUR else FIVE_MINUTES


def control(ttl: Ttl) -> dict[str, str]:
    """The mark the proxy writes: the plain one for the default lifetime, as agents write
    it, so a request the daemon leaves at five minutes is byte for byte the usual one."""
    return {"type": "ephemeral", "ttl": ONE_HOUR} if ttl == ONE_HOUR else {"type": "ephemeral"}


@dataclass(frozen=True)
class AgentMarks:
    """The marks the agent put where the proxy keeps them, and what it asked of the rest."""

    head: tuple[Ttl, ...] = ()
    """The tools and system marks, in the order Anthropic reads them."""
    automatic: Ttl | None = None
    """The top-level ``cache_control`` (automatic caching), if the request has one."""
    asks_long: bool = False
    """Whether any of the agent's marks, the message marks included, asked an hour."""

    @property
    def room(self) -> int:
        """Slots left for the daemon's message breakpoints."""
        taken = len(self.head) + (1 if self.automatic is not None else 0)
        return max(0, MAX_BREAKPOINTS - taken)


def _blocks(value: object) -> Iterable[Mapping[str, Any]]:
    if isinstance(value, list):
        return (b for b in value if isinstance(b, Mapping))
    return ()


def read_marks(body: Mapping[str, Any], messages: Iterable[object] = ()) -> AgentMarks:
    """The agent's marks in ``body`` (tools, system, top level) and, for whether it asked an
    hour, in ``messages`` (the messages the proxy reads of this request: agents mark the
    latest ones, which are always among them)."""
    head: list[Ttl] = []
    for field in HEAD_FIELDS:
        for block in _blocks(body.get(field)):
            ttl = ttl_of(block.get("cache_control"))
            if ttl is not None:
                head.append(ttl)
    automatic = ttl_of(body.get("cache_control"))
    asks_long = ONE_HOUR in head or automatic == ONE_HOUR
    for message in messages:
        if asks_long:
            break
        if isinstance(message, Mapping):
            content = message.get("content")
            asks_long = any(ttl_of(b.get("cache_control")) == ONE_HOUR for b in _blocks(content))
    return AgentMarks(head=tuple(head), automatic=automatic, asks_long=asks_long)


@dataclass(frozen=True)
class Placement:
    """Where the proxy puts message marks and with what lifetime, and whether the agent's
    five-minute tools and system marks must ask an hour for the order to hold."""

    marks: tuple[tuple[int, Ttl], ...]
    """(message index, lifetime), in message order."""
    lift_head: bool


def place(
    agent: AgentMarks,
    breakpoints: Sequence[int],
    ttls: Sequence[str],
    last: int,
    markable: Sequence[bool] | None = None,
) -> Placement:
    """The daemon's breakpoints (message indexes, with ``ttls`` parallel to them; a missing
    or unknown lifetime is the default one) as one valid request's marks: the latest first
    while slots are left, none on ``last`` when a top-level mark covers the tail, none on a
    message ``markable`` says cannot carry one; never shorter than the agent asked."""
    by_index: dict[int, Ttl] = {}
    for k, index in enumerate(breakpoints):
        ttl: Ttl = ONE_HOUR if k < len(ttls) and ttls[k] == ONE_HOUR else FIVE_MINUTES
        if index in by_index and by_index[index] == ONE_HOUR:
            continue
        by_index[index] = ttl
    chosen: list[tuple[int, Ttl]] = []
    for index in sorted(by_index, reverse=True):
        if len(chosen) >= agent.room:
            break
        if index < 0 or index > last:
            continue
        if agent.automatic is not None and index == last:
            continue
        if markable is not None and not markable[index]:
            continue
        chosen.append((index, by_index[index]))
    chosen.reverse()
    if agent.asks_long or agent.automatic == ONE_HOUR:
        chosen = [(index, ONE_HOUR) for index, _ in chosen]
    else:
        # The daemon's order holds for all its breakpoints; a subset keeps it, but make
        # sure: once a five-minute mark is met, later one-hour marks would be refused.
        seen_short = False
        for k, (index, ttl) in enumerate(chosen):
            if ttl == FIVE_MINUTES:
                seen_short = True
            elif seen_short:
                chosen[k] = (index, FIVE_MINUTES)
    long_marks = any(ttl == ONE_HOUR for _, ttl in chosen) or agent.automatic == ONE_HOUR
    lift_head = long_marks and FIVE_MINUTES in agent.head
    return Placement(marks=tuple(chosen), lift_head=lift_head)


def lift_head(body: Mapping[str, Any]) -> dict[str, Any]:
    """``tools`` and ``system`` with every mark asking an hour (only the fields that change;
    the blocks are copied, the client's body is not touched)."""
    out: dict[str, Any] = {}
    for field in HEAD_FIELDS:
        value = body.get(field)
        if not isinstance(value, list):
            continue
        changed = False
        lifted: list[Any] = []
        for block in value:
            if isinstance(block, Mapping) and ttl_of(block.get("cache_control")) == FIVE_MINUTES:
                lifted.append(
                    {**block, "cache_control": {**block["cache_control"], "ttl": ONE_HOUR}}
                )
                changed = True
            else:
                lifted.append(block)
        if changed:
            out[field] = lifted
    return out


def request_order_ok(body: Mapping[str, Any]) -> bool:
    """Whether every one-hour mark of ``body`` comes before every five-minute one, in the
    order Anthropic reads it (what it refuses otherwise): the last check before sending."""
    seen_short = False
    for ttl in _all_ttls(body):
        if ttl == FIVE_MINUTES:
            seen_short = True
        elif seen_short:
            return False
    return True


def count_marks(body: Mapping[str, Any]) -> int:
    """Every ``cache_control`` mark Anthropic counts in ``body``, the top-level one included."""
    return sum(1 for _ in _all_ttls(body))


def _all_ttls(body: Mapping[str, Any]) -> Iterable[Ttl]:
    for field in HEAD_FIELDS:
        for block in _blocks(body.get(field)):
            ttl = ttl_of(block.get("cache_control"))
            if ttl is not None:
                yield ttl
    for message in _blocks(body.get("messages")):
        for block in _blocks(message.get("content")):
            ttl = ttl_of(block.get("cache_control"))
            if ttl is not None:
                yield ttl
    automatic = ttl_of(body.get("cache_control"))
    if automatic is not None:
        yield automatic
