"""``params.entries`` of a ``history/sync`` as ``Daemon.sync`` reads it, whoever sent it.

The LSP transport cuts out of a resent body the entries its connection sent before, and hands
the daemon a ``Conversation`` of the new entries and the known ones' digests (lsp/resent.py);
the proxy hands it one whose digests are made already, most of them at the previous request,
and whose new entries are IContent already (proxy/compactor.py). Any other list is a
``Conversation`` with nothing known.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import from_json

from ...core.content import IContent
from ...core.history.sync import entry_digest


@dataclass(frozen=True, slots=True)
class Record:
    """Entries a client sent in a sync that succeeded: their bytes and digests."""

    body: bytes | bytearray
    """The body they came in (kept whole rather than copied out of it)."""
    start: int
    stop: int
    """``body[start:stop]`` is the entries array, from ``[`` through the last entry (no
    closing bracket)."""
    digests: tuple[bytes, ...]

    @property
    def head(self) -> memoryview:
        return memoryview(self.body)[self.start : self.stop]


class Conversation(list[Any]):
    """``params.entries`` of a ``history/sync`` as its handler reads it. Its items are the
    entries that were parsed (all of them, or the ones after a record's); the handler asks
    for the digests of all entries, for the entries from some index on, and, once the sync
    has succeeded, ``settle``s it (which keeps a record for the next resend). A list, so that
    the parameters validate as the protocol says; no client can send one over JSON."""

    def __init__(
        self,
        parsed: list[Any],
        known: Record | None = None,
        span: tuple[bytes | bytearray, int, int] | None = None,
        keep: Callable[[Record], None] | None = None,
    ) -> None:
        super().__init__(parsed)
        self._known = known
        self._span = span
        self._keep = keep

    @property
    def known(self) -> int:
        """Entries that came as a record's bytes (not parsed this time)."""
        return 0 if self._known is None else len(self._known.digests)

    @property
    def total(self) -> int:
        """All entries of the conversation."""
        return self.known + len(self)

    def digests(self) -> list[bytes]:
        known = [] if self._known is None else list(self._known.digests)
        return known + [entry_digest(e) for e in self]

    def raw_from(self, start: int) -> list[Any]:
        """Entries ``start`` and after, as JSON values. The known ones are parsed from the
        record's bytes only when asked for (a fork inside what the client sent before)."""
        known = self.known
        if start >= known:
            return list(self[start - known :])
        assert self._known is not None
        earlier: list[Any] = from_json(bytes(self._known.head) + b"]")
        return earlier[start:] + list(self)

    def entries_from(self, start: int) -> list[IContent] | None:
        """Entries ``start`` and after as IContent, when the sender holds them so already
        (the proxy, which read them from a provider's format): the daemon's bulk path, with
        nothing encoded, parsed and validated again. ``None``: read ``raw_from``."""
        return None

    def settle(self, digests: Sequence[bytes]) -> None:
        """The sync succeeded with these digests (``digests()``): keep the record."""
        if self._keep is not None and self._span is not None and len(digests) == self.total:
            self._keep(Record(*self._span, tuple(digests)))


def conversation(params: object) -> Conversation:
    """``params.entries`` of a sync as a ``Conversation`` (a plain list when the body was
    too small for a record, or came another way)."""
    entries = params.get("entries") if isinstance(params, dict) else None
    if isinstance(entries, Conversation):
        return entries
    return Conversation(entries if isinstance(entries, list) else [])
