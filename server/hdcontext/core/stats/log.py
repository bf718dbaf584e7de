"""The call events a session notes until the edge takes them to save (``calls.py`` says
what each one is).

They are not part of the session's state: the edge saves them as rows of their own, in the
same transaction as the session, and then they are gone from here. So that a change rolled
back leaves no figure behind, the log says how long it is at a snapshot and forgets what came
after it on a restore.
"""

from __future__ import annotations

from ..cache.ledger import CallBill
from .calls import CallEvent, CallMade


class CallLog:
    """The events noted since the edge last took them, in order."""

    def __init__(self) -> None:
        self._events: list[CallEvent] = []

    def __len__(self) -> int:
        return len(self._events)

    def note(self, event: CallEvent) -> None:
        self._events.append(event)

    def made(self, bill: CallBill | None, refresh: bool, model: str | None, masked: int) -> None:
        """A model or refresh call as the daemon priced it, with the session's model and how
        many tool outputs masking had made pointers by then (the stats price and count by
        them)."""
        if bill is not None:
            self._events.append(CallMade(bill.at, refresh, model, bill, masked))

    def take(self) -> list[CallEvent]:
        """The events noted since the last time; they are forgotten here."""
        taken, self._events = self._events, []
        return taken

    def forget_after(self, count: int) -> None:
        """Forget the events noted after the first ``count`` (a rolled-back change's)."""
        del self._events[count:]
