"""What a session keeps of each call it served, for ``hdcontext stats``: counts, never content.

A session notes four kinds of event as they happen (``Session.take_calls`` hands them to the
edge that saves it, in the same transaction as the session's own state, so that a call rolled
back leaves no figure behind):

- ``CallMade``: a model call (``history/compact``) or a refresh call (``history/refresh``) as
  the daemon priced it (``ledger.CallBill``: the tokens it expects the provider to bill with
  hdcontext, by kind, and what the same call would have sent without it), with the session's
  model at that moment (a session can change model: the price follows the call) and how many
  tool outputs masking had made pointers by then;
- ``UsageReported``: what the provider billed (``history/usage``), which belongs to the call
  just made when that call still waits for its usage (``attached``), else stands alone (a
  client that reports a call the daemon did not see);
- ``CallRefused``: the call just made never reached the model (the provider answered it
  with an error, or could not be reached): nothing was billed, so its row goes, when no usage
  has filled it in;
- ``Retrieved``: the model (through the editor's tool) or the user fetched back something
  density had taken out (``history/retrieve``).

``CallRow`` is one stored call as ``hdcontext stats`` reads it back (``core/stats/costs.py`` prices
and sums them).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias

from ..cache.ledger import CallBill, Charge

Kind: TypeAlias = Literal["model", "refresh", "retrieve"]


@dataclass(frozen=True)
class BilledUsage:
    """One call as the provider billed it (``history/usage``)."""

    input: int
    """Every input token, cached ones included."""
    read: int = 0
    """Of those, read from the cache."""
    write: int = 0
    """Of those, written to the cache (any lifetime)."""
    write_1h: int | None = None
    """Of ``write``, written for an hour; ``None``: the client did not say (the proxy reads it
    from Anthropic's ``cache_creation``)."""
    output: int = 0


@dataclass(frozen=True)
class CallMade:
    at: int
    refresh: bool
    model: str | None
    bill: CallBill
    masked: int
    """Tool outputs masking had made pointers so far in the session."""


@dataclass(frozen=True)
class UsageReported:
    at: int
    model: str | None
    attached: bool
    """The usage of the call just made (which was waiting for it)."""
    billed: BilledUsage


@dataclass(frozen=True)
class CallRefused:
    at: int


@dataclass(frozen=True)
class Retrieved:
    at: int


CallEvent: TypeAlias = CallMade | UsageReported | CallRefused | Retrieved


@dataclass(frozen=True)
class CallRow:
    """One stored call. ``charge`` and ``off`` are ``None`` for a usage the daemon saw no
    call for; ``billed`` is ``None`` until (unless) the client reports the call's usage."""

    session_id: str
    seq: int
    at: int
    kind: Kind
    model: str | None
    masked: int | None
    """Tool outputs masked so far in the session, at a model or refresh call."""
    charge: Charge | None
    off: Charge | None
    billed: BilledUsage | None
