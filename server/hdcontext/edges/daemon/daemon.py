"""What the daemon does for each request of PROTOCOL.md, once params have been parsed.

The flow of every request: validate at the edge (wire.py), take the session's lock, load it if
need be, change it through ``Registry.commit`` (saved before the reply), send the
``history/tokens`` Status to the client after any change, and answer. Errors become the codes
PROTOCOL.md lists; anything else is a bug, answered -32603 with the exception's type only (its
text could quote the conversation) and logged without the message for the same reason.

This module knows the protocol's meaning but not pygls: it talks to the client through the
small ``Client`` interface that server.py implements. Where a group of requests has a module
of its own (a resent conversation taken in, ``syncs.py``; a call's usage, ``usage.py``; the
savings view, ``savings.py``; packing after a compaction, ``packing.py``), the methods here
keep their names and hand the work to it.
"""

from __future__ import annotations

import asyncio
import logging
import traceback
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from ...core.cache.refresh_call import RefreshTooEarly
from ...core.cache.rhythm import Waiting
from ...core.compression.compressor import SessionSummarizer
from ...core.compression.types import CompressionError, SummarizerError
from ...core.content import Block, IContent, entries_json
from ...core.history.stored import Entries
from ...core.session.replies import Status, SyncReply
from ...core.session.reply import CompactResult
from ...core.session.session import Session, SyncOutcome
from ...core.settings import FIELDS, SettingError, resolve
from ..storage.location import Location, as_location
from ..storage.store import make_store
from . import memory
from .conversation import conversation as resent_conversation
from .decided import decided
from .ide_settings import IdeSettings
from .json_text import JsonText
from .packing import Packer
from .prompt_file import load_compression_prompt
from .retention import Pruner, Retention
from .savings import savings
from .sessions import Registry, UnknownSession
from .syncs import Syncs, open_session
from .usage import UsageReports
from .watcher import DiskWatcher
from .wire import (
    AppendParams,
    CompactParams,
    GetParams,
    ListParams,
    OpenParams,
    RefreshParams,
    RetrieveParams,
    SessionParams,
    SetOverrideParams,
    SyncParams,
    TodosParams,
    WireError,
    internal_error,
    invalid_params,
    parse_entries_param,
    parse_params,
    parse_todos_param,
    summarizer_failed,
    unknown_call,
    unknown_session,
)

log = logging.getLogger(__name__)

TOKENS_NOTIFICATION = "history/tokens"
SETTINGS_WAIT_S = 10.0
"""How long a request waits for a settings pull in flight before using what it has."""

R = TypeVar("R")


def history_json(entries: Sequence[IContent]) -> JsonText:
    """A history in a reply, not walked by pygls (json_text.py): stored entries joined as
    they are (``stored.Entries``), others written once by pydantic."""
    if isinstance(entries, Entries):
        return JsonText(entries.json_parts())
    return JsonText(entries_json(entries))


class Client(Protocol):
    """The daemon's way to the editor (server.py implements it over pygls)."""

    def notify(self, method: str, params: Any) -> None: ...

    def warn(self, message: str) -> None: ...

    def summarizer(self, session_id: str) -> SessionSummarizer:
        """The summarizer a session's LLM strategies call (picks the provider per call)."""
        ...


