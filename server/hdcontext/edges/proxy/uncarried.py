"""The requests hdcontext did not carry, counted: nothing goes through unseen.

A request the proxy cannot carry saves nothing and leaves no call row, so without a count an
agent the proxy passes by would be invisible: its user would see no savings and no reason.
Every such request is counted by its API, its outcome and its reason (kinds and indices, as
the log says them, never content):

- ``as sent``: it went to the model as the agent sent it (a block hdcontext does not carry, a
  conversation being taken in, a provider that refused an edit…);
- ``not forwarded``: the proxy answered it itself (no API it serves, another provider's key,
  a WebSocket);
- ``passed through``: a path of a served API that is no model call (``count_tokens``, a model
  list, files), passed to its provider as it came.

The counts since the proxy started feed its page at once; they are also added to the
storage's ``passed`` table (``Store.add_passed``) a few seconds later and when the proxy
stops, for ``hdcontext stats`` and the page of a later day.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final

from ..storage.records import PassedRow

AS_SENT: Final = "as sent"
NOT_FORWARDED: Final = "not forwarded"
PASSED_THROUGH: Final = "passed through"
KEPT: Final = 256
"""Reasons remembered since the start, for the page (the oldest forgotten first)."""

_ID = re.compile(r"[0-9]|^[A-Za-z0-9_-]{20,}$")
_GEMINI_MODEL = re.compile(r"^(models|tunedModels)/[^/:]+(:|$)")


def path_kind(method: str, path: str) -> str:
    """A path as a reason may name it: a model's name, an id, anything long the caller wrote
    made a placeholder, so that the reasons stay few (``POST /v1beta/models/{model}:countTokens``,
    ``GET /v1/files/{id}``)."""
    segments = [s for s in path.split("/") if s][:5]
    shown: list[str] = []
    for k, segment in enumerate(segments):
        if k and segments[k - 1] in ("models", "tunedModels"):
            _, colon, method_name = segment.partition(":")
            shown.append("{model}" + (f":{method_name[:40]}" if colon else ""))
        elif k > 1 and (_ID.search(segment) or len(segment) > 40):
            shown.append("{id}")
        else:
            shown.append(segment[:40])
    return f"{method} /" + "/".join(shown)


def _day(at_ms: int) -> str:
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d")


@dataclass
class Uncarried:
    """The counts since the proxy started (for its page) and those not stored yet."""

    as_sent: dict[str, int] = field(default_factory=dict)
    not_forwarded: dict[str, int] = field(default_factory=dict)
    passed_through: dict[str, int] = field(default_factory=dict)
    _pending: dict[tuple[str, str, str, str], tuple[int, int]] = field(default_factory=dict)

    def note(self, api: str, outcome: str, reason: str, at_ms: int | None = None) -> None:
        at = time.time_ns() // 1_000_000 if at_ms is None else at_ms
        since_start = {
            AS_SENT: self.as_sent,
            NOT_FORWARDED: self.not_forwarded,
            PASSED_THROUGH: self.passed_through,
        }[outcome]
        key = reason if outcome != AS_SENT else f"{api} {reason}"
        since_start[key] = since_start.pop(key, 0) + 1  # the latest last
        while len(since_start) > KEPT:
            del since_start[next(iter(since_start))]
        stored = (_day(at), api, outcome, reason)
        requests, _ = self._pending.get(stored, (0, 0))
        self._pending[stored] = (requests + 1, at)

    def take(self) -> list[PassedRow]:
        """The counts not stored yet (and forgets them: the caller stores them)."""
        rows = [
            PassedRow(day, api, outcome, reason, requests, last)
            for (day, api, outcome, reason), (requests, last) in self._pending.items()
        ]
        self._pending = {}
        return rows

    def give_back(self, rows: list[PassedRow]) -> None:
        """Rows a store could not take, to be tried again with the next ones."""
        for row in rows:
            key = (row.day, row.api, row.outcome, row.reason)
            requests, last = self._pending.get(key, (0, 0))
            self._pending[key] = (requests + row.requests, max(last, row.last))
