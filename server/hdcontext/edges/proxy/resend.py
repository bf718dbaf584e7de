"""Never worse than no proxy when the provider refuses what hdcontext changed.

A request hdcontext edited may break a rule of the provider that hdcontext does not know (a
reasoning item the API wants before a call, a tool output it expects, a compaction item's
neighbours). Without the proxy the agent's own request would have gone through. So when the
upstream answers an edited request with a 400 (it ran no model: nothing was billed), the
request goes again, once, exactly as the agent sent it, and the agent gets that answer. The
reason is counted, by the error's kind (its ``type``, ``code`` and ``param``, never its
message, which may quote the conversation).

A conversation whose edited request was refused and whose own went through is then sent as
the agent sends it for as long as the proxy runs (``AsSent``): the next edit would most
likely break the same rule, and each refusal costs a round trip.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping

import orjson

REFUSED_STATUS = 400
KEPT = 4096
"""Conversations remembered as sent as they came (the oldest forgotten first)."""


def refusal_kind(body: bytes) -> str:
    """What kind of refusal a 400's JSON body says, from its error's ``type``, ``code``,
    ``param`` and ``status`` (Gemini's): short, known fields only."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return "an answer that is not JSON"
    error = data.get("error") if isinstance(data, Mapping) else None
    if not isinstance(error, Mapping):
        return "no error object"
    said = [
        f"{key} {value}"
        for key in ("type", "code", "param", "status")
        if isinstance(value := error.get(key), str | int) and len(str(value)) <= 64
    ]
    return ", ".join(said) or "an error of no kind"


class AsSent:
    """The conversations that go as the agent sends them (their session ids)."""

    def __init__(self) -> None:
        self._sessions: OrderedDict[str, None] = OrderedDict()

    def add(self, session_id: str) -> None:
        self._sessions[session_id] = None
        self._sessions.move_to_end(session_id)
        while len(self._sessions) > KEPT:
            self._sessions.popitem(last=False)

    def __contains__(self, session_id: object) -> bool:
        return session_id in self._sessions
