"""What the proxy needs of a provider's API: one implementation each (``anthropic.py``,
``openai.py``), so that the server and the compactor handle both the same way."""

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

    def conversation(self, body: Mapping[str, Any]) -> list[IContent]:
        """The request's conversation as IContent; Unsupported when it cannot be carried."""
        ...

    def start(self, body: Mapping[str, Any]) -> object:
        """What, besides the first entry, tells one conversation from another (the system
        prompt, the tools' names): part of the session id."""
        ...

    def rebuild(
        self, body: Mapping[str, Any], history: Sequence[IContent], breakpoints: Sequence[int]
    ) -> dict[str, Any]:
        """The request with ``history`` as its conversation and cache breakpoints on the last
        block of the entries ``breakpoints`` names; everything else as the client sent it."""
        ...

    def problems(self, body: Mapping[str, Any]) -> int:
        """How many provider-validity problems (``core.validity``) the rebuilt body has."""
        ...

    def billed(self, usage: object) -> Billed | None: ...
