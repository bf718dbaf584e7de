"""How far pruning can take the Anthropic-priced cost of the replay corpus, and why.

``replay.py`` measures what the daemon does; this says what any rule could do. Over the same
conversations (``replay.corpus``), with the same pricing (a request reads from the cache, at
0.1, the entries up to the end of the last earlier request it still starts with, and writes the
rest at 1.25: Anthropic caches a prefix only where a request ended; a call more than five
minutes after the previous one finds the cache cold; unlike ``replay.py``, an earlier end is
not dropped for age while the calls keep the cache warm, and it is found however far back: the
daemon's anchors (``cache/prompt_cache.py``) keep one alive where it matters, so this is the
cost a rule could reach with them; ``billing.py``'s ``anthropic_ends``), it reports:

1. the cost of density off split into writes of new content (paid whatever pruning does: every
   token is sent once, as soon as it exists), cache reads and cold rewrites: only the last two
   can shrink, so they bound any saving;
2. the tokens in the requests by kind, summed over calls (token-calls), with what each kind
   costs in cache reads and cold rewrites: where the reducible cost lies;
3. ceilings: for candidate rules (what may go, and from which call on), the cost when the
   removals are made by a free oracle (no rewrite cost), every turn, by a greedy batched
   schedule (apply all pending removals when ``pending × 0.1 × horizon > 1.15 × tokens after
   the first edited entry``, with the true horizon or an estimate; everything on a cold call),
   by the daemon's own ``cache/schedule.py`` ``plan`` (best suffix cut, estimated horizon, budget),
   and by a 30k batch threshold (Anthropic's ``clear_at_least``); with blind edits (an Edit of
   a file the history had a view of while the request holds none).

Everything runs over plain lists of token counts: the daemon is not needed. A view of a file is
a successful ``Read`` result or a ``Write`` with the whole content (as in ``replay.py``'s
blind-edit check); shell reads (``cat``) are not views here, so the shell-only agents'
(mini-swe-agent, SWE-agent) outputs are Bash outputs, and rule A, which in the daemon also drops
superseded shell reads, is slightly understated on them.

``python -m bench.ceiling`` prints the report and writes ``bench/results/ceiling.json``.
"""

from __future__ import annotations

import bisect
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, pairwise
from pathlib import Path
from typing import Any

