"""A refresh call (``history/refresh``): whether one pays now, what it sends, and what it leaves.

``refresh.py`` says when a refresh call pays; this makes one when it is asked for. It sends the
working view up to the latest entry a request may end with (no tool call without its result),
its breakpoints on the entries the provider holds so that reading them keeps them, and a line
of text; what came since the last call goes with it only when the session has saved enough to
write it. No density edit, no compression: the call is billed like any other, and the session
that asked keeps what it leaves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..content import IContent, ToolCallBlock, ToolResponseBlock
from ..history.history import History
from ..settings import Settings
from .ledger import CallBill, CostLedger
from .pricing import Pricing
from .prompt_cache import Call, Placed, PromptCache
from .refresh import REFRESH_PLAIN_TOKENS, long_pays, next_refresh
from .rhythm import Waiting


class RefreshTooEarly(ValueError):
    """``history/refresh`` at a time before the session's last call."""

    def __init__(self, at: int, last: int) -> None:
        super().__init__(f"at: {at} is before the session's last call ({last})")


@dataclass(frozen=True)
class RefreshCall:
    """A refresh call that pays, as made."""

    call: Call
    """Its request as the prompt cache sees it (``call.length``: the entries it sends)."""
    placed: Placed
    read: int
    """Where the provider's read of it stops."""
    prompt: PromptCache
    """The prompt cache after it."""
    bill: CallBill


def after_last_call(ledger: CostLedger, at: int) -> None:
    """``RefreshTooEarly`` when ``at`` comes before the session's last call."""
    last = max(ledger.touched_at or 0, ledger.last_at or 0)
    if at < last:
        raise RefreshTooEarly(at, last)


def refresh_call(
    prompt: PromptCache,
    whole: Call,
    view: History,
    values: Settings,
    waiting: Waiting,
    free_waiting: int,
) -> RefreshCall | None:
    """The refresh call to make at ``whole.at`` (``whole``: the working view as a model call
    would send it), or ``None`` when none pays. ``waiting``: what the idle session waits on;
    ``free_waiting``: the tokens of edits waiting for a cold cache."""
    at = whole.at
    ledger = prompt.ledger
    pricing = whole.pricing
    live = prompt.live(whole)
    pays = live and next_refresh(
        ledger=ledger,
        pricing=pricing,
        held=live,
        tokens_between=view.tokens_between,
        free_waiting=free_waiting,
        idle_limit=values.cache_refresh_idle_seconds * 1000,
        can_lengthen=values.cache_ttl == "auto",
        waiting=waiting,
        at=at,
    )
    if not pays:
        return None
    held_end = max(q for q, _, _ in live)
    end = max(request_end(view.raw, whole.length), request_end(view.raw, held_end))
    call = replace(whole, length=end, unchanged=min(whole.unchanged, end))
    placed = prompt.refresh_placed(call)
    read = prompt.reading(call, placed.breakpoints)
    written = view.tokens_between(read, end)
    budget = ledger.budget(lifetimes=True) - pricing.read * view.tokens_between(0, read)
    if written * pricing.write > budget:  # what came since waits for the next call
        end = request_end(view.raw, held_end)
        call = replace(whole, length=end, unchanged=min(whole.unchanged, end))
        placed = prompt.refresh_placed(call)
        written = 0
    if (
        values.cache_ttl == "auto"
        and placed.breakpoints
        and not placed.long[-1]
        and written * pricing.write_price(True) <= budget
        and long_pays(
            ledger=ledger,
            pricing=pricing,
            due=at,
            written=written,
            prefix_tokens=view.tokens_between(0, end),
            waiting=waiting,
        )
    ):
        placed = Placed(placed.breakpoints, (True,) * len(placed.breakpoints))
    after, bill = prompt.refreshed(call, placed, REFRESH_PLAIN_TOKENS)
    return RefreshCall(call, placed, read, after, bill)


def refresh_at(
    values: Settings, pricing: Pricing, prompt: PromptCache, view: History, free_waiting: int
) -> int | None:
    """With ``cache.refresh``: when a refresh call pays, if no model call comes first."""
    if not values.cache_refresh or not prompt.held:
        return None
    return next_refresh(
        ledger=prompt.ledger,
        pricing=pricing,
        held=prompt.held,
        tokens_between=view.tokens_between,
        free_waiting=free_waiting,
        idle_limit=values.cache_refresh_idle_seconds * 1000,
        can_lengthen=values.cache_ttl == "auto",
    )


def waiting_on(view: History, since: int, told: Waiting) -> Waiting:
    """What the idle session waits on, from what the client appended since the last call (the
    working view was ``since`` entries long): the model's answer calling a tool (``tool``), or
    answering (``person``); else what the client said of it (``told``)."""
    if len(view.raw) <= since:
        return told
    entry = view.raw[-1]
    if entry.speaker != "ai":
        return "unknown"
    calls = any(isinstance(b, ToolCallBlock) for b in entry.blocks)
    return "tool" if calls else "person"


def request_end(entries: Sequence[IContent], length: int) -> int:
    """The longest prefix of ``entries[:length]`` that a request may end with, a line of
    user text to follow: none of its tool calls left without a result."""
    open_calls: set[str] = set()
    end = 0
    for i in range(length):
        entry = entries[i]
        for block in entry.blocks:
            if isinstance(block, ToolCallBlock):
                open_calls.add(block.id)
            elif isinstance(block, ToolResponseBlock):
                open_calls.discard(block.call_id)
        if not open_calls:
            end = i + 1
    return end
