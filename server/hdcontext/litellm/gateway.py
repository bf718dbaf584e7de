"""What the LiteLLM callback does at each hook, apart from LiteLLM's classes.

Before the call (``pre_call``): the request's conversation goes through the process's
compactor as ``hdcontext proxy``'s would (``Compactor.compact``, bounded by its ``bound_s``)
under a session named within the caller's owner (``identity.py``, ``bodies.session_name``), and
what the compactor sends otherwise is written back into LiteLLM's ``data``, breakpoints and
retention included. Anything that goes wrong leaves ``data`` as it came: every failure is
caught here, said in the log by its kind (never the conversation, a key or a header), counted
for ``hdcontext stats``, and the request goes on. LiteLLM never fails because of hdcontext.

After it, each call is found again by LiteLLM's call id: its usage as LiteLLM normalizes it is
told to the session (``succeeded``), a call that failed is taken back (``failed``: the model
never ran, so the agent's retry is priced against what the provider holds), and a call answered
in one body waits for its session's commit before LiteLLM answers (``answered``), as the proxy's
answer does. A session holds its calls' bills in order (a bill is the last call's), but LiteLLM
logs a call's success after its answer went out, when the agent may already have sent its next
request: so a conversation's next request waits for its previous call to be told, a moment
(``TOLD_WAIT_S`` at most).

A provider that refuses (400) a request hdcontext edited may have a rule hdcontext does not
know. The proxy sends the agent's own request again at once; a hook cannot, so the agent sees
that one refusal, and the conversation's next request (the agent's retry) goes as it came. If
that one goes through, the conversation goes as it comes from then on, as with the proxy
(``AsSent``); if it is refused too, the edit was not the cause and hdcontext carries it again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..edges.proxy.api import Api, Unsupported
from ..edges.proxy.app import TAKING_IN
from ..edges.proxy.compactor import NotJson, TooSlow
from ..edges.proxy.compactor import client_name as agent_name
from ..edges.proxy.resend import REFUSED_STATUS
from ..edges.proxy.upstream import saved
from .billing import billed_of
from .bodies import api_for, read_request, session_name, write_back
from .deployments import UNKNOWN, Deployment, carried
from .identity import owner_of
from .runtime import Process, Runtime

log = logging.getLogger(__name__)

KEPT_CALLS = 4096
"""Calls waiting for their success or failure hook (the oldest forgotten first: a call whose
hooks never came)."""
TOLD_WAIT_S = 2.0
"""How long a conversation's request waits for its previous call's usage to be told (LiteLLM
logs it as the answer ends; past this the request goes on, and that bill may count as the
next call's)."""
KEPT_SUSPECTS = 4096
SAID_AGAIN_AFTER_S = 3600.0
"""A reason a request went as it came is a warning once an hour, a debug line meanwhile."""
SAID_KEPT = 256
PROBING = "the provider refused an edit of this conversation: its next request goes as it came"

Deployments = Callable[[object], Deployment]
"""A request's model group → its deployment (``handler.py`` asks LiteLLM's router)."""


@dataclass
class Call:
    """A call hdcontext saw before it went, until LiteLLM says how it ended."""

    session: str
    api: str
    changed: bool
    """What went differed from what the agent sent."""
    forwarded: asyncio.Event | None = None
    """For a conversation taken in meanwhile: set once the call ended."""
    probe: bool = False
    """It went as it came, after an edit of its conversation was refused."""
    told: asyncio.Event = field(default_factory=asyncio.Event)
    """Set once its ending was told to its session (or never will be)."""

    def ended(self) -> None:
        if self.forwarded is not None:
            self.forwarded.set()


class Gateway:
    def __init__(
        self, process: Process | None = None, deployments: Deployments | None = None
    ) -> None:
        self.process = process or Process()
        self.deployments = deployments or (lambda group: UNKNOWN)
        self._calls: OrderedDict[str, Call] = OrderedDict()
        self._latest: dict[str, Call] = {}
        """Each session's latest call whose ending is not told yet."""
        self._suspects: OrderedDict[str, None] = OrderedDict()
        self._said: dict[str, float] = {}
        self._savings: dict[str, asyncio.Future[None]] = {}
        """The commits being written of the calls under way, by call id (``answered``)."""

    # -- before the call ---------------------------------------------------------------------

    async def pre_call(self, auth: Any, data: object, call_type: object) -> None:
        """Compact ``data``'s conversation in place; leave it as it came on any failure."""
        api = api_for(call_type)
        if api is None or not isinstance(data, dict):
            return
        try:
            runtime = await self.process.ready()
            if runtime is not None:
                await self._pre_call(runtime, api, auth, data)
        except Exception as exc:
            self._unchanged(None, api, f"hdcontext failed: {type(exc).__name__}")

    async def _pre_call(self, runtime: Runtime, api: Api, auth: Any, data: dict[str, Any]) -> None:
        call_id = data.get("litellm_call_id")
        deployment = self.deployments(data.get("model"))
        if not carried(api.name, deployment):
            why = f"LiteLLM translates it for {deployment.provider}: it goes as it came"
            return self._unchanged(runtime, api, why)
        owner = owner_of(auth)
        client = agent_name(_user_agent(data))
        try:
            request = read_request(api, data, deployment.model)
            session = session_name(request, owner.tag, client)
        except Unsupported as exc:
            return self._unchanged(runtime, api, f"not carried: {exc}")
        runtime.owners.note(owner)
        await self._previous_told(session)
        if session in self._suspects:
            self._keep(call_id, Call(session, api.name, changed=False, probe=True))
            return self._unchanged(runtime, api, PROBING)
        try:
            compacted = await runtime.compactor.compact(
                api, request.raw, session=session, client=client
            )
        except NotJson as exc:
            return self._unchanged(runtime, api, str(exc))
        except Unsupported as exc:
            return self._unchanged(runtime, api, f"not carried: {exc}")
        except TooSlow as exc:
            return self._unchanged(runtime, api, str(exc))
        if compacted.passed:
            self._keep(call_id, Call(session, api.name, False, forwarded=compacted.forwarded))
            runtime.note_uncarried(api.name, TAKING_IN)
            return None
        changed = compacted.body != request.raw
        if changed:
            try:
                written = write_back(request, data, compacted.body)
            except Exception:
                await runtime.compactor.refused(session)  # what the session counted never went
                raise
        else:
            written = []
        self._keep(call_id, Call(session, api.name, changed))
        if compacted.saving is not None and isinstance(call_id, str):
            self._savings[call_id] = compacted.saving
            compacted.saving.add_done_callback(lambda _: self._savings.pop(call_id, None))
        log.info(
            "%s %s: %d entries in, %d out, %d tokens, breakpoints %s, %d → %d bytes%s",
            api.name,
            session,
            compacted.entries_in,
            compacted.entries_out,
            compacted.tokens,
            list(compacted.breakpoints),
            len(request.raw),
            len(compacted.body),
            f" ({', '.join(written)} written)" if written else "",
        )
        return None

    async def _previous_told(self, session: str) -> None:
        """Wait, a moment at most, for the session's previous call's ending to be told."""
        previous = self._latest.get(session)
        if previous is not None and not previous.told.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(previous.told.wait(), TOLD_WAIT_S)

    def _keep(self, call_id: object, call: Call) -> None:
        if not isinstance(call_id, str):  # no id to find it by: its ending is not known
            self._done(call)
            return
        self._calls[call_id] = call
        self._latest[call.session] = call
        while len(self._calls) > KEPT_CALLS:
            _, forgotten = self._calls.popitem(last=False)
            self._done(forgotten)

    def _done(self, call: Call) -> None:
        """Nothing more will be told of ``call``."""
        call.ended()
        call.told.set()
        if self._latest.get(call.session) is call:
            del self._latest[call.session]

    def _unchanged(self, runtime: Runtime | None, api: Api, why: str) -> None:
        """Say why a request goes as it came: a warning the first time in an hour a reason
        comes, a debug line for it again meanwhile; counted for ``hdcontext stats``."""
        if runtime is not None:
            runtime.note_uncarried(api.name, why)
        now, key = time.monotonic(), f"{api.name} {why}"
        last = self._said.get(key)
        if last is not None and now - last < SAID_AGAIN_AFTER_S:
            log.debug("%s request went on unchanged again: %s", api.name, why)
            return
        self._said.pop(key, None)
        self._said[key] = now
        while len(self._said) > SAID_KEPT:
            del self._said[next(iter(self._said))]
        log.warning("%s request went on unchanged: %s", api.name, why)

    # -- after it ----------------------------------------------------------------------------

    async def answered(self, data: object) -> None:
        """A call answered in one body: its session's commit on disk before LiteLLM answers."""
        call_id = data.get("litellm_call_id") if isinstance(data, Mapping) else None
        if isinstance(call_id, str):
            await saved(self._savings.get(call_id))

    async def succeeded(self, kwargs: object, response: object) -> None:
        """The call went through: its usage told to its session."""
        call = self._ended(kwargs)
        runtime = self.process.runtime
        if call is None:
            return
        try:
            if runtime is None:
                return
            if call.probe:
                self._suspects.pop(call.session, None)
                runtime.compactor.as_sent.add(call.session)
                log.warning(
                    "%s %s: the provider took the request as the agent sent it; this "
                    "conversation goes as it comes from now on",
                    call.api,
                    call.session,
                )
                return
            assert isinstance(kwargs, Mapping)
            billed = billed_of(kwargs, response)
            if billed is not None:
                await runtime.compactor.record(call.session, billed)
        except Exception as exc:
            log.warning("%s: usage not recorded: %s", call.api, type(exc).__name__)
        finally:
            self._done(call)

    async def failed(self, request_data: object, exception: object) -> None:
        """The call failed (the upstream refused it, or was not reached): taken back."""
        call = self._ended(request_data)
        runtime = self.process.runtime
        if call is None:
            return
        try:
            if runtime is None:
                return
            if call.probe:  # refused as sent too: the edit was not the cause
                self._suspects.pop(call.session, None)
                return
            await runtime.compactor.refused(call.session)
            if call.changed and getattr(exception, "status_code", None) == REFUSED_STATUS:
                self._suspects[call.session] = None
                while len(self._suspects) > KEPT_SUSPECTS:
                    self._suspects.popitem(last=False)
                log.warning(
                    "%s %s: the provider refused a request hdcontext edited (%s); the "
                    "conversation's next request goes as the agent sends it",
                    call.api,
                    call.session,
                    type(exception).__name__,
                )
        except Exception as exc:
            log.warning("%s: a failed call not taken back: %s", call.api, type(exc).__name__)
        finally:
            self._done(call)

    def _ended(self, kwargs: object) -> Call | None:
        call_id = kwargs.get("litellm_call_id") if isinstance(kwargs, Mapping) else None
        call = self._calls.pop(call_id, None) if isinstance(call_id, str) else None
        if call is not None:
            call.ended()
        return call

    async def close(self) -> None:
        """Stop hdcontext in this process (a test; LiteLLM's stop does it otherwise)."""
        for call in list(self._calls.values()):
            self._done(call)
        self._calls.clear()
        await self.process.close()


def _user_agent(data: Mapping[str, Any]) -> str | None:
    """The request's User-Agent, from the headers LiteLLM keeps of it."""
    for where in ("proxy_server_request", "metadata", "litellm_metadata"):
        part = data.get(where)
        headers = part.get("headers") if isinstance(part, Mapping) else None
        if isinstance(headers, Mapping):
            agent = headers.get("user-agent") or headers.get("User-Agent")
            if isinstance(agent, str):
                return agent
    return None
