"""What the proxy needs of a provider's API: one implementation each (``anthropic.py``,
``openai.py``), so that the server and the compactor handle both the same way.

The pieces are small so that the compactor can skip what it did for the previous request of
the same conversation: check and import only the messages that are new, export only the
entries the daemon has not returned before (``export_entry`` is a function of the entry and
the mode alone), and put the request together (``assemble``) from those pieces.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ...core.content import IContent
from .usage import Billed


class Unsupported(ValueError):
    """The request's conversation holds something hdcontext cannot carry through IContent and
    back (a block type, a key), or is not the provider's format: it goes upstream as it came.
    The message names kinds and places, never content."""


class Api(Protocol):
    name: str
    """``anthropic`` or ``openai``: the upstream it goes to, and the session id's prefix."""

    def messages(self, body: Mapping[str, Any]) -> list[Any]:
        """The conversation part of the request (Unsupported when there is none)."""
        ...

    def check(self, messages: list[Any], start: int) -> None:
        """Unsupported unless every message from ``start`` on can be carried whole."""
        ...

    def import_messages(self, messages: list[Any]) -> list[IContent]:
        """Messages as IContent; ``messages`` starts with the conversation's first message or
        with an assistant message (each becomes exactly one ``ai`` entry)."""
        ...

    def start(self, body: Mapping[str, Any]) -> object:
        """What, besides the first entry, tells one conversation from another (the system
        prompt, the tools' names): part of the session id."""
        ...

    def export_mode(self, body: Mapping[str, Any]) -> str:
        """What of the request changes how an entry is exported ("" when nothing does)."""
        ...

    def export_entry(self, item: IContent, mode: str) -> list[dict[str, Any]]:
        """One entry as the provider's messages."""
        ...

    def assemble(
        self,
        body: Mapping[str, Any],
        exported: Sequence[list[dict[str, Any]]],
        breakpoints: Sequence[int],
    ) -> dict[str, Any]:
        """The request with the exported entries as its conversation and cache breakpoints on
        the last block of the entries ``breakpoints`` names; everything else as sent."""
        ...

    def problems(self, body: Mapping[str, Any]) -> int:
        """How many provider-validity problems (``core.validity``) a request has."""
        ...

    def billed(self, usage: object) -> Billed | None: ...
