"""What the proxy needs of a provider's API: one implementation each (``anthropic.py``,
``openai.py``, ``responses.py``, ``gemini.py``), so that the server and the compactor handle
them all the same way.

The pieces are small so that the compactor can skip what it did for the previous request of
the same conversation: check and import only the messages that are new, export only the
entries the daemon has not returned before (``export_entry`` is a function of the entry and
the mode alone), describe each exported message once (``shape``, ``turn``), and put the
request's conversation together from those pieces (``assembly.py``), asking the API only
where its rules differ: how two messages of one role become one (``merge``), which messages
carry the daemon's breakpoints (``assemble``) and how one is marked (``mark``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ...core.content import IContent
from ...core.validity import Turn
from .usage import Billed


class Unsupported(ValueError):
    """The request's conversation holds something hdcontext cannot carry through IContent and
    back (a block type, a key), or is not the provider's format: it goes upstream as it came.
    The message names kinds and places, never content."""


@dataclass(frozen=True, slots=True)
class Shape:
    """What the assembly needs to know of one message it sends, without reading it again."""

    role: str
    merges: bool
    """A user or assistant message with nothing but its role and content: one that may be
    merged with a neighbour of its role."""
    results: bool = False
    """It holds tool results (Anthropic's ``tool_result`` blocks)."""
    only_results: bool = False
    """It holds tool results and nothing else."""
    thinking: bool = False
    """It carries the model's thinking (a ``thinking`` block, ``reasoning_content``)."""
    markable: bool = False
    """It has a part that may carry a cache breakpoint."""

    def joined(self, other: Shape) -> Shape:
        """The shape of this message merged with the ``other`` that follows it."""
        return Shape(
            role=self.role,
            merges=True,
            results=self.results or other.results,
            only_results=self.only_results and other.only_results,
            thinking=self.thinking or other.thinking,
            markable=self.markable or other.markable,
        )


class Api(Protocol):
    name: str
    """What the session id's prefix says the conversation speaks (``anthropic``, ``openai``,
    ``responses``, ``gemini``)."""

    upstream: str
    """The upstream it goes to (``anthropic``, ``openai``, ``gemini``)."""

    key: str
    """The body's member that holds the conversation (``messages``, ``input``, ``contents``)."""

    prompt_roles: frozenset[str]
    """Roles whose messages, before any other, are the client's prompt and not turns."""

    def opens(self, element: object, previous: object) -> bool:
        """Whether ``element`` opens one ``ai`` entry (exactly one, whatever follows it), after
        ``previous`` (``None``: an element that opens none, or the conversation's start).
        An Anthropic or chat-completions assistant message does; in the Responses API, the
        first of a run of the model's items."""
        ...

    def refresh_fields(self, conversation: list[dict[str, Any]], line: str) -> dict[str, Any]:
        """A refresh call's conversation (``conversation``, the messages the last request
        sent, with ``line`` as one more short user turn) and the fields that ask the least
        output the API allows: what ``Compactor.refresh_body`` puts over the agent's last
        request."""
        ...

    def as_sent(self, body: Mapping[str, Any]) -> str | None:
        """Why a request must go as it came although its conversation could be carried (the
        provider holds the history, or is asked to do something with exactly what was sent),
        or ``None``: what nearly every request gets."""
        ...

    def head(self, messages: Sequence[Any]) -> int:
        """How many leading elements of the body's ``messages`` are the client's prompt (they
        stay as sent); the conversation is what follows."""
        ...

    def check(self, messages: Sequence[Any], offset: int) -> None:
        """Unsupported unless every message can be carried whole; ``messages`` are the
        conversation's from index ``offset`` on (the index messages name)."""
        ...

    def import_messages(self, messages: list[Any], offset: int = 0) -> list[IContent]:
        """Messages as IContent; ``messages`` starts with the conversation's first message or
        with an assistant message (each becomes exactly one ``ai`` entry), at index
        ``offset`` of the body's (what an id the importer makes up from a message's place
        counts from, so that a message read again gets the same one)."""
        ...

    def start(self, body: Mapping[str, Any], head: Sequence[Any]) -> object:
        """What, besides the first entry, tells one conversation from another (the system
        prompt, the tools' names): part of the session id. ``head`` is the prompt's messages."""
        ...

    def export_mode(self, body: Mapping[str, Any], messages: Sequence[Any], before: str) -> str:
        """What of the request changes how an entry is exported (``""`` when nothing does),
        from ``messages`` and ``before``, the mode the conversation's earlier messages gave
        (``""``: none seen)."""
        ...

    def export_entry(self, item: IContent, mode: str) -> list[dict[str, Any]]:
        """One entry as the provider's messages."""
        ...

    def shape(self, message: Mapping[str, Any]) -> Shape:
        """What the assembly needs to know of one exported message."""
        ...

    def turn(self, message: Mapping[str, Any]) -> Turn | None:
        """One message as ``core.validity`` reads it (``None``: not a message)."""
        ...

    def merge(self, first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
        """Two messages of one role in a row as the one message the provider would read."""
        ...

    def assemble(
        self,
        body: Mapping[str, Any],
        shapes: Sequence[Shape],
        last_of: Sequence[int],
        breakpoints: Sequence[int],
        ttls: Sequence[str],
    ) -> list[tuple[int, str]]:
        """Which of the conversation's messages (``shapes``) carry the cache breakpoints the
        daemon names on entries (``last_of[i]``: the message entry ``i`` ends in, or the one
        before it), and each one's lifetime (``ttls``: the daemon's, parallel to
        ``breakpoints``), the client's own marks outside the conversation counted."""
        ...

    def mark(self, message: Mapping[str, Any], ttl: str) -> dict[str, Any]:
        """``message`` with a cache breakpoint of lifetime ``ttl`` on its last part that may
        carry one."""
        ...

    def body_edits(self, body: Mapping[str, Any], marked: Sequence[str]) -> dict[str, Any]:
        """The body's other fields to send otherwise than the client did, given the
        lifetimes of the marks placed (``marked``): an Anthropic agent's five-minute tools and
        system marks lifted to an hour when a message mark asks one (else the request breaks
        the order Anthropic requires), OpenAI's day-long retention where it is free. Empty
        when nothing changes (what nearly every request gets)."""
        ...

    def billed(self, usage: object) -> Billed | None: ...


class Merges(Protocol):
    def merge(self, first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]: ...


def user_line(api: Merges, messages: list[dict[str, Any]], line: str) -> list[dict[str, Any]]:
    """``messages`` with ``line`` as a user turn after them: merged into the last message
    when that is a user's already (two in a row would be refused)."""
    said = {"role": "user", "content": [{"type": "text", "text": line}]}
    if messages and messages[-1].get("role") == "user":
        return [*messages[:-1], api.merge(messages[-1], said)]
    return [*messages, said]
