"""One chat: the orchestration of ``history/compact`` (REQ-HD-002, REQ-HD-013).

The session is the only place that mutates a history. It resolves settings, builds the
density config, asks the strategy, and applies what comes back. Work on one session is
serialized by its lock; a compaction either completes or leaves the session as it found it.
Storage, JSON-RPC and the disk watcher live outside and talk to it through these methods.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .compression.factory import get_strategy
from .compression.prompts import load_compression_prompt
from .compression.types import (
    CompressionContext,
    CompressionStrategy,
    Summarizer,
    Todo,
    can_optimize,
)
from .content import IContent, Metadata, dump_entries
from .density.engine import DensityEngine
from .density.types import DensityConfig, DensityMetadata, FileWrite
from .history import History
from .settings import Resolved, resolve, validate
from .stored import Blob
from .todos import latest_todo_write


def now_ms() -> int:
    return time.time_ns() // 1_000_000


@dataclass(frozen=True)
class Status:
    """What a status bar shows (PROTOCOL.md "Status")."""

    session_id: str
    version: int
    entry_count: int
    total_tokens: int
    context_limit: int
    threshold: float
    strategy: str
    saved_tokens: int

    @property
    def percent(self) -> float:
        return 100.0 * self.total_tokens / self.context_limit

    def to_wire(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "version": self.version,
            "entryCount": self.entry_count,
            "totalTokens": self.total_tokens,
            "contextLimit": self.context_limit,
            "threshold": self.threshold,
            "percent": self.percent,
            "strategy": self.strategy,
            "savedTokens": self.saved_tokens,
        }


@dataclass(frozen=True)
class DensityReport:
    removals: int
    replacements: int
    metadata: DensityMetadata
    tokens_before: int
    tokens_after: int

    def to_wire(self) -> dict[str, Any]:
        return {
            "removals": self.removals,
            "replacements": self.replacements,
            "metadata": self.metadata.to_wire(),
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
        }


@dataclass(frozen=True)
class CompressionReport:
    strategy: str
    tokens_before: int
    tokens_after: int
    transcript_path: str | None

    def to_wire(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "tokensBefore": self.tokens_before,
            "tokensAfter": self.tokens_after,
            "transcriptPath": self.transcript_path,
        }


@dataclass(frozen=True)
class Step:
    """One pass of a compaction and the curated tokens around it (for tables and logs)."""

    name: str
    tokens_before: int
    tokens_after: int


@dataclass(frozen=True)
class CompactResult:
    history: Sequence[IContent]
    """The curated view (``stored.Entries``: parsed as read, joined as stored for a reply)."""
    status: Status
    density: DensityReport | None
    compression: CompressionReport | None
    over_limit: bool
    steps: tuple[Step, ...] = field(default=())
    """The passes that ran, in order (``optimize``, ``compress``, ``emergency-optimize``…)."""

    def to_wire(
        self, encode: Callable[[Sequence[IContent]], object] = dump_entries
    ) -> dict[str, Any]:
        """The reply of ``history/compact``; ``encode`` writes the history (dicts by default)."""
        return {
            "history": encode(self.history),
            "status": self.status.to_wire(),
            "density": self.density.to_wire() if self.density else None,
            "compression": self.compression.to_wire() if self.compression else None,
            "overLimit": self.over_limit,
        }


TranscriptExporter = Callable[[Sequence[Blob]], Awaitable[str | None]]
"""Writes the whole transcript (each entry's stored JSON) where the agent can read it; its path."""


class Session:
    def __init__(
        self,
        session_id: str,
        *,
        settings: Callable[[], Mapping[str, object]] = dict,
        workspace_root: Callable[[], str] = str,
        summarizer: Summarizer | None = None,
        prompt_dir: Path | None = None,
        export_transcript: TranscriptExporter | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.session_id = session_id
        self.history = History()
        self.overrides: dict[str, object] = {}
        self.version = 0
        self.saved_tokens = 0
        self.dirty = False
        self.lock = asyncio.Lock()
        self._settings = settings
        self._workspace_root = workspace_root
        self.summarizer = summarizer
        self._prompt_dir = prompt_dir
        self._export_transcript = export_transcript
        self._clock = clock
        self._writes: dict[str, int] = {}
        self._todos: list[Todo] = []
        self._todos_since = 0  # transcript length when the client last set todos
        # What the density rules learnt about the history, kept between turns so that a turn
        # costs what it adds (it catches up through the history's journal).
        self._density = DensityEngine()

    # -- settings ------------------------------------------------------------------------

    def resolved(self) -> Resolved:
        return resolve(self.overrides, self._settings())

    def set_override(self, key: str, value: object) -> Resolved:
        """Validate and set (``None`` removes) one override; SettingError leaves all as it was."""
        stored = validate(key, value)
        if stored is None:
            self.overrides.pop(key, None)
        else:
            self.overrides[key] = stored
        return self.resolved()

    # -- status --------------------------------------------------------------------------

    def status(self, resolved: Resolved | None = None) -> Status:
        r = resolved or self.resolved()
        return Status(
            session_id=self.session_id,
            version=self.version,
            entry_count=self.history.curated_count,
            total_tokens=self.history.total_tokens,
            context_limit=r.context_limit,
            threshold=r.threshold,
            strategy=r.strategy,
            saved_tokens=self.saved_tokens,
        )

    # -- content -------------------------------------------------------------------------

    def stamp(self, entries: Sequence[IContent]) -> list[IContent]:
        """Give every entry a timestamp: it orders tool reads against writes seen on disk."""
        now = self._clock()
        out: list[IContent] = []
        for entry in entries:
            if entry.timestamp is not None:
                out.append(entry)
                continue
            meta = entry.metadata or Metadata()
            out.append(
                entry.model_copy(update={"metadata": meta.model_copy(update={"timestamp": now})})
            )
        return out

    async def append(self, entries: Sequence[IContent]) -> list[IContent]:
        """Append (all or nothing); returns the entries as stored (with timestamps)."""
        stamped = self.stamp(entries)
        if not stamped:
            return stamped
        await self.history.append(stamped)
        self.version += 1
        self.dirty = True  # REQ-HD-002.6: new content, and only new content, sets it
        return stamped

    def note_write(self, path: str, when: int | None = None) -> None:
        """A file written outside the history (disk, didSave). ``path`` is already resolved."""
        when = self._clock() if when is None else when
        if when > self._writes.get(path, -1):
            self._writes[path] = when
            # A write is new information about the history's reads, so the next compact
            # must look again even when no entry was added.
            self.dirty = True

    def read_times(self) -> dict[str, int]:
        """Each file the working history read, with the earliest time a read took its content
        (for the daemon to compare with modification times before a compaction)."""
        return self._density.read_times(self.history, self.density_config(self.resolved()))

    @property
    def writes(self) -> dict[str, int]:
        return dict(self._writes)

    def set_todos(self, todos: Sequence[Todo]) -> None:
        self._todos = list(todos)
        self._todos_since = len(self.history.transcript)
        self.version += 1

    def active_todos(self) -> list[Todo]:
        """REQ-HD-011.2: the newer of the client's list and the latest todo_write call."""
        todos = self._todos
        latest = latest_todo_write(self.history.transcript)
        if latest is not None and latest[0] >= self._todos_since:
            todos = latest[1]
        return [t for t in todos if t.active]

    async def clear(self) -> None:
        await self.history.clear()
        self.version += 1
        self.dirty = False

    # -- compaction ----------------------------------------------------------------------

    def density_config(self, r: Resolved) -> DensityConfig:
        writes = (
            tuple(FileWrite(p, t) for p, t in self._writes.items())
            if r.flag("watch.enabled")
            else ()
        )
        return DensityConfig(
            read_write_pruning=r.flag("compression.density.readWritePruning"),
            file_dedupe=r.flag("compression.density.fileDedupe"),
            recency_pruning=r.flag("compression.density.recencyPruning"),
            recency_retention=r.number("compression.density.recencyRetention"),
            workspace_root=self._workspace_root(),
            read_tools=r.names("tools.read"),
            write_tools=r.names("tools.write"),
            shell_tools=r.names("tools.shell"),
            external_writes=writes,
        )

    async def _optimize(self, r: Resolved) -> DensityReport:
        """The continuous strategy's ``optimize`` (high-density's: the density engine, which
        the session keeps across turns instead of folding it cold every time)."""
        before = self.history.total_tokens
        config = self.density_config(r)
        result = self._density.optimize(self.history, config)
        if not result.is_empty:  # REQ-HD-002.4 / 002.5
            await self.history.apply_density_result(result)
            self.version += 1
        after = self.history.total_tokens
        self.saved_tokens += before - after
        return DensityReport(
            removals=len(result.removals),
            replacements=len(result.replacements),
            metadata=result.metadata,
            tokens_before=before,
            tokens_after=after,
        )

    async def _compress(self, strategy: CompressionStrategy, r: Resolved) -> CompressionReport:
        before = self.history.total_tokens
        llm = strategy.requires_llm
        transcript_path: str | None = None
        if llm and self._export_transcript is not None:
            transcript_path = await self._export_transcript(self.history.transcript_json)
        current = list(self.history.raw)  # parsed once, for the strategy to read
        context = CompressionContext(
            history=current,
            tokens=self.history.tokens,
            context_limit=r.context_limit,
            threshold=r.threshold,
            preserve_threshold=r.preserve_threshold,
            top_preserve_threshold=r.top_preserve_threshold,
            prompt=load_compression_prompt(self._prompt_dir) if llm else "",
            active_todos=self.active_todos() if llm else (),
            transcript_path=transcript_path,
            summarizer=self.summarizer,
        )
        result = await strategy.compress(context)
        if list(result.new_history) != current:
            await self.history.replace_all(result.new_history, parsed=current)
            self.version += 1
        after = self.history.total_tokens
        self.saved_tokens += before - after
        return CompressionReport(strategy.name, before, after, transcript_path)

    async def compact(self, pending_tokens: int = 0) -> CompactResult:
        """``history/compact``: the whole pass, applied completely or not at all."""
        async with self.lock:
            snapshot = self._snapshot()
            try:
                return await self._compact(max(0, pending_tokens))
            except BaseException:
                await self._restore(snapshot)
                raise

    async def _compact(self, pending: int) -> CompactResult:
        r = self.resolved()
        strategy = get_strategy(r.strategy)
        steps: list[Step] = []
        density: DensityReport | None = None
        compression: CompressionReport | None = None
        optimizes = strategy.trigger.mode == "continuous" and can_optimize(strategy)

        if optimizes and self.dirty:  # REQ-HD-002.1-002.3
            density = await self._optimize(r)
            steps.append(Step("optimize", density.tokens_before, density.tokens_after))
        self.dirty = False  # REQ-HD-002.7

        if self.history.total_tokens + pending >= r.threshold * r.context_limit:
            compression = await self._compress(strategy, r)
            steps.append(Step("compress", compression.tokens_before, compression.tokens_after))

        if self.history.total_tokens + pending > r.context_limit:  # REQ-HD-002.8
            if optimizes:
                extra = await self._optimize(r)
                density = _merge_density(density, extra)
                steps.append(Step("emergency-optimize", extra.tokens_before, extra.tokens_after))
            again = await self._compress(strategy, r)
            compression = _merge_compression(compression, again)
            steps.append(Step("emergency-compress", again.tokens_before, again.tokens_after))

        over = self.history.total_tokens + pending > r.context_limit
        return CompactResult(
            history=self.history.curated(),
            status=self.status(r),
            density=density,
            compression=compression,
            over_limit=over,
            steps=tuple(steps),
        )

    def _snapshot(self) -> tuple[Any, ...]:
        return (self.history.snapshot(), self.version, self.saved_tokens, self.dirty)

    async def _restore(self, snap: tuple[Any, ...]) -> None:
        history, self.version, self.saved_tokens, self.dirty = snap
        self.history.restore_snapshot(history)

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
            dirty=self.dirty,
            todos=tuple(self._todos),
            todos_since=self._todos_since,
            writes=dict(self._writes),
        )

    def import_state(self, state: SessionState) -> None:
        self.overrides = dict(state.overrides)
        self.version = state.version
        self.saved_tokens = state.saved_tokens
        self.dirty = state.dirty
        self._todos = list(state.todos)
        self._todos_since = state.todos_since
        self._writes = dict(state.writes)


@dataclass(frozen=True)
class SessionState:
    """A session's state besides its history, as the daemon's store persists it."""

    overrides: dict[str, object]
    version: int
    saved_tokens: int
    dirty: bool
    todos: tuple[Todo, ...]
    todos_since: int
    writes: dict[str, int]


def _merge_density(first: DensityReport | None, second: DensityReport) -> DensityReport:
    if first is None:
        return second
    a, b = first.metadata, second.metadata
    return DensityReport(
        removals=first.removals + second.removals,
        replacements=first.replacements + second.replacements,
        metadata=a + b,
        tokens_before=first.tokens_before,
        tokens_after=second.tokens_after,
    )


def _merge_compression(
    first: CompressionReport | None, second: CompressionReport
) -> CompressionReport:
    if first is None:
        return second
    return CompressionReport(
        second.strategy,
        first.tokens_before,
        second.tokens_after,
        second.transcript_path or first.transcript_path,
    )
