"""One chat: the orchestration of ``history/compact`` (REQ-HD-002, REQ-HD-013).

The session is the only way a history changes. It resolves settings, asks what the density
rules propose (``cache/proposals.py``), plans which edits apply now (``cache/schedule.py``,
``cache/holds.py``), applies them, has its strategy compress near the limit
(``compression/compressor.py``), and tells the prompt cache of each call (``calls.py``); the
reply is put together in ``reply.py``. It holds no lock and no rollback of its own: the one
caller that must keep a failed request from changing anything (the daemon's registry)
serializes requests per session and wraps each in ``snapshot``/``restore``. Storage, JSON-RPC
and the disk watcher live outside and talk to it through these methods; nothing here does I/O
(the summarizer and the transcript export are functions the edge hands in).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from ..cache.billed import UsageCheck
from ..cache.holds import holding
from ..cache.pricing import Pricing, pricing_for
from ..cache.prompt_cache import Call
from ..cache.proposals import Proposals
from ..cache.rhythm import Waiting
from ..cache.schedule import Candidate, Plan, everything
from ..compression.compressor import Compressor, SessionSummarizer, TranscriptExporter
from ..compression.factory import get_strategy
from ..compression.prompts import COMPRESSION_PROMPT
from ..compression.types import CompressionStrategy, can_optimize
from ..content import IContent, ToolCallBlock, ToolResponseBlock, stamped
from ..density.applied import applied_result
from ..density.edits import Edit
from ..density.types import DensityConfig
from ..history.history import History, HistorySnapshot, Prepared
from ..history.retrieve import find_call
from ..history.sync import Lineage
from ..prices import binds_thinking
from ..settings import Resolved, resolve, validate
from ..stats.calls import CallEvent
from ..tools.todos import Todo, TodoList
from .calls import Calls
from .replies import (
    CompressionReport,
    DensityCounts,
    DensityReport,
    PricedAs,
    SettingsReply,
    Status,
)
from .reply import CompactResult, Outcome, Step, compacted, refreshed
from .state import SessionState


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class SyncOutcome:
    appended: int
    forked_at: int | None


@dataclass(frozen=True)
class SessionSnapshot:
    """A session at one moment (``Session.snapshot``)."""

    history: HistorySnapshot
    state: SessionState
    calls: int = 0
    """How many call events were waiting to be saved (``take_calls``)."""


class Session:
    def __init__(
        self,
        session_id: str,
        *,
        settings: Callable[[], Mapping[str, object]] = dict,
        workspace_root: Callable[[], str] = str,
        summarizer: SessionSummarizer | None = None,
        prompt: str = COMPRESSION_PROMPT,
        export_transcript: TranscriptExporter | None = None,
        clock: Callable[[], int] = now_ms,
        epoch: str = "",
        retrieve_tool: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.model: str | None = None
        """The model the chat talks to (``history/open``): it picks the cache prices."""
        self.epoch = epoch
        """Tells this session's revisions from those of an earlier one with the same id."""
        self.history = History()
        self.overrides: dict[str, object] = {}
        self.version = 0
        self.saved_tokens = 0
        self.masked_outputs = 0
        """Tool outputs masking made pointers so far, and the tokens that took out."""
        self.masked_tokens = 0
        self.dirty = False
        self._settings = settings
        self._compressor = Compressor(summarizer, prompt, export_transcript)
        self._clock = clock
        self._proposals = Proposals(workspace_root, retrieve_tool)
        self._todos = TodoList()
        self._calls = Calls(clock)  # what the calls left, the cache state among it
        self._lineage = Lineage()  # the conversation as history/sync last saw it

    # -- settings ------------------------------------------------------------------------

    def resolved(self) -> Resolved:
        return resolve(self.overrides, self._settings())

    def set_override(self, key: str, value: object) -> SettingsReply:
        """Validate and set (``None`` removes) one override; SettingError changes nothing."""
        stored = validate(key, value)
        if stored is None:
            self.overrides.pop(key, None)
        else:
            self.overrides[key] = stored
        return self.settings_reply()

    def settings_reply(self) -> SettingsReply:
        return SettingsReply.model_validate(self.resolved().to_wire())

    # -- status --------------------------------------------------------------------------

    def status(self, resolved: Resolved | None = None) -> Status:
        r = resolved or self.resolved()
        cache = self._calls.state
        return Status(
            session_id=self.session_id,
            version=self.version,
            entry_count=self.history.curated_count,
            total_tokens=self.history.total_tokens,
            context_limit=r.values.context_limit,
            threshold=r.threshold,
            strategy=r.values.strategy,
            saved_tokens=self.saved_tokens,
            pending_tokens=cache.pending_tokens,
            usage=cache.usage,
            masked_outputs=self.masked_outputs,
            masked_tokens=self.masked_tokens,
            predicted=cache.predicted,
            mispredicted=cache.mispredicted,
            priced_as=self._priced_as(r),
        )

    def _priced_as(self, r: Resolved) -> PricedAs:
        pricing = pricing_for(r.values, self.model)
        return PricedAs(model=pricing.row, match=pricing.match)

    # -- content -------------------------------------------------------------------------

    def prepare(self, entries: Sequence[IContent]) -> Prepared:
        """Stamp, count and encode entries for ``append``. Changes nothing, so the slow part
        of an append (counting) can run off the caller's loop."""
        return self.history.prepare(stamped(entries, self._clock()))

    def append(self, entries: Sequence[IContent] | Prepared) -> None:
        """Append (all or nothing)."""
        ready = entries if isinstance(entries, Prepared) else self.prepare(entries)
        if not ready.blobs:
            return
        self.history.append(ready)
        self.version += 1
        self.dirty = True  # REQ-HD-002.6: new content, and only new content, sets it

    # -- history/sync ---------------------------------------------------------------------

    def sync_point(self, digests: Sequence[bytes]) -> int:
        """How many of a resent conversation's entries (by ``sync.entry_digest``) the session
        holds already, in order: the rest is new, or a fork from there."""
        return self._lineage.held(digests, self.history.transcript)

    def sync(self, held: int, digests: Sequence[bytes], new: Prepared) -> SyncOutcome:
        """Follow a resent conversation whose first ``held`` entries the session has
        (``sync_point``) and whose other entries are ``new``: fork the working view where the
        two part, append the new ones. The transcript keeps everything."""
        history = self.history
        length = len(history.transcript_json)
        lineage = self._lineage
        forked = held < lineage.size(length)
        if forked:
            cut = history.cut_point(lineage.seq_at(held, length))
            if cut is None:
                history.reinstate(lineage.current(length)[:held])
            else:
                history.truncate(cut)
        count = len(new.blobs)
        history.append(new)
        self._lineage.follow(held, length, count, digests, length)
        if forked or count:
            self.version += 1
            self.dirty = True
        return SyncOutcome(appended=count, forked_at=held if forked else None)

    # -- what the provider billed ---------------------------------------------------------

    def record_usage(
        self,
        input_tokens: int,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        output_tokens: int | None = None,
        *,
        at: int | None = None,
        write_1h_tokens: int | None = None,
    ) -> UsageCheck | None:
        """``history/usage``: a call's bill (``Calls.billed``), noted for ``hdcontext stats``
        too (``take_calls``)."""
        check = self._calls.billed(
            input_tokens,
            cache_read_tokens or 0,
            cache_write_tokens or 0,
            output_tokens or 0,
            write_1h=write_1h_tokens,
            model=self.model,
            at=at,
        )
        self.version += 1
        return check

    def pack_left(self) -> int:
        """Pack the transcript's entries the working view let go of since the last time
        (``History.pack_left``): the daemon does it once the session is idle after a
        compaction, off the answer's path: the bytes it saved. Changes nothing any reader
        sees; not a change to save (the store holds each entry's JSON)."""
        return self.history.pack_left()

    def call_refused(self, at: int | None = None) -> bool:
        """The last call never reached the model: what the daemon noted of it is taken back
        (``Calls.refused``). False, and nothing changes, when there is nothing to take back."""
        if not self._calls.refused(self.history, at):
            return False
        self.version += 1
        return True

    # -- what density took away -----------------------------------------------------------

    def retrieve(self, call_id: str) -> tuple[ToolCallBlock | None, ToolResponseBlock]:
        """A tool call and its latest response as they were appended (KeyError if no
        response has that id). Changes nothing: ``note_retrieved`` counts it."""
        return find_call(self.history.transcript_json, call_id)

    def note_retrieved(self, at: int | None = None) -> None:
        """Something density took out was fetched back (``history/retrieve``): how often
        that happens says whether masking takes what the model still needs."""
        self._calls.retrieved(at)

    # -- what the edge keeps of each call -------------------------------------------------

    def take_calls(self) -> list[CallEvent]:
        """The call events noted since the last time (``stats/calls.py``), for the edge to save
        with the session; they are forgotten here. A rolled-back change takes its own back
        (``restore``)."""
        return self._calls.log.take()

    def note_write(self, path: str, when: int | None = None) -> None:
        """A file written outside the history (disk, didSave). ``path`` is already resolved."""
        when = self._clock() if when is None else when
        if self._proposals.note_write(path, when):
            # A write is new information about the history's reads, so the next compact
            # must look again even when no entry was added.
            self.dirty = True

    def read_times(self) -> dict[str, int]:
        """Each file the working history read, with the earliest time a read took its content
        (for the daemon to compare with modification times before a compaction)."""
        return self._proposals.read_times(self.history, self.resolved().values)

    def warm(self, digests: Sequence[bytes] = ()) -> None:
        """Make now what the next compaction of a session just loaded would make first, so
        that a request does not wait for it (the proxy does this at start for the
        conversations it served last): the density passes' indexes and proposals, what each
        proposal saves, and, with ``digests`` (the conversation as its client last sent it),
        which of its entries the session holds. These are caches that a compaction fills
        anyway: nothing the session decides or answers changes."""
        r = self.resolved()
        edits = self._proposals.edits(self.history, r.values)
        if r.values.schedule != "every-turn":
            self._proposals.candidates(edits, self.history)
        if digests:
            self.sync_point(digests)

    def set_todos(self, todos: Sequence[Todo]) -> None:
        self._todos = TodoList(tuple(todos), len(self.history.transcript))
        self.version += 1

    def active_todos(self) -> list[Todo]:
        """REQ-HD-011.2: the newer of the client's list and the latest todo_write call."""
        return self._todos.active(self.history.transcript)

    def clear(self) -> None:
        self.history.clear()
        self.version += 1
        self.dirty = False
        self._calls.cleared()

    # -- compaction ----------------------------------------------------------------------

    def density_config(self, r: Resolved) -> DensityConfig:
        return self._proposals.config(r.values)

    def _optimize(
        self, r: Resolved, schedule: Callable[[list[Edit]], Plan]
    ) -> tuple[DensityReport, Plan]:
        """The continuous strategy's ``optimize`` (high-density's: the density engine, which
        the session keeps across turns instead of folding it cold every time), with the edits
        ``schedule`` picks applied; the others are left pending. Also: the plan."""
        history = self.history
        before = history.total_tokens
        chosen = schedule(self._proposals.edits(history, r.values))
        edits = [c.edit for c in chosen.apply]
        result, masked, masked_tokens = applied_result(edits, history, binds_thinking(self.model))
        if not result.is_empty:  # REQ-HD-002.4 / 002.5
            history.apply_density_result(result)
            self.version += 1
        after = history.total_tokens
        self.saved_tokens += before - after
        self.masked_outputs += masked
        self.masked_tokens += masked_tokens
        self._calls.planned(before - after, chosen.waiting_tokens, len(chosen.wait))
        report = DensityReport(
            removals=len(result.removals),
            replacements=len(result.replacements),
            metadata=DensityCounts.of(result.metadata),
            tokens_before=before,
            tokens_after=after,
        )
        return report, chosen

    def _call(self, r: Resolved, pricing: Pricing, at: int) -> Call:
        """This model call's request as the prompt cache sees it, the history as it is now."""
        return self._calls.request(self.history, pricing, r.values, at)

    def _scheduler(self, r: Resolved, call: Call, all_now: bool) -> Callable[[list[Edit]], Plan]:
        """How this compaction picks edits: all of them (the seeds' schedule), or as the
        prompt cache says (all of them too when a rewrite is coming anyway)."""

        def schedule(edits: list[Edit]) -> Plan:
            if r.values.schedule == "every-turn":
                listed = [Candidate(e, 0, 0) for e in edits]
            else:
                # An edit that takes nothing out (a pointer as long as what it replaces) would
                # only break the cache, unless it tells the model something.
                listed = [
                    c
                    for c in self._proposals.candidates(edits, self.history)
                    if c.saving > 0 or c.edit.informs
                ]
            return holding(listed, self.history, binds_thinking(self.model), choose)

        def choose(ready: Sequence[Candidate]) -> Plan:
            """Of the candidates ``holds.py`` does not hold."""
            if r.values.schedule == "every-turn":
                return everything(ready)
            return self._calls.state.prompt.choose(call, ready, all_now)

        return schedule

    async def _compress(self, strategy: CompressionStrategy, r: Resolved) -> CompressionReport:
        before = self.history.total_tokens
        bound = binds_thinking(self.model)
        changed, transcript_path = await self._compressor.compress(
            strategy, r, self.history, bound, self.active_todos
        )
        if changed:
            self.version += 1
        after = self.history.total_tokens
        self.saved_tokens += before - after
        return CompressionReport(
            strategy=strategy.name,
            tokens_before=before,
            tokens_after=after,
            transcript_path=transcript_path,
        )

    async def compact(self, pending_tokens: int = 0, at: int | None = None) -> CompactResult:
        """``history/compact``: optimize, then compress near the limit (REQ-HD-002), for a
        model call made at ``at`` (ms; default now).

        Density edits apply as ``compression.density.schedule`` says: all at once
        (``every-turn``), or when they pay under the provider's prompt cache
        (``cache-aware``: ``cache/schedule.py``). A failure leaves the session part-way:
        callers that must answer "all or nothing" take a ``snapshot`` first and ``restore``
        it (the daemon's registry does).
        """
        at = self._clock() if at is None else at
        pending = max(0, pending_tokens)
        r = self.resolved()
        limit = r.values.context_limit
        strategy = get_strategy(r.values.strategy)
        pricing = pricing_for(r.values, self.model)
        history = self.history
        call = self._call(r, pricing, at)
        warm = self._calls.state.prompt.warm(call)
        steps: list[Step] = []
        density: DensityReport | None = None
        compression: CompressionReport | None = None
        optimizes = strategy.trigger.mode == "continuous" and can_optimize(strategy)
        edits_waiting = self._calls.state.pending_edits > 0
        applied: list[Candidate] = []
        waiting: tuple[Candidate, ...] = ()

        if optimizes and (self.dirty or edits_waiting):  # REQ-HD-002.1-002.3
            # Compression would rewrite the history, and a cold cache holds nothing: in
            # either case every edit applies now (and may spare the compression).
            due = history.total_tokens + pending >= r.threshold * limit
            density, chosen = self._optimize(r, self._scheduler(r, call, due))
            applied += chosen.apply
            waiting = chosen.wait
            steps.append(Step("optimize", density.tokens_before, density.tokens_after))
        self.dirty = False  # REQ-HD-002.7

        if history.total_tokens + pending >= r.threshold * limit:
            compression = await self._compress(strategy, r)
            steps.append(Step("compress", compression.tokens_before, compression.tokens_after))

        if history.total_tokens + pending > limit:  # REQ-HD-002.8
            if optimizes:
                extra, chosen = self._optimize(r, self._scheduler(r, call, True))
                density = _merge_density(density, extra)
                applied += chosen.apply
                waiting = chosen.wait  # only what thinking.py holds: the rest applied
                steps.append(Step("emergency-optimize", extra.tokens_before, extra.tokens_after))
            again = await self._compress(strategy, r)
            compression = _merge_compression(compression, again)
            steps.append(Step("emergency-compress", again.tokens_before, again.tokens_after))

        over = history.total_tokens + pending > limit
        outcome = Outcome(len(applied), waiting, density, compression, over, tuple(steps))
        return self._reply(at, r, pricing, warm, outcome)

    def passed(self, at: int | None = None) -> CompactResult:
        """The call went to the provider with the history as it is, nothing applied (the
        proxy forwarded a conversation it had not seen as it came, and took it in
        meanwhile): the prompt cache is told of the call as of a compaction's reply, so the
        next compaction, which finds every edit still to propose (``dirty`` stays), weighs
        them against what the provider now holds instead of a cold cache."""
        at = self._clock() if at is None else at
        r = self.resolved()
        pricing = pricing_for(r.values, self.model)
        warm = self._calls.state.prompt.warm(self._call(r, pricing, at))
        over = self.history.total_tokens > r.values.context_limit
        return self._reply(at, r, pricing, warm, Outcome(0, (), None, None, over, ()))

    def _reply(
        self, at: int, r: Resolved, pricing: Pricing, warm: bool, outcome: Outcome
    ) -> CompactResult:
        """The compaction's answer: the history, where its breakpoints go (anchors before
        the edits still waiting) and how long each keeps its entry, and the prompt cache told
        of the call."""
        before = self._calls.state
        call = self._call(r, pricing, at)
        told = self._calls.told(
            self.history, call, r.values, outcome.waiting, self.model, self.masked_outputs
        )
        return compacted(
            self.history,
            told,
            outcome,
            before,
            status=self.status(r),
            pricing=pricing,
            warm=warm,
            epoch=self.epoch,
        )

    # -- a refresh call ------------------------------------------------------------------

    def refresh(self, at: int | None = None) -> CompactResult:
        """``history/refresh``: the request of a refresh call at ``at`` (ms; default now):
        the working view up to the latest entry a request may end with (no tool call without
        its result), with breakpoints on what the provider holds so that reading keeps it. No
        density edit, no compression; the call is billed like any other.

        Whether it pays is decided now, with what the client has told since the last call:
        an answer of the model's appended says what the session waits on (``rhythm.Waiting``).
        When it does not pay, the history is empty and ``refreshAt`` null: nothing to send.
        ``RefreshTooEarly`` when ``at`` comes before the session's last call."""
        at = self._clock() if at is None else at
        r = self.resolved()
        pricing = pricing_for(r.values, self.model)
        whole = self._call(r, pricing, at)
        made = self._calls.refresh(self.history, whole, r.values, self.model, self.masked_outputs)
        return refreshed(
            self.history,
            made,
            self._calls.state,
            status=self.status(r),
            values=r.values,
            pricing=pricing,
            epoch=self.epoch,
        )

    def note_waiting(self, waiting: Waiting) -> None:
        """The last call's answer, as a client that does not append it saw it end (``tool``
        or ``person``): a refresh decision uses it (``Calls.note_waiting``)."""
        self._calls.note_waiting(waiting)

    # -- all or nothing ------------------------------------------------------------------

    def snapshot(self) -> SessionSnapshot:
        """The session as it is now, for ``restore`` (cheap: the history's lists are taken
        by reference and length)."""
        return SessionSnapshot(self.history.snapshot(), self.export_state(), len(self._calls.log))

    def restore(self, snap: SessionSnapshot) -> None:
        """Put the session back as it was at ``snap`` (the one rollback path)."""
        self.history.restore_snapshot(snap.history)
        self.import_state(snap.state)
        self._calls.log.forget_after(snap.calls)
        # Keys and transcript places of entries rolled back will be given again.
        self._proposals.forget()
        self._lineage.forget_after(len(self.history.transcript_json))

    # -- persistence (used only by the daemon's store) -----------------------------------
    # The store saves the history through ``raw_json``/``tokens``/``transcript_json`` and
    # ``History.restore``; these two methods carry the rest of a session's state, so a
    # daemon restarted after SIGKILL resumes exactly where the last acknowledged request
    # left the session. They neither validate nor bump ``version``: they copy state.

    def export_state(self) -> SessionState:
        return SessionState(
            overrides=dict(self.overrides),
            version=self.version,
            saved_tokens=self.saved_tokens,
            masked_outputs=self.masked_outputs,
            masked_tokens=self.masked_tokens,
            dirty=self.dirty,
            todos=self._todos.todos,
            todos_since=self._todos.since,
            writes=dict(self._proposals.writes),
            model=self.model,
            epoch=self.epoch,
            lineage=self._lineage.runs,
            cache=replace(
                self._calls.state,
                reply=replace(self._calls.state.reply, changed_from=self.history.changed_from),
            ),
        )

    def import_state(self, state: SessionState) -> None:
        self.overrides = dict(state.overrides)
        self.version = state.version
        self.saved_tokens = state.saved_tokens
        self.masked_outputs = state.masked_outputs
        self.masked_tokens = state.masked_tokens
        self.dirty = state.dirty
        self._todos = TodoList(tuple(state.todos), state.todos_since)
        self._proposals.writes = dict(state.writes)
        self.model = state.model
        self.epoch = state.epoch
        self._calls.state = state.cache
        self._lineage.runs = state.lineage
        self.history.mark_stable(state.cache.reply.changed_from)


def _merge_density(first: DensityReport | None, second: DensityReport) -> DensityReport:
    if first is None:
        return second
    a, b = first.metadata, second.metadata
    return DensityReport(
        removals=first.removals + second.removals,
        replacements=first.replacements + second.replacements,
        metadata=DensityCounts(
            read_write_pairs_pruned=a.read_write_pairs_pruned + b.read_write_pairs_pruned,
            file_deduplications_pruned=a.file_deduplications_pruned + b.file_deduplications_pruned,
            recency_pruned=a.recency_pruned + b.recency_pruned,
            masked_pruned=a.masked_pruned + b.masked_pruned,
        ),
        tokens_before=first.tokens_before,
        tokens_after=second.tokens_after,
    )


def _merge_compression(
    first: CompressionReport | None, second: CompressionReport
) -> CompressionReport:
    if first is None:
        return second
    return CompressionReport(
        strategy=second.strategy,
        tokens_before=first.tokens_before,
        tokens_after=second.tokens_after,
        transcript_path=second.transcript_path or first.transcript_path,
    )