from hdcontext.core.cache.ledger import BATCH_ALLOWANCE, HORIZON_CAP
from hdcontext.core.cache.pricing import Pricing
from hdcontext.core.cache.schedule import Candidate, plan
from hdcontext.core.content import (
    CodeBlock,
    IContent,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from hdcontext.core.density.edits import Edit
from hdcontext.core.tokens import ENTRY_OVERHEAD, count_block
from hdcontext.core.tools.summary import PRUNED_POINTER, is_compact

from .billing import PRICE_MODELS
from .transcripts import Transcript, corpus, find, model_calls

ENDS = PRICE_MODELS["anthropic_ends"]
READ, WRITE, TTL_MS = ENDS.read, ENDS.write, ENDS.ttl_ms
REWRITE = WRITE - READ  # a cached token written again instead of read: 1.15
PRICING = Pricing("anthropic", READ, WRITE, TTL_MS, at_breakpoints=True)
_NO_EDIT = Edit("readWrite", ())
"""What a candidate stands for is the ``Item`` it was made from: ``plan`` reads no edit."""
NEVER = 10**9
RESULTS = Path(__file__).resolve().parent / "results"

EDIT_TOOLS = frozenset({"Edit", "MultiEdit"})
SHELL_TOOLS = frozenset({"Bash", "bash", "BashOutput"})
SEARCH_TOOLS = frozenset({"Grep", "Glob", "LS"})

LATEST = "Read: latest view"
KINDS: tuple[str, ...] = (
    LATEST,
    "Read: latest view, edited since",
    "Read: superseded",
    "Read: failed",
    "Edit/MultiEdit inputs",
    "Write inputs",
    "Edit/Write results",
    "Bash outputs",
    "Grep/Glob outputs",
    "other tool results",
    "TodoWrite",
    "other tool calls",
    "user text",
    "assistant text",
    "thinking",
    "media",
    "framing",
)

# -- what a session holds ---------------------------------------------------------------------

Key = tuple[int, int]  # (entry, block index)


@dataclass
class Block:
    """One block of the history: where it is, what it costs, what it is, and what the rules
    need to know of it."""

    entry: int
    index: int
    tokens: int
    kind: str
    tool: str = ""
    path: str | None = None
    response: bool = False
    call: Key | None = None
    """A Read result: where its call is (rule A drops both)."""
    pointer_saving: int = 0
    """A tool result: tokens saved when it becomes the pruned pointer."""
    input_saving: int = 0
    """An Edit/MultiEdit/Write call: tokens saved when its input becomes path and pointer."""
    view: bool = False
    """It shows the file ``path``: a successful Read result, a whole Write."""
    superseded_at: int = NEVER
    """A view: the first call whose request holds a later view covering it."""
    covered_at: int = NEVER
    """The first call whose request holds a later *whole* view of ``path``."""
    edited_at: int = NEVER
    """A Read result: the first call whose request holds a later successful edit of ``path``."""

    @property
    def key(self) -> Key:
        return (self.entry, self.index)


@dataclass
class Session:
    """A conversation as the cost model reads it."""

    name: str
    counts: list[int]
    calls: list[int]
    """Entry index of each model call: its request is ``entries[:call]``."""
    warm: list[bool]
    blocks: list[Block]
    views: dict[str, list[Block]]
    edits: list[list[str]]
    """Per call: the files its response edits (Edit/MultiEdit)."""
    run_left: list[int]
    """Per call: the calls from it to the next cold call (excluded) or the end (the true
    horizon of a removal made at that call)."""

    def first_sent(self, entry: int) -> int:
        """The first call whose request holds ``entry``."""
        k = bisect.bisect_right(self.calls, entry)
        return self.calls[k] if k < len(self.calls) else NEVER

    def seen_once(self, entry: int) -> int:
        """The first call that may leave ``entry``'s content out: the model saw it once."""
        k = bisect.bisect_right(self.calls, entry) + 1
        return self.calls[k] if k < len(self.calls) else NEVER


def _path(block: ToolCallBlock) -> str | None:
    params = block.parameters
    if isinstance(params, dict) and isinstance(params.get("file_path"), str):
        return str(params["file_path"])
    return None


def _span(block: ToolCallBlock) -> tuple[int, int] | None:
    """Lines a Read showed, ``[start, end)``; None for the whole file."""
    params = block.parameters if isinstance(block.parameters, dict) else {}
    offset, limit = params.get("offset"), params.get("limit")
    if offset is None and limit is None:
        return None
    start = int(offset) if isinstance(offset, int | float) else 1
    end = start + int(limit) if isinstance(limit, int | float) else NEVER
    return (start, end)


def _covers(outer: tuple[int, int] | None, inner: tuple[int, int] | None) -> bool:
    if outer is None:
        return True
    return inner is not None and outer[0] <= inner[0] and inner[1] <= outer[1]


def _static_kind(entry: IContent, b: object) -> str:
    """A block's kind, before the per-call split of Read results."""
    if isinstance(b, ToolResponseBlock):
        name = b.tool_name
        if name == "Read":
            return "Read: failed"
        if name in EDIT_TOOLS or name == "Write":
            return "Edit/Write results"
        if name in SHELL_TOOLS:
            return "Bash outputs"
        if name in SEARCH_TOOLS:
            return "Grep/Glob outputs"
        return "TodoWrite" if name == "TodoWrite" else "other tool results"
    if isinstance(b, ToolCallBlock):
        if b.name in EDIT_TOOLS:
            return "Edit/MultiEdit inputs"
        if b.name == "Write":
            return "Write inputs"
        return "TodoWrite" if b.name == "TodoWrite" else "other tool calls"
    if isinstance(b, ThinkingBlock):
        return "thinking"
    if isinstance(b, MediaBlock):
        return "media"
    if isinstance(b, TextBlock | CodeBlock):
        return {"human": "user text", "ai": "assistant text"}.get(
            entry.speaker, "other tool results"
        )
    return "other tool results"


def load(transcript: Transcript) -> Session:
    """Index one conversation: block kinds and sizes, file views, edits, cache warmth."""
    entries = transcript.entries
    calls = model_calls(entries)
    warm: list[bool] = []
    clock, previous = 0, None
    for c in calls:  # the clock replay.py keeps
        stamp = entries[c].timestamp
        clock = stamp if stamp is not None else clock + 10_000
        warm.append(previous is not None and 0 <= clock - previous <= TTL_MS)
        previous = clock
    run_left = [0] * len(calls)
    for k in range(len(calls) - 1, -1, -1):
        run_left[k] = 1 + (run_left[k + 1] if k + 1 < len(calls) and warm[k + 1] else 0)

    counts: list[int] = []
    blocks: list[Block] = []
    calls_by_id: dict[str, Block] = {}
    answers: dict[str, tuple[Block, ToolResponseBlock]] = {}
    spans: dict[Key, tuple[int, int] | None] = {}
    for i, entry in enumerate(entries):
        counts.append(ENTRY_OVERHEAD + sum(count_block(b) for b in entry.blocks))
        blocks.append(Block(i, -1, ENTRY_OVERHEAD, "framing"))
        for j, b in enumerate(entry.blocks):
            block = Block(i, j, count_block(b), _static_kind(entry, b))
            if isinstance(b, ToolCallBlock):
                block.tool, block.path = b.name, _path(b)
                calls_by_id.setdefault(b.id, block)
                if b.name in EDIT_TOOLS | {"Write"} and block.path is not None:
                    stub = b.model_copy(
                        update={"parameters": {"file_path": block.path, "input": PRUNED_POINTER}}
                    )
                    block.input_saving = max(0, block.tokens - count_block(stub))
                if b.name == "Read":
                    spans[block.key] = _span(b)
            elif isinstance(b, ToolResponseBlock):
                block.tool, block.response = b.tool_name, True
                pointed = b.model_copy(update={"result": PRUNED_POINTER})
                block.pointer_saving = max(0, block.tokens - count_block(pointed))
                call = calls_by_id.get(b.call_id)
                if call is not None and b.call_id not in answers:
                    answers[b.call_id] = (block, b)
            blocks.append(block)

    views: dict[str, list[Block]] = defaultdict(list)
    view_span: dict[Key, tuple[int, int] | None] = {}
    settled: dict[Key, int] = {}  # view -> first call whose request holds it as settled
    edited: dict[str, list[int]] = defaultdict(list)
    for call_id, call in calls_by_id.items():
        answer = answers.get(call_id)
        ok = answer is not None and not answer[1].error
        if call.path is None:
            continue
        if call.tool == "Read" and answer is not None:
            result, raw = answer
            result.path, result.call = call.path, call.key
            if ok and not is_compact(raw.result):
                result.kind, result.view = LATEST, True
                views[call.path].append(result)
                view_span[result.key] = spans.get(call.key)
                settled[result.key] = result.entry + 1
        elif call.tool == "Write" and call.input_saving > 0:
            call.view = True
            views[call.path].append(call)
            view_span[call.key] = None
            settled[call.key] = answer[0].entry + 1 if ok and answer is not None else NEVER
        elif call.tool in EDIT_TOOLS and ok and answer is not None:
            edited[call.path].append(answer[0].entry)
    for path, listed in views.items():
        listed.sort(key=lambda v: v.key)
        for v in listed:
            later = [w for w in listed if w.key > v.key]
            v.superseded_at = min(
                (settled[w.key] for w in later if _covers(view_span[w.key], view_span[v.key])),
                default=NEVER,
            )
            v.edited_at = min((e + 1 for e in edited[path] if e > v.entry), default=NEVER)
    for piece in blocks:
        if piece.input_saving > 0 and piece.path is not None:
            piece.covered_at = min(
                (
                    settled[w.key]
                    for w in views.get(piece.path, ())
                    if w.key > piece.key and view_span[w.key] is None
                ),
                default=NEVER,
            )

    edits = [
        [
            p
            for x in entries[c].blocks
            if isinstance(x, ToolCallBlock) and x.name in EDIT_TOOLS and (p := _path(x)) is not None
        ]
        for c in calls
    ]
    return Session(transcript.name, counts, calls, warm, blocks, dict(views), edits, run_left)


def kind_at(block: Block, call: int) -> str:
    """A block's kind in the request of the call at entry ``call``."""
    if block.kind != LATEST:
        return block.kind
    if block.superseded_at <= call:
        return "Read: superseded"
    if block.edited_at <= call:
        return "Read: latest view, edited since"
    return LATEST


# -- 1 and 2: density off ---------------------------------------------------------------------


def _by_kind() -> dict[str, float]:
    return dict.fromkeys(KINDS, 0.0)


@dataclass
class OffCost:
    """Density off: cost by category (new writes, cache reads, cold rewrites), each by kind,
    and token-calls by kind."""

    calls: int = 0
    cold_calls: int = 0
    tokens: int = 0
    writes: dict[str, float] = field(default_factory=_by_kind)
    reads: dict[str, float] = field(default_factory=_by_kind)
    cold: dict[str, float] = field(default_factory=_by_kind)
    token_calls: dict[str, float] = field(default_factory=_by_kind)

    @property
    def total(self) -> float:
        return sum(self.writes.values()) + sum(self.reads.values()) + sum(self.cold.values())

    def add(self, other: OffCost) -> None:
        self.calls += other.calls
        self.cold_calls += other.cold_calls
        self.tokens += other.tokens
        for mine, theirs in (
            (self.writes, other.writes),
            (self.reads, other.reads),
            (self.cold, other.cold),
            (self.token_calls, other.token_calls),
        ):
            for k, v in theirs.items():
                mine[k] += v


def off_cost(s: Session) -> OffCost:
    """Density off, call by call: each request extends the previous one, so what the previous
    request held is read (warm) or written again (cold), and the rest is new."""
    out = OffCost()
    previous = 0
    for k, c in enumerate(s.calls):
        out.calls += 1
        out.cold_calls += k > 0 and not s.warm[k]
        out.tokens += sum(s.counts[:c])
        for b in s.blocks:
            if b.entry >= c:
                break
            kind = kind_at(b, c)
            out.token_calls[kind] += b.tokens
            if b.entry >= previous:
                out.writes[kind] += b.tokens * WRITE
            elif s.warm[k]:
                out.reads[kind] += b.tokens * READ
            else:
                out.cold[kind] += b.tokens * WRITE
        previous = c
    return out


# -- 3: rules ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Item:
    """One removal a rule may make: the tokens it takes out of which blocks, from which call
    on, and whether it takes a view of a file away (for blind edits)."""

    parts: tuple[tuple[int, int, int], ...]  # (entry, block, tokens saved); the first is its key
    ready: int
    """The first call (entry index) whose request may leave it out."""
    kind: str
    view: Key | None = None

    @property
    def first(self) -> int:
        return min(e for e, _, _ in self.parts)

    @property
    def saving(self) -> int:
        return sum(t for _, _, t in self.parts)


Rule = Callable[[Session], list[Item]]
Trigger = Callable[[Session], Callable[[Block], int]]
"""When a tool output is old: per session, a function of the block giving the first call whose
request may leave it out."""


def superseded_reads(s: Session) -> list[Item]:
    """(A) the latest-view rule for reads: a Read goes, call and result, once a later view of the
    file covers what it showed."""
    by_key = {b.key: b for b in s.blocks}
    out = []
    for b in s.blocks:
        if b.kind == LATEST and b.superseded_at < NEVER:
            parts = [(b.entry, b.index, b.tokens)]
            if b.call is not None:
                parts.append((*b.call, by_key[b.call].tokens))
            out.append(Item(tuple(parts), b.superseded_at, "Read: superseded", b.key))
    return out


def after_calls(n: int) -> Trigger:
    """Old once ``n`` model calls followed the first that sent it."""

    def per_session(s: Session) -> Callable[[Block], int]:
        def ready(b: Block) -> int:
            k = bisect.bisect_right(s.calls, b.entry) + n
            return s.calls[k] if k < len(s.calls) else NEVER

        return ready

    return per_session


def after_tokens(n: int) -> Trigger:
    """Old once ``n`` tokens (as sent with density off) follow its entry: outside the last
    ``n`` tokens."""

    def per_session(s: Session) -> Callable[[Block], int]:
        cumulative = list(accumulate(s.counts, initial=0))  # cumulative[e] = tokens before e

        def ready(b: Block) -> int:
            e = bisect.bisect_left(cumulative, cumulative[b.entry + 1] + n)
            return e if e <= len(s.counts) else NEVER

        return ready

    return per_session


def per_tool(keep: int) -> Trigger:
    """Today's recency pass: old once ``keep`` later results of the same tool exist."""

    def per_session(s: Session) -> Callable[[Block], int]:
        results: dict[str, list[int]] = defaultdict(list)
        for b in s.blocks:
            if b.response:
                results[b.tool].append(b.entry)

        def ready(b: Block) -> int:
            entries = results[b.tool]
            k = bisect.bisect_right(entries, b.entry) + keep - 1
            return entries[k] + 1 if k < len(entries) else NEVER

        return ready

    return per_session


def at_once(s: Session) -> Callable[[Block], int]:
    """Old before it is ever sent (with ``old_outputs(..., unseen=True)``)."""
    return lambda b: b.entry + 1


def old_outputs(trigger: Trigger, views_too: bool = False, unseen: bool = False) -> Rule:
    """Tool results past ``trigger`` become the pruned pointer, once the model has seen them
    (unless ``unseen``). Results that are views of files are left to the latest-view rule,
    unless ``views_too`` (Anthropic's context editing knows no views)."""

    def rule(s: Session) -> list[Item]:
        ready = trigger(s)
        out = []
        for b in s.blocks:
            if b.pointer_saving <= 0 or (b.view and not views_too):
                continue
            at = ready(b) if unseen else max(ready(b), s.seen_once(b.entry))
            if at < NEVER:
                view = b.key if b.view else None
                out.append(Item(((b.entry, b.index, b.pointer_saving),), at, b.kind, view))
        return out

    return rule


def covered_inputs(s: Session) -> list[Item]:
    """Edit/MultiEdit/Write inputs once a later whole view of the file (a full Read, a whole
    Write) shows what they did: the input becomes its file path and a pointer."""
    out = []
    for b in s.blocks:
        if b.input_saving > 0 and b.covered_at < NEVER:
            view = b.key if b.view else None
            out.append(Item(((b.entry, b.index, b.input_saving),), b.covered_at, b.kind, view))
    return out


def old_inputs(trigger: Trigger) -> Rule:
    """Edit/MultiEdit inputs and Write inputs that are no longer the file's latest view, past
    ``trigger``: what Anthropic's ``clear_tool_inputs`` would take."""

    def rule(s: Session) -> list[Item]:
        ready = trigger(s)
        out = []
        for b in s.blocks:
            if b.input_saving <= 0:
                continue
            at = max(ready(b), s.seen_once(b.entry))
            if b.view:
                at = max(at, b.superseded_at)
            if at < NEVER:
                view = b.key if b.view else None
                out.append(Item(((b.entry, b.index, b.input_saving),), at, b.kind, view))
        return out

    return rule


def superseded_todos(s: Session) -> list[Item]:
    """TodoWrite calls once a later TodoWrite exists: each carries the whole list."""
    todos = [b for b in s.blocks if b.kind == "TodoWrite" and b.index >= 0 and not b.response]
    out = []
    for b, later in pairwise(todos):
        at = max(later.entry + 1, s.seen_once(b.entry))
        saving = max(0, b.tokens - 12)  # the call's name and a pointer stay
        if at < NEVER and saving:
            out.append(Item(((b.entry, b.index, saving),), at, "TodoWrite"))
    return out


def union(*rules: Rule) -> Rule:
    """Several rules: a block two of them take goes at the earlier call."""

    def rule(s: Session) -> list[Item]:
        best: dict[Key, Item] = {}
        for r in rules:
            for item in r(s):
                key = item.parts[0][:2]
                if key not in best or item.ready < best[key].ready:
                    best[key] = item
        return list(best.values())

    return rule


def only(rule: Rule, *kinds: str) -> Rule:
    """A rule's removals of blocks of these kinds only."""
    return lambda s: [i for i in rule(s) if i.kind in kinds]


A = superseded_reads
INPUTS = (covered_inputs, superseded_todos)
EDIT_RESULTS = only(old_outputs(after_calls(1)), "Edit/Write results")
EDIT_RESULTS_AT_ONCE = only(old_outputs(at_once, unseen=True), "Edit/Write results")
RULES: dict[str, Rule] = {
    "A: superseded reads": A,
    "A + covered inputs + old TodoWrite": union(A, *INPUTS),
    "E1: A + inputs + Edit results seen once": union(A, EDIT_RESULTS, *INPUTS),
    "E: A + inputs + Edit results at once (default)": union(A, EDIT_RESULTS_AT_ONCE, *INPUTS),
    "E + outputs > 2 calls old": union(
        A, EDIT_RESULTS_AT_ONCE, old_outputs(after_calls(2)), *INPUTS
    ),
    "A + recency 3/tool": union(A, old_outputs(per_tool(3))),
    "E + recency 3/tool (default + recency)": union(
        A, EDIT_RESULTS_AT_ONCE, old_outputs(per_tool(3)), *INPUTS
    ),
    "B: A + outputs > 5 calls old": union(A, old_outputs(after_calls(5))),
    "B: A + outputs > 10k tokens old": union(A, old_outputs(after_tokens(10_000))),
    "B: A + outputs after 1 call": union(A, old_outputs(after_calls(1))),
    "C: B(5 calls) + covered inputs": union(A, old_outputs(after_calls(5)), covered_inputs),
    "C+: C + old TodoWrite": union(A, old_outputs(after_calls(5)), *INPUTS),
    "C+ with recency 3/tool": union(A, old_outputs(per_tool(3)), *INPUTS),
    "C+ with outputs > 2 calls old": union(A, old_outputs(after_calls(2)), *INPUTS),
    "C+ with outputs after 1 call": union(A, old_outputs(after_calls(1)), *INPUTS),
    "D: all but views, > 30k tokens old": union(
        A, old_outputs(after_tokens(30_000)), old_inputs(after_tokens(30_000)), superseded_todos
    ),
    "D: all but views, > 10k tokens old": union(
        A, old_outputs(after_tokens(10_000)), old_inputs(after_tokens(10_000)), superseded_todos
    ),
    "D0: results > 30k tokens old, views too": old_outputs(after_tokens(30_000), views_too=True),
    "bound: all but views after 1 call": union(
        A, old_outputs(after_calls(1)), old_inputs(after_calls(1)), superseded_todos
    ),
    "bound: all after 1 call, views too": union(
        old_outputs(after_calls(1), views_too=True), old_inputs(after_calls(1)), superseded_todos
    ),
}
"""Candidate rules. "Outputs" are tool results other than file views (those stay while they
are the latest view: rule A takes them once superseded); "covered inputs" are Edit/MultiEdit/
Write inputs once a later whole view of the file shows their effect; "old TodoWrite" are
TodoWrite calls once a later one carries the list; "Edit results" are Edit/MultiEdit/Write
results (Claude Code's ``cat -n`` snippet of the edited lines), before any call sends them
(the daemon does so with the echoes that only list lines) or once one call has seen them
(E1). The two bounds say what no 0-blind rule, and no rule at all, that lets the model see
every output once could beat."""

# -- schedules --------------------------------------------------------------------------------


@dataclass
class Moment:
    """What a schedule sees at one call."""

    session: Session
    k: int
    """The call's number in the session (0 first): the calls made so far."""
    pending: list[Item]
    """Ready, not applied, and touching the cached prefix (the rest applies for free)."""
    cached_end: int
    tokens: Callable[[int, int], int]
    """Tokens of entries ``[i, j)`` as the request stands before this call's removals."""
    spent: float
    spent_off: float
    restart: Callable[[int], int]
    """Where the cache still hits if entry ``i`` changes: the end of the last earlier
    request at or before it (Anthropic caches a prefix only where a request ended)."""


@dataclass(frozen=True)
class Schedule:
    name: str
    choose: Callable[[Moment], list[Item]]
    free: bool = False
    """An oracle: a removal costs no rewrite (the provider's prefix is not broken)."""


def _all(m: Moment) -> list[Item]:
    return m.pending


def greedy(horizon: Callable[[Moment], float]) -> Callable[[Moment], list[Item]]:
    """All pending removals together, when ``S × 0.1 × horizon > 1.15 × A``: S the tokens
    they save, A the cached tokens from the first edited entry on."""

    def choose(m: Moment) -> list[Item]:
        if not m.pending:
            return []
        saved = sum(i.saving for i in m.pending)
        after = m.tokens(m.restart(min(i.first for i in m.pending)), m.cached_end)
        return m.pending if saved * READ * horizon(m) > REWRITE * after else []

    return choose


def true_horizon(m: Moment) -> float:
    return float(m.session.run_left[m.k])


def estimated_horizon(m: Moment) -> float:
    return min(float(HORIZON_CAP), max(1.0, float(m.k)))


def daemon(m: Moment) -> list[Item]:
    """``cache/schedule.py``'s ``plan`` itself, over the estimated horizon and the ledger's
    budget (saved so far + ``BATCH_ALLOWANCE`` of the cost without density)."""
    candidates = [Candidate(_NO_EDIT, item.first, item.saving) for item in m.pending]
    item_of = {id(c): item for c, item in zip(candidates, m.pending, strict=True)}
    chosen = plan(
        candidates,
        cached_end=m.cached_end,
        tokens_between=m.tokens,
        pricing=PRICING,
        horizon=estimated_horizon(m),
        budget=max(0.0, m.spent_off - m.spent) + BATCH_ALLOWANCE * m.spent_off,
        restart=m.restart,
    )
    return [item_of[id(c)] for c in chosen.apply]


def threshold(at_least: int) -> Callable[[Moment], list[Item]]:
    """Anthropic's ``clear_at_least``: clear once that much is pending."""

    def choose(m: Moment) -> list[Item]:
        return m.pending if sum(i.saving for i in m.pending) >= at_least else []

    return choose


SCHEDULES: tuple[Schedule, ...] = (
    Schedule("oracle", _all, free=True),
    Schedule("every turn", _all),
    Schedule("greedy, true horizon", greedy(true_horizon)),
    Schedule("greedy, est. horizon", greedy(estimated_horizon)),
    Schedule("daemon plan()", daemon),
    Schedule("batch >= 30k", threshold(30_000)),
    Schedule("cold calls only", lambda m: []),
)


# -- the replay -------------------------------------------------------------------------------


@dataclass
class Outcome:
    cost: float = 0.0
    tokens: int = 0
    edits: int = 0
    blind: int = 0
    breaks: int = 0
    per_call: list[float] = field(default_factory=list)


def simulate(s: Session, items: Sequence[Item], schedule: Schedule, off: Outcome) -> Outcome:
    """Price each request against the previous one, removals made as ``schedule`` chooses."""
    out = Outcome()
    reduced = [0] * len(s.counts)
    applied: set[Key] = set()
    removed_views: set[Key] = set()
    waiting = sorted(items, key=lambda i: i.ready)
    ready: list[Item] = []
    w = 0
    previous = 0
    spent = spent_off = 0.0
    ends: list[int] = []  # earlier requests' ends the request still starts with
    for k, c in enumerate(s.calls):
        while w < len(waiting) and waiting[w].ready <= c:
            ready.append(waiting[w])
            w += 1
        cached_end = previous if s.warm[k] else 0
        if not s.warm[k]:
            ends = []
        restart = _restart(ends)
        cumulative = list(
            accumulate((n - r for n, r in zip(s.counts, reduced, strict=True)), initial=0)
        )
        pending = [i for i in ready if i.parts[0][:2] not in applied]
        free = [i for i in pending if i.first >= cached_end]
        costly = [i for i in pending if i.first < cached_end]
        moment = Moment(s, k, costly, cached_end, _between(cumulative), spent, spent_off, restart)
        chosen = free + (schedule.choose(moment) if costly else [])
        shared = cached_end
        for item in chosen:
            applied.add(item.parts[0][:2])
            for e, _, t in item.parts:
                reduced[e] += t
            if item.view is not None:
                removed_views.add(item.view)
            if not schedule.free:
                shared = min(shared, item.first)
        out.breaks += shared < cached_end
        hit = restart(shared) if shared < cached_end else cached_end
        total = sum(s.counts[:c]) - sum(reduced[:c])
        held = sum(s.counts[:hit]) - sum(reduced[:hit])
        ends = [e for e in ends if e <= shared] + [c]
        cost = held * READ + (total - held) * WRITE
        out.cost += cost
        out.tokens += total
        out.per_call.append(cost)
        spent += cost
        spent_off += off.per_call[k] if off.per_call else cost
        for path in s.edits[k]:
            out.edits += 1
            seen = [v for v in s.views.get(path, ()) if v.entry < c]
            if seen and all(v.key in removed_views for v in seen):
                out.blind += 1
        previous = c
    return out


def _restart(ends: list[int]) -> Callable[[int], int]:
    return lambda i: max((e for e in ends if e <= i), default=0)


def _between(cumulative: list[int]) -> Callable[[int, int], int]:
    return lambda a, b: cumulative[b] - cumulative[a]


# -- the report -------------------------------------------------------------------------------


def run(found: Sequence[Transcript]) -> dict[str, Any]:
    sessions = [load(t) for t in corpus(found)]
    off = OffCost()
    for s in sessions:
        off.add(off_cost(s))
    baseline = [simulate(s, [], Schedule("off", _all), Outcome()) for s in sessions]
    off_total = sum(o.cost for o in baseline)
    off_tokens = sum(o.tokens for o in baseline)
    assert abs(off_total - off.total) < 1e-6 * max(1.0, off_total), (off_total, off.total)

    rows: dict[str, dict[str, Any]] = {}
    for rule_name, rule in RULES.items():
        items = [rule(s) for s in sessions]
        rows[rule_name] = {}
        for schedule in SCHEDULES:
            outs = [
                simulate(s, it, schedule, o)
                for s, it, o in zip(sessions, items, baseline, strict=True)
            ]
            ratios = [
                o.cost / b.cost if b.cost else 1.0 for o, b in zip(outs, baseline, strict=True)
            ]
            edits = sum(o.edits for o in outs)
            rows[rule_name][schedule.name] = {
                "anthropic": sum(o.cost for o in outs) / off_total,
                "tokens": sum(o.tokens for o in outs) / off_tokens,
                "edits": edits,
                "blind": sum(o.blind for o in outs),
                "blind_pct": 100 * sum(o.blind for o in outs) / max(1, edits),
                "dearer_1pct": sum(1 for x in ratios if x > 1.01),
                "worst": max(ratios, default=1.0),
                "prefix_breaks": sum(o.breaks for o in outs),
                "per_session": {s.name: round(x, 4) for s, x in zip(sessions, ratios, strict=True)},
            }
    writes, reads, cold = (sum(d.values()) for d in (off.writes, off.reads, off.cold))
    kinds = {
        k: {
            "token_calls": off.token_calls[k],
            "token_calls_share": off.token_calls[k] / max(1.0, sum(off.token_calls.values())),
            "new_write_share": off.writes[k] / off_total,
            "read_share": off.reads[k] / off_total,
            "cold_rewrite_share": off.cold[k] / off_total,
        }
        for k in KINDS
    }
    return {
        "sessions": len(sessions),
        "calls": off.calls,
        "cold_calls": off.cold_calls,
        "off": {
            "cost": off_total,
            "token_calls": off.tokens,
            "new_writes": writes / off_total,
            "cache_reads": reads / off_total,
            "cold_rewrites": cold / off_total,
        },
        "kinds": kinds,
        "rules": rows,
    }


def render(report: dict[str, Any]) -> str:
    off = report["off"]
    lines = [
        f"Ceiling analysis · {report['sessions']} sessions · {report['calls']} model calls"
        f" · {report['cold_calls']} cold calls · Anthropic prices (read {READ}, write {WRITE})",
        "",
        "1. Density off: where the cost goes",
        f"   new content written   {off['new_writes']:7.1%}   (paid whatever pruning does)",
        f"   cache reads           {off['cache_reads']:7.1%}",
        f"   cold rewrites         {off['cold_rewrites']:7.1%}",
        f"   => no pruning can go below {off['new_writes']:.3f} of the cost",
        "",
        "2. Token-calls by kind (density off) and their share of the cost",
        f"   {'kind':34} {'Mtok-calls':>10} {'share':>7} {'writes':>7} {'reads':>7} {'cold':>7}",
    ]
    for kind, v in report["kinds"].items():
        lines.append(
            f"   {kind:34} {v['token_calls'] / 1e6:10.2f} {v['token_calls_share']:7.1%}"
            f" {v['new_write_share']:7.1%} {v['read_share']:7.1%} {v['cold_rewrite_share']:7.1%}"
        )
    lines += [
        "",
        "3. Ceilings: cost relative to density off · blind edits (% of edits) · sessions more"
        " than 1% dearer",
        f"   {'rule':40}" + "".join(f" {s.name[:15]:>15}" for s in SCHEDULES) + "  tokens",
    ]
    for rule, by_schedule in report["rules"].items():
        cells = "".join(
            f" {v['anthropic']:6.3f}{v['blind_pct']:4.0f}%{v['dearer_1pct']:4}"
            for v in by_schedule.values()
        )
        lines.append(f"   {rule:40}{cells}  {by_schedule['oracle']['tokens']:6.3f}")
    lines.append("   (tokens: sent relative to density off, oracle schedule)")
    lines += ["", "4. What meets the targets (blind <= 2%, no session > 1% dearer)"]
    for target in (0.95, 0.80):
        met = [
            (v["anthropic"], rule, schedule)
            for rule, by_schedule in report["rules"].items()
            for schedule, v in by_schedule.items()
            if schedule != "oracle"
            and not rule.startswith("bound")
            and v["anthropic"] <= target
            and v["blind_pct"] <= 2.0
            and v["dearer_1pct"] == 0
        ]
        lines.append(f"   <= {target}: {len(met)} rule/schedule pairs" + (":" if met else ""))
        lines.extend(f"      {c:.3f}  {r} · {sch}" for c, r, sch in sorted(met)[:6])
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    started = time.monotonic()
    found = find().transcripts
    if not found:
        print("ceiling: no transcripts", file=sys.stderr)
        return 2
    report = run(found)
    report["seconds"] = round(time.monotonic() - started, 1)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "ceiling.json").write_text(json.dumps(report, indent=1))
    print(render(report))
    print(f"\n(wrote {RESULTS / 'ceiling.json'} in {report['seconds']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