class Daemon:
    """``storage``: where the sessions are kept, a storage folder (SQLite), a ``postgresql://``
    URL (a database other processes may share: each session is then locked in it, and loaded
    again when another process changed it), or a ``Location``. ``start`` opens it."""

    def __init__(
        self,
        client: Client,
        storage: Location | Path | str,
        settings: IdeSettings,
        retrieve_tool: str | None = None,
        retention: Retention | None = None,
        *,
        durable: bool = True,
        notifies: bool = True,
    ) -> None:
        self.client = client
        self.notifies = notifies
        """Whether the client hears of every session's tokens (``hdcontext/tokens``): not
        the proxy's, which has no editor (each status made for it cost 0.3 ms a request)."""
        self.retrieve_tool = retrieve_tool
        self.location = as_location(storage)
        """Where the sessions are kept: a storage folder, or a database's URL."""
        self.storage_dir = self.location.folder
        """The storage folder (``None`` with a database): the summary prompt's file in it."""
        self.settings = settings
        self.store = make_store(self.location, durable=durable)
        self.roots: list[str] = []
        self.registry = Registry(self.store, self._make_session, settings.current)
        self.watcher = DiskWatcher(self.registry.note_disk_write, on_error=client.warn)
        self._settings_pull: asyncio.Future[None] | None = None
        self._prompt = load_compression_prompt(self.storage_dir)
        self._large: set[str] = set()  # sessions whose next compaction follows a large append
        self._reports = UsageReports(self.registry, self._notify)  # history/usage, noted or saved
        self._packer = Packer(self.registry)  # what compactions let go of, packed when idle
        self._syncs = Syncs(self.registry, self._synced, self.update_watcher)
        self._without_retrieve: set[str] = set()
        self.retention = retention
        """How long idle sessions are kept (``None``: the daemon deletes none by itself)."""
        self._pruner = Pruner(retention, self.prune) if retention is not None else None
        self.held_elsewhere: Callable[[str], bool] = lambda session_id: False
        """Whether another connection of this process holds a session (claims.py): pruning
        leaves it to that connection's daemon, which has it loaded."""

    async def start(self) -> None:
        """Open the store; then prune idle sessions, now and daily (in the background)."""
        await self.store.open()
        if self._pruner is not None:
            self._pruner.start()

    async def prune(self, idle_before: int) -> int:
        """Delete the sessions idle since before ``idle_before`` (ms), each under its lock and
        only if still idle then (a request may have come in meanwhile); how many went."""
        deleted = 0
        for session_id in await self.store.idle(idle_before):
            if self.held_elsewhere(session_id):
                continue
            async with self.registry.lock(session_id):
                if await self.registry.delete_idle(session_id, idle_before):
                    deleted += 1
        if deleted:
            await self.update_watcher()
        await self.store.forget_passed(idle_before)  # counts of requests, no session's
        await self.store.forget_owners(idle_before)  # a gateway's owners with no session left
        return deleted

    def _make_session(self, session_id: str) -> Session:
        return Session(
            session_id,
            settings=self.settings.current,
            workspace_root=self.workspace_root,
            summarizer=self.client.summarizer(session_id),
            prompt=self._prompt,
            export_transcript=lambda entries: self.store.export_transcript(session_id, entries),
            epoch=uuid.uuid4().hex[:8],
            retrieve_tool=None if session_id in self._without_retrieve else self.retrieve_tool,
        )

    def serve_without_retrieve_tool(self, session_id: str) -> None:
        """A session whose model cannot call the editor's retrieve tool (an agent behind the
        proxy): its pointers say to run the tool again instead of naming it. Said before the
        session is first loaded."""
        self._without_retrieve.add(session_id)

    def workspace_root(self) -> str:
        """The first workspace folder: what relative tool paths resolve against."""
        return self.roots[0] if self.roots else ""

    # -- settings and the watcher -------------------------------------------------------------

    def settings_pull_started(self, pull: asyncio.Future[None]) -> None:
        """Requests from now on wait for ``pull`` (bounded), so they see what it brings."""
        self._settings_pull = pull

    async def settings_ready(self) -> None:
        pull = self._settings_pull
        if pull is None or pull.done():
            return
        try:
            await asyncio.wait_for(asyncio.shield(pull), SETTINGS_WAIT_S)
        except Exception:  # the pull reports its own failures
            return

    async def apply_settings(self, section: Mapping[str, Any]) -> None:
        """A settings section from the editor: apply it, report refusals, refresh readouts."""
        before = dict(self.settings.current())
        for error in self.settings.apply_pulled(section):
            self.client.warn(f"hdcontext: {error}; the previous value stands")
        if self.settings.current() != before:
            for session in self.registry.loaded():
                self._notify(session)
        await self.update_watcher()

    def watch_wanted(self) -> bool:
        if resolve({}, self.settings.current()).values.watch_enabled:
            return True
        return any(s.resolved().values.watch_enabled for s in self.registry.loaded())

    async def update_watcher(self) -> None:
        await self.watcher.update(self.roots, self.watch_wanted())

    async def set_roots(self, roots: list[str]) -> None:
        self.roots = list(dict.fromkeys(roots))
        await self.update_watcher()

    def note_write(self, path: str, when: int) -> None:
        """A write the editor reported (didSave)."""
        self.registry.note_disk_write(path, when)

    async def shutdown(self) -> None:
        """Stop the watcher and the pruning; with a retention of 0, delete the sessions this
        daemon served, which nobody uses any more (the store must still be open). Not in a
        database other processes share: they may be serving them (a replica stopping is no
        conversation ending); the pruning there deletes them once idle for the hour."""
        await self.registry.settle_saves()
        await self.watcher.stop()
        await self._packer.stop()
        if self._pruner is None:
            return
        await self._pruner.stop()
        if self.retention is not None and self.retention.days == 0 and not self.store.shared:
            for session in self.registry.loaded():
                async with self.registry.lock(session.session_id):
                    await self.registry.delete_idle(session.session_id, None)

    # -- requests -----------------------------------------------------------------------------

    async def request(self, method: str, raw: object, handler: Callable[[Any], Awaitable[R]]) -> R:
        """Run one request's handler, turning every failure into PROTOCOL.md's errors."""
        try:
            await self.settings_ready()
            return await handler(raw)
        except WireError:
            raise
        except UnknownSession as exc:
            raise unknown_session(exc.session_id) from None
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            # The traceback's frames, not the exception's text: that may quote the chat.
            frames = "".join(traceback.format_tb(exc.__traceback__))
            log.error("internal error in %s: %s\n%s", method, type(exc).__name__, frames)
            raise internal_error(method, exc) from None

    def _notify(self, session: Session, status: Status | None = None) -> None:
        if self.notifies:
            self.client.notify(TOKENS_NOTIFICATION, (status or session.status()).to_wire())

    async def open(self, raw: object) -> dict[str, Any]:
        p = parse_params(OpenParams, raw)
        # The chat's model limit is this session's contextLimit: an override, so it wins over
        # the IDE setting and history/settings shows where it came from.
        async with self.registry.lock(p.session_id):
            session = await open_session(self.registry, p.session_id, p.model, p.context_limit)
            self._notify(session)
            status = session.status().to_wire()
        await self.update_watcher()
        return status

    async def sync(self, raw: object) -> dict[str, Any]:
        """``history/sync``: the whole conversation again; append what is new, fork where it
        parts from what the session holds (nothing validated twice, nothing counted twice)."""
        conversation = resent_conversation(raw)
        p = parse_params(SyncParams, raw)
        digests = await asyncio.to_thread(conversation.digests)
        async with self.registry.lock(p.session_id):
            taken = await self._syncs.entries(p.session_id, conversation, digests)
            session, held, new, prepared = taken

            def change() -> SyncOutcome:
                if p.model:
                    session.model = p.model
                if p.context_limit is not None:
                    session.set_override("contextLimit", p.context_limit)
                return session.sync(held, digests, prepared)

            outcome = await self.registry.commit(session, change, model=p.model)
            conversation.settle(digests)
            log.debug(
                "sync %s: %d entries sent, %d held already, %d appended, %s",
                p.session_id,
                len(digests),
                held,
                outcome.appended,
                "no fork" if outcome.forked_at is None else f"forked at {outcome.forked_at}",
            )
            self._notify(session)
            reply = dict(session.status())
        if len(new) >= memory.LARGE_APPEND:
            memory.release()
            self._large.add(p.session_id)
        await self.update_watcher()
        return SyncReply(**reply, appended=outcome.appended, forked_at=outcome.forked_at).to_wire()

    async def sync_compact(
        self,
        raw: object,
        at: int | None = None,
        overrides: Mapping[str, object] | None = None,
        *,
        save_later: bool = False,
    ) -> CompactResult:
        """``history/sync`` then ``history/compact`` as one request: one lock, one commit
        (one write to the disk where the two make two), the typed result. What the proxy
        does for each request it carries; all or nothing, like each of the two.
        ``overrides``: the session's overrides the request itself says (an agent that asks
        its prompt cache an hour makes its session ``cache.ttl: 1h``), set before the compact
        (a wrong one raises SettingError, and nothing is changed). With ``save_later``, the
        result comes before the commit is on disk (``Registry.commit_then_save``): the
        session's lock stays held until it is, and ``registry.saving(session_id)`` is the
        write while it runs."""
        return await self._syncs.then(
            raw, lambda session: session.compact(0, at), overrides, save_later
        )

    async def sync_passed(self, raw: object, at: int | None = None) -> CompactResult:
        """``history/sync``, then the call told to the session as sent with the history as
        it is (``Session.passed``): one lock, one commit. The proxy's way to take in a
        conversation it forwarded as it came (one it had not seen): the bulk path, off the
        request's way, and the session's indexes built for the next request."""

        async def passed(session: Session) -> CompactResult:
            return session.passed(at)

        return await self._syncs.then(raw, passed)

    async def warm(self, session_id: str, digests: Sequence[bytes] = ()) -> list[bytes] | None:
        """Load a stored session and make what its next compaction would make first
        (``Session.warm``), off the event loop; its working view's entries as stored (what
        its last request sent), or None when it is not stored. The proxy's start, for the
        conversations it served last: their next request is then a turn's work."""
        return await self._syncs.warm(session_id, digests)

    async def knows(self, session_id: str) -> bool:
        """Whether the session is loaded or stored (without loading it)."""
        return session_id in self.registry.loaded_ids() or await self.store.exists(session_id)

    def _synced(self, session_id: str, session: Session, status: Status) -> None:
        """A sync and what followed it committed: the usage noted of the session was saved
        with it, the client hears, and what a compaction let go of is packed soon."""
        self._reports.saved(session_id)
        self._notify(session, status)
        self._packer.soon(session_id)

    async def usage(
        self,
        raw: object,
        *,
        write_1h_tokens: int | None = None,
        waiting: Waiting = "unknown",
    ) -> dict[str, Any]:
        """``history/usage``. ``write_1h_tokens``: of the cache writes, those made for an
        hour, and ``waiting``: what the answer left the session waiting on, from an edge in
        this process that read them in the provider's answer (the proxy); a client on the
        wire says them with ``cacheWrite1hTokens`` and ``stopReason``."""
        return await self._reports.told(raw, write_1h_tokens, waiting, save=True)

    async def note_usage(
        self,
        raw: object,
        *,
        write_1h_tokens: int | None = None,
        waiting: Waiting = "unknown",
    ) -> dict[str, Any]:
        """``history/usage`` without a disk write of its own: the figures count at once and
        are saved with the session's next commit, or by ``save_noted`` (``usage.py``). The
        proxy's way. ``waiting`` as for ``usage``."""
        return await self._reports.told(raw, write_1h_tokens, waiting, save=False)

    async def note_refused(self, session_id: str) -> bool:
        """The session's last call never reached the model (``Session.call_refused``), from
        an edge in this process that saw the upstream's answer (the proxy): saved as
        ``note_usage``'s figures are. False when there was nothing to take back. Not on the
        wire: PROTOCOL.md has no way for a client to say it yet."""
        return await self._reports.refused(session_id)

    async def save_noted(self, session_id: str | None = None) -> None:
        """Save the usage ``note_usage`` counted and no commit has saved yet (of one session,
        or of all): before a session is unloaded, and before the daemon stops."""
        await self._reports.save_noted(session_id)

    async def refresh(self, raw: object) -> dict[str, Any]:
        """``history/refresh``: what a refresh call sends now (an empty history when none
        pays), billed like a call."""
        return _compact_reply(await self.refresh_result(raw), "full", None)

    async def refresh_result(self, raw: object) -> CompactResult:
        """``history/refresh``'s typed result (the proxy's keep-warm makes the call)."""
        p = parse_params(RefreshParams, raw)
        async with self.registry.lock(p.session_id):
            session = await self.registry.get(p.session_id)
            try:
                result = await self.registry.commit(session, lambda: session.refresh(p.at))
            except RefreshTooEarly as err:
                raise invalid_params([str(err)]) from None
            self._notify(session, result.status)
        return result

    async def retrieve(self, raw: object) -> dict[str, Any]:
        p = parse_params(RetrieveParams, raw)
        async with self.registry.lock(p.session_id):
            session = await self.registry.get(p.session_id)
            try:
                call, response = await asyncio.to_thread(session.retrieve, p.call_id)
            except KeyError:
                raise unknown_call(p.call_id, p.session_id) from None
            # Counted (hdcontext stats: how often the model fetches back what density took).
            await self.registry.commit(session, session.note_retrieved)
            return {
                "call": _block_json(call) if call is not None else None,
                "response": _block_json(response),
            }

    async def append(self, raw: object) -> dict[str, Any]:
        p = parse_params(AppendParams, raw)
        entries = parse_entries_param(p.entries)
        async with self.registry.lock(p.session_id):
            session = await self.registry.get(p.session_id)
            before = session.version
            # Counting is the slow part of an append: off the loop, before the change.
            prepared = await asyncio.to_thread(session.prepare, entries)

            await self.registry.commit(session, lambda: session.append(prepared))
            if session.version != before:
                self._notify(session)
            status = session.status().to_wire()
        if len(entries) >= memory.LARGE_APPEND:
            memory.release()  # the parse of a large request leaves free pages behind
            self._large.add(p.session_id)
        return status

    async def compact(self, raw: object) -> dict[str, Any]:
        p = parse_params(CompactParams, raw)
        result = await self.compact_result(p.session_id, p.pending_tokens, p.at)
        return _compact_reply(result, p.reply, p.base)

    async def compact_result(
        self, session_id: str, pending_tokens: int = 0, at: int | None = None
    ) -> CompactResult:
        """``history/compact`` up to its typed result, for edges that use the history as
        entries rather than as a JSON reply (the proxy exports it to a provider's format)."""
        async with self.registry.lock(session_id):
            session = await self.registry.get(session_id)
            await self.registry.settle_disk(session)
            try:
                result = await self.registry.commit(
                    session, lambda: session.compact(pending_tokens, at), cancellable=True
                )
            except SummarizerError as err:
                raise summarizer_failed(str(err)) from None
            except CompressionError as err:
                provider = session.resolved().values.summarizer_provider
                raise summarizer_failed(f"summarizer '{provider}' failed: {err}") from None
            self._notify(session, result.status)
            self._packer.soon(session_id)
        if log.isEnabledFor(logging.DEBUG):
            log.debug("compact %s: %s", session_id, decided(result))
        if session_id in self._large:
            self._large.discard(session_id)
            memory.release()  # so does the first look at a large batch of entries
        return result

    async def pack_left(self, session_id: str) -> int:
        """``Session.pack_left`` of a loaded session, under its lock (``Packer.pack_left``):
        the bytes it saved."""
        return await self._packer.pack_left(session_id)

    async def get(self, raw: object) -> dict[str, Any]:
        p = parse_params(GetParams, raw)
        async with self.registry.lock(p.session_id):
            session = await self.registry.get(p.session_id)
            history = session.history
            if p.view == "raw":
                entries = history_json(history.raw)
            elif p.view == "transcript":
                entries = history_json(history.transcript)
            else:
                entries = history_json(history.curated())
            return {"entries": entries, "status": session.status().to_wire()}

    async def set_override(self, raw: object) -> dict[str, object]:
        p = parse_params(SetOverrideParams, raw)
        async with self.registry.lock(p.session_id):
            session = await self.registry.get(p.session_id)

            def change() -> dict[str, object]:
                return session.set_override(p.key, p.value).to_wire()

            try:
                result = await self.registry.commit(session, change)
            except SettingError as err:
                where = "value" if p.key in FIELDS else "key"
                raise invalid_params([f"{where}: {err}"]) from None
            self._notify(session)
        await self.update_watcher()
        return result

    async def settings_of(self, raw: object) -> dict[str, object]:
        p = parse_params(SessionParams, raw)
        async with self.registry.lock(p.session_id):
            session = await self.registry.get(p.session_id)
            return session.settings_reply().to_wire()

    async def todos(self, raw: object) -> dict[str, Any]:
        p = parse_params(TodosParams, raw)
        todos = parse_todos_param(p.todos)
        async with self.registry.lock(p.session_id):
            session = await self.registry.get(p.session_id)

            await self.registry.commit(session, lambda: session.set_todos(todos))
            self._notify(session)
            return session.status().to_wire()

    async def clear(self, raw: object) -> dict[str, Any]:
        p = parse_params(SessionParams, raw)
        async with self.registry.lock(p.session_id):
            session = await self.registry.get(p.session_id)

            await self.registry.commit(session, session.clear)
            self._notify(session)
            return session.status().to_wire()

    async def close(self, raw: object) -> None:
        p = parse_params(SessionParams, raw)
        async with self.registry.lock(p.session_id):
            await self.registry.close(p.session_id)
        await self.update_watcher()

    async def delete(self, raw: object) -> None:
        p = parse_params(SessionParams, raw)
        async with self.registry.lock(p.session_id):
            await self.registry.delete(p.session_id)
        await self.update_watcher()

    async def list(self, raw: object) -> dict[str, Any]:
        parse_params(ListParams, raw)
        return {"sessions": [s.to_wire() for s in await self.registry.statuses()]}

    async def savings(self, raw: object) -> dict[str, Any]:
        """``stats/savings``: the editor's savings view (``savings.py``), priced with the
        user's ``cache.prices``."""
        prices = resolve({}, self.settings.current()).values.cache_prices
        return await savings(self.store, self.location.shown, prices, raw)


def _compact_reply(result: CompactResult, reply: str, base: str | None) -> dict[str, Any]:
    """``history/compact``'s answer with the history as the client asked: whole, as what
    changed since the revision it holds, or not at all."""
    fields: dict[str, Any] = result.wire_fields()
    if reply == "full":
        return {"history": history_json(result.history), **fields}
    if reply == "delta":
        held, keep, entries = result.delta(base)
        return {"delta": {"base": held, "keep": keep, "entries": history_json(entries)}, **fields}
    return fields


def _block_json(block: Block) -> Any:
    """A block as the client sent it (the keys it gave, camelCase)."""
    return block.model_dump(mode="json", by_alias=True, exclude_unset=True)
