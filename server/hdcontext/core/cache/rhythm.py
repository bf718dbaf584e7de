"""How likely the session is to pause, and to come back after a pause: from its own rhythm.

Agents call the model in loops whose calls come seconds apart; between turns a person reads,
thinks or is away, and a session may end for good (a sub-agent's thread always does). A pause
longer than the cache's default lifetime makes the next call write everything again. From the
ledger's counts (``ledger.py``) this says how likely the next gap is to be such a pause, and,
once the session has been idle a while, how likely it is to come back within a given time.

What the session waits on says most about whether it comes back: when the model's last answer
called a tool, the agent runs it and calls again (a long test run, a sub-agent, a permission
prompt); when the model answered, a person has the turn, and many sessions end there. The
daemon knows which when the client has appended the answer (``Waiting``); else it cannot tell.

The priors are the constants below. ``PAUSE_PRIOR`` and the return prior of a session that
waits on a person were chosen on the replay with each project held out in turn
(``python -m bench.lifetimes``: 49 conversations in 21 projects; the pick of 18 folds); the
others are stated assumptions (an agent running a tool comes back; a person's pauses spread
over the hour).
"""

from __future__ import annotations

from typing import Literal, TypeAlias

from .ledger import CostLedger

Waiting: TypeAlias = Literal["tool", "person", "unknown"]
"""What an idle session waits on: a tool the model called, a person (the model answered), or
the daemon does not know (the client has not appended the answer)."""

_TOOL_ENDS = frozenset({"tool_use", "tool_calls", "function_call"})
_PERSON_ENDS = frozenset({"end_turn", "stop_sequence", "stop", "refusal"})


def waiting_after(reason: object) -> Waiting:
    """What an answer that ended for ``reason`` (Anthropic's ``stop_reason``, OpenAI's
    ``finish_reason``) leaves the session waiting on: a tool call comes back within seconds, an
    answer waits on a person; a cut answer (``max_tokens``), a paused turn or a reason not
    known: the agent decides, so unknown."""
    if not isinstance(reason, str):  # a provider's odd value (a list, an object): not known
        return "unknown"
    if reason in _TOOL_ENDS:
        return "tool"
    if reason in _PERSON_ENDS:
        return "person"
    return "unknown"


PAUSE_PRIOR = 0.1
"""The chance that a gap between two model calls outlives the default lifetime but not the
longer one, before the session has shown its own."""
PRIOR_WEIGHT = 20.0
"""How many gaps the prior counts as (the session's own gaps outweigh it past that)."""
RETURN_PRIOR: dict[Waiting, float] = {"tool": 0.95, "person": 0.1, "unknown": 0.1}
"""The chance that a session idle past the default lifetime comes back at all, by what it
waits on, before it has shown pauses of its own."""
RETURN_WEIGHT = 2.0
"""How many pauses the return prior counts as."""
PRIOR_PAUSES_MS = (360_000, 480_000, 600_000, 900_000, 1_500_000, 2_400_000, 3_300_000)
"""Pause lengths the prior assumes, spread over the hour (a long tool run, a person's break),
each weighing as much as one pause of the session's own."""


def pause_chance(ledger: CostLedger) -> float:
    """The chance that the next gap outlives the default lifetime and not the longer one."""
    gaps = max(0, ledger.calls - 1)
    mid = ledger.pauses - ledger.long_pauses
    return (mid + PAUSE_PRIOR * PRIOR_WEIGHT) / (gaps + PRIOR_WEIGHT)


def return_chance(ledger: CostLedger, waiting: Waiting) -> float:
    """The chance that a session idle past the default lifetime comes back: every pause it
    had so far ended with a call, which is evidence it will (a ``Beta`` prior's mean)."""
    a = RETURN_PRIOR[waiting] * RETURN_WEIGHT
    return (a + ledger.pauses) / (RETURN_WEIGHT + ledger.pauses)


def _share_longer(ledger: CostLedger, idle: int) -> float:
    lengths = (*PRIOR_PAUSES_MS, *ledger.recent_pauses)
    return sum(1 for g in lengths if g > idle) / len(lengths)


def back_between(ledger: CostLedger, waiting: Waiting, idle: int, stop: int) -> float:
    """The chance that a session idle for ``idle`` ms comes back before ``stop`` ms after
    its last call."""
    returns = return_chance(ledger, waiting)
    still_idle = returns * _share_longer(ledger, idle) + (1.0 - returns)
    within = _share_longer(ledger, idle) - _share_longer(ledger, stop)
    return returns * within / still_idle if still_idle > 0 else 0.0


def idle_at(ledger: CostLedger, waiting: Waiting, idle: int, at: int) -> float:
    """The chance that a session idle for ``idle`` ms is still idle ``at`` ms after its last
    call."""
    returns = return_chance(ledger, waiting)
    still_idle = returns * _share_longer(ledger, idle) + (1.0 - returns)
    if still_idle <= 0:
        return 0.0
    return (returns * _share_longer(ledger, at) + (1.0 - returns)) / still_idle
