"""A session's calls as the provider saw them, from one call to the next.

The session decides what a call sends; this keeps what the calls leave. It owns the cache
state saved with the session (``CacheState``: what the provider holds and what the calls cost,
the reply the client holds, the bill the last call is expected to come with, the sums of the
bills) and moves it on at each model call, refresh call and bill. It also keeps what is not
saved: the last call until its bill comes, to take back if it never reached the model; what the
client said the last answer waits on; the events noted for ``hdcontext stats`` until the edge
takes them (``stats/log.py``). The prompt cache's own reckoning is the cache's
(``cache/prompt_cache.py``, ``request.py``, ``refresh_call.py``, ``billed.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..cache.billed import UsageCheck, billed, expected_of
from ..cache.ledger import CallBill
from ..cache.pricing import Pricing
from ..cache.prompt_cache import Call, Placed
from ..cache.refresh_call import RefreshCall, after_last_call, refresh_at, refresh_call, waiting_on
from ..cache.request import anchored, request
from ..cache.rhythm import Waiting
from ..cache.schedule import Candidate
from ..history.history import History
from ..history.stored import Entries
from ..settings import Settings
from ..stats.calls import BilledUsage, CallRefused, Retrieved, UsageReported
from ..stats.log import CallLog
from .state import CacheState, ReplyMark


@dataclass(frozen=True)
class _Sent:
    """A call the prompt cache was told of (``Calls._sent``)."""

    after: CacheState
    """The cache state the call left: the call can be taken back while it is still this."""
    before: CacheState
    unchanged: int | None
    """A model call's head of the view as the provider had last seen it (``Call.unchanged``);
    ``None``: a refresh call, which changes no entry."""


@dataclass(frozen=True)
class Told:
    """A model call as the prompt cache was told of it: what its reply says."""

    placed: Placed
    bill: CallBill
    stable: int
    """Entries at the head of the working view that the client holds as they are."""
    revision: int
    previous: int
    """The revision of the previous reply (0: none)."""
    curated: Entries
    refresh_at: int | None


class Calls:
    def __init__(self, clock: Callable[[], int]) -> None:
        self.state = CacheState()
        self.log = CallLog()  # noted since the edge last saved them
        self._clock = clock
        self._sent: _Sent | None = None
        """The last call the prompt cache was told of, until its usage comes: what to take
        back if it never reached the model (``refused``). Not stored: a call refused after a
        restart is not taken back (the next usage corrects the cache's model)."""
        self._told_waiting: Waiting = "unknown"
        """What the client said the last call's answer waits on, when it appends no answer
        (the proxy: the answer's stop reason). Not stored: a restart forgets it."""

    # -- a call made ---------------------------------------------------------------------

    def request(self, view: History, pricing: Pricing, values: Settings, at: int) -> Call:
        """A model call's request as the prompt cache sees it, the history as it is now."""
        mark = self.state.reply
        return request(view, max(mark.raw_len, mark.held_len), pricing, values, at)

    def told(
        self,
        view: History,
        call: Call,
        values: Settings,
        waiting: Sequence[Candidate],
        model: str | None,
        masked: int,
    ) -> Told:
        """A model call made with ``call``'s request: its breakpoints (anchors before the
        ``waiting`` edits) and how long each keeps its entry, the prompt cache told of it, the
        reply the client will hold, and the call noted for ``hdcontext stats`` (with the
        session's ``model`` and the outputs ``masked`` so far)."""
        cache = self.state
        mark = cache.reply
        placed, free_waiting = anchored(cache.prompt, call, view, waiting)
        prompt, bill = cache.prompt.called(
            call,
            placed,
            off_total=view.total_tokens + cache.density_saved,
            off_long=values.cache_ttl == "1h",
        )
        # The same history keeps its revision (a call that changed nothing names the one
        # the client holds); the cache's bookkeeping of the call goes on all the same.
        stable = min(call.unchanged, mark.raw_len)  # of the history the client holds
        same = mark.revision > 0 and stable == call.length == mark.raw_len
        revision = mark.revision if same else mark.revision + 1
        curated = view.curated()
        self.state = replace(
            cache,
            prompt=prompt,
            reply=ReplyMark(revision, call.length, len(curated)),
            free_pending=free_waiting,
            expected=expected_of(bill),
        )
        self._sent = _Sent(self.state, cache, call.unchanged)
        view.mark_stable()
        self._told_waiting = "unknown"  # a new call: what ended the last one is past
        self.log.made(bill, refresh=False, model=model, masked=masked)
        at = refresh_at(values, call.pricing, prompt, view, free_waiting)
        return Told(placed, bill, stable, revision, mark.revision, curated, at)

    def refresh(
        self, view: History, whole: Call, values: Settings, model: str | None, masked: int
    ) -> RefreshCall | None:
        """A refresh call at ``whole.at`` (``whole``: the working view as a model call would
        send it), when one pays: the prompt cache told of it and the call noted as ``told``
        notes a model call's. ``RefreshTooEarly`` when it comes before the last call."""
        before = self.state
        after_last_call(before.prompt.ledger, whole.at)
        waiting = waiting_on(view, before.reply.raw_len, self._told_waiting)
        made = refresh_call(before.prompt, whole, view, values, waiting, before.free_pending)
        if made is None:
            return None
        end = made.call.length
        mark = before.reply
        if end > max(mark.raw_len, mark.held_len):
            mark = replace(mark, held_len=end)
        self.state = replace(
            before, prompt=made.prompt, reply=mark, expected=expected_of(made.bill)
        )
        self._sent = _Sent(self.state, before, None)
        self.log.made(made.bill, refresh=True, model=model, masked=masked)
        return made

    def note_waiting(self, waiting: Waiting) -> None:
        """The last call's answer, as a client that does not append it saw it end: calling
        a tool (``tool``) or answering (``person``). A refresh decision uses it."""
        self._told_waiting = waiting

    # -- what the plan left waiting ------------------------------------------------------

    def planned(self, saved: int, pending_tokens: int, pending_edits: int) -> None:
        """Density took out ``saved`` tokens more since the history was last rewritten
        whole, and left these waiting."""
        cache = self.state
        self.state = replace(
            cache,
            density_saved=cache.density_saved + saved,
            pending_tokens=pending_tokens,
            pending_edits=pending_edits,
        )

    def cleared(self) -> None:
        """The history was cleared: density saved nothing of it, and nothing waits."""
        self.state = replace(self.state, density_saved=0, pending_tokens=0, pending_edits=0)

    # -- what came after it --------------------------------------------------------------

    def billed(
        self,
        input_tokens: int,
        read: int,
        write: int,
        output: int,
        *,
        write_1h: int | None,
        model: str | None,
        at: int | None,
    ) -> UsageCheck | None:
        """``history/usage``: add a call's bill to the totals, and hold it against what the
        daemon expected of that call (``UsageCheck``, when it expected anything). A call that
        neither read nor wrote the cache says the provider is not caching this conversation:
        the schedule then treats the cache as cold (nothing cached can be lost).

        The bill is noted for ``hdcontext stats`` too, as the usage of the call just made
        when that call waits for it; ``write_1h`` is the part of the cache writes made for an
        hour, when the client knows it (the proxy does)."""
        cache = self.state
        self.log.note(
            UsageReported(
                at=self._clock() if at is None else at,
                model=model,
                attached=cache.expected is not None,
                billed=BilledUsage(input_tokens, read, write, write_1h, output),
            )
        )
        prompt, check = billed(cache.prompt, cache.expected, input_tokens, read, write)
        predicted, missed = cache.predicted, cache.mispredicted
        if check is not None:
            predicted = predicted.plus(
                check.expected_tokens, check.expected_read, check.expected_write
            )
            missed += check.off
        self.state = replace(
            cache,
            usage=cache.usage.plus(input_tokens, read, write, output),
            prompt=prompt,
            expected=None,
            predicted=predicted,
            mispredicted=missed,
        )
        self._sent = None  # it reached the model: nothing to take back
        return check

    def refused(self, view: History, at: int | None) -> bool:
        """The last call never reached the model: the provider answered it with an error
        (an overload, a rate limit, a refusal), or could not be reached. Nothing of it was
        billed and nothing cached, so what the daemon noted of it is taken back: the prompt
        cache is as it was before it (what the provider holds, the ledger, the rhythm), no
        usage is expected, its ``calls`` row goes (``CallRefused``), and the head of the view
        the provider last saw is where it was. The history stays as the call left it: the
        client holds it so and sends it again (an agent retries), and that retry is weighed
        against what the provider really holds, not against a call it never saw.

        False, and nothing changes, when there is nothing to take back: its usage came, or
        another call was made since."""
        sent = self._sent
        if sent is None or self.state is not sent.after:
            return False
        self._sent = None
        cache = self.state
        # A model call's reply is what the client holds now (it sends it again); a refresh
        # call's request was the provider's alone.
        reply = cache.reply if sent.unchanged is not None else sent.before.reply
        self.state = replace(cache, prompt=sent.before.prompt, reply=reply, expected=None)
        if sent.unchanged is not None:
            view.mark_changed(sent.unchanged)
        self.log.note(CallRefused(self._clock() if at is None else at))
        return True

    def retrieved(self, at: int | None) -> None:
        """Something density took out was fetched back (``history/retrieve``): how often
        that happens says whether masking takes what the model still needs."""
        self.log.note(Retrieved(self._clock() if at is None else at))
