"""Other context managers' pruning rules, replayed the way ``replay.py`` replays ours.

DESIGN.md ("Anchors") lists the published rules of the peers. Each clears old tool results
(the result gives way to a short placeholder; the call stays) on its own trigger, and keeps
what it cleared cleared. Replayed on the same conversations, call by call, with the same
prices and the same blind-edit check, they say where hdcontext's settings stand.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hdcontext.core.content import IContent, ToolResponseBlock
from hdcontext.core.tokens import count_entry
from hdcontext.core.tools.summary import PRUNED_POINTER

from .billing import MAIN, PRICE_MODELS, Bill
from .outcome import Replayed
from .sight import blind, edited_files
from .transcripts import Transcript, model_calls

PLACEHOLDER = PRUNED_POINTER
"""What a cleared result shows (about as short as the peers' own placeholders)."""


@dataclass(frozen=True)
class Result:
    """A tool result in the history: where it is, and what clearing it saves."""

    entry: int
    block: int
    saving: int


Policy = Callable[[list[Result], set[Result], int, int, int | None], set[Result]]
"""(results so far, cleared so far, request tokens, call time, previous call time) -> the
results to clear now."""


def _keep_newest(results: list[Result], keep: int) -> list[Result]:
    return results[: max(0, len(results) - keep)]


def context_editing(trigger: int, keep: int, at_least: int = 0) -> Policy:
    """Anthropic's ``clear_tool_uses``: over ``trigger`` input tokens, clear every tool
    result but the newest ``keep``, if that clears at least ``at_least`` tokens."""

    def policy(
        results: list[Result], cleared: set[Result], tokens: int, at: int, last: int | None
    ) -> set[Result]:
        if tokens <= trigger:
            return set()
        new = {r for r in _keep_newest(results, keep) if r not in cleared}
        return new if sum(r.saving for r in new) >= at_least else set()

    return policy


def after_gap(gap_ms: int, keep: int) -> Policy:
    """Claude Code's micro-compaction: after a long pause, clear all but the newest ``keep``."""

    def policy(
        results: list[Result], cleared: set[Result], tokens: int, at: int, last: int | None
    ) -> set[Result]:
        if last is None or at - last <= gap_ms:
            return set()
        return {r for r in _keep_newest(results, keep) if r not in cleared}

    return policy


def masking(protect: int, at_least: int) -> Policy:
    """gemini-cli's tool-output masking and opencode's prune: the newest ``protect`` tokens of
    tool output stay; older output is cleared once there is ``at_least`` of it."""

    def policy(
        results: list[Result], cleared: set[Result], tokens: int, at: int, last: int | None
    ) -> set[Result]:
        held = 0
        prunable: list[Result] = []
        for r in reversed(results):
            if r in cleared:
                continue
            if held < protect:
                held += r.saving
            else:
                prunable.append(r)
        return set(prunable) if sum(r.saving for r in prunable) >= at_least else set()

    return policy


PEERS: dict[str, Policy] = {
    "Anthropic context editing (100k, keep 3)": context_editing(100_000, 3),
    "Anthropic context editing (30k, keep 3, at least 10k)": context_editing(30_000, 3, 10_000),
    "Claude Code micro-compaction (60-min gap, keep 5)": after_gap(3_600_000, 5),
    "gemini-cli masking (protect 50k, at least 30k)": masking(50_000, 30_000),
    "opencode prune (protect 40k, at least 20k)": masking(40_000, 20_000),
}


def replay_peer(transcript: Transcript, policy: Policy) -> Replayed:
    """One conversation under a peer's rule, billed under every price model with one
    breakpoint on the last message, as the peers' agents place it."""
    entries = list(transcript.entries)
    counts = [count_entry(e) for e in entries]
    blocks = [len(e.blocks) for e in entries]
    results: list[Result] = []
    for i, entry in enumerate(entries):
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolResponseBlock):
                emptied = entry.with_blocks(
                    [
                        b if k != j else block.model_copy(update={"result": PLACEHOLDER})
                        for k, b in enumerate(entry.blocks)
                    ]
                )
                results.append(Result(i, j, max(0, counts[i] - count_entry(emptied))))
    out = Replayed()
    cleared: set[Result] = set()
    previous_len = 0
    previous_at: int | None = None
    clock = 0
    bills = {name: Bill(model) for name, model in PRICE_MODELS.items()}
    for i in model_calls(entries):
        stamp = entries[i].timestamp
        clock = stamp if stamp is not None else clock + 10_000
        so_far = [r for r in results if r.entry < i]
        new = policy(
            so_far, cleared, sum(counts[:i]) - sum(r.saving for r in cleared), clock, previous_at
        )
        cleared |= new
        per_entry = list(counts[:i])
        cleared_in: dict[int, int] = {}
        for r in cleared:
            per_entry[r.entry] -= r.saving
            cleared_in[r.entry] = cleared_in.get(r.entry, 0) + 1
        # Each entry by its identity (index, results cleared), which changes when it does.
        request = [f"{j}:{cleared_in.get(j, 0)}".encode() for j in range(i)]
        for name, bill in bills.items():
            out.cost[name] += bill.call(request, per_entry, blocks[:i], [i], clock)
        tokens = sum(per_entry)
        out.calls += 1
        out.tokens += tokens
        out.peak = max(out.peak, tokens)
        out.prefix_breaks += any(r.entry < previous_len for r in new)
        edited = edited_files(entries[i])
        if edited:
            out.edits += len(edited)
            out.blind += blind(edited, entries[:i], _request(entries[:i], cleared))
        previous_len, previous_at = i, clock
    out.rewrites, out.lost = bills[MAIN].rewrites, bills[MAIN].lost
    return out


def _request(entries: Sequence[IContent], cleared: set[Result]) -> list[IContent]:
    gone: dict[int, set[int]] = {}
    for r in cleared:
        gone.setdefault(r.entry, set()).add(r.block)
    out: list[IContent] = []
    for i, entry in enumerate(entries):
        if i in gone:
            entry = entry.with_blocks(
                [
                    b.model_copy(update={"result": PLACEHOLDER}) if j in gone[i] else b
                    for j, b in enumerate(entry.blocks)
                ]
            )
        out.append(entry)
    return out
