"""READ → WRITE pair pruning (REQ-HD-005, REQ-HD-013.5).

A file read that was followed by a write to the same file shows the model content that no
longer exists; worse, it competes with the newer content. Such reads go, call and response
together, and nothing else: only the stale blocks leave their entries (REQ-HD-005.8).

What counts as "followed by a write" is deliberately cautious, because removing a read the
model still needs is worse than keeping a stale one:

* a write tool call counts only once its response has arrived without an error (a failed edit
  did not change the file; a pending one may not happen);
* a write seen on disk (``DensityConfig.external_writes``) counts only when the read has a
  timestamp to order it against;
* a call id used by more than one tool call is ambiguous, so such calls are neither removed
  nor counted as writes;
* a multi-file read goes only when every file it names is stale and none is a glob.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..content import IContent, ToolCallBlock, ToolResponseBlock
from ..tools import extract_path, extract_paths, resolve_path
from .edits import PassEdits, edits_from_blocks
from .types import DensityConfig

Position = tuple[int, int]
"""(entry index, block index): the order tool calls were made in."""


@dataclass(frozen=True)
class _Call:
    position: Position
    block: ToolCallBlock


@dataclass(frozen=True)
class _Response:
    position: Position
    block: ToolResponseBlock


def prune_stale_reads(history: Sequence[IContent], config: DensityConfig) -> PassEdits:
    """Remove every read tool call (and its responses) whose files were all written later.

    Ignores ``config.read_write_pruning``: whether the pass runs at all is the strategy's
    decision, so the pass can be tested on its own.
    """
    calls = _unique_calls(history)
    responses = _responses_by_call(history)
    last_write = _last_writes(calls, responses, config)
    ledger = _ledger(config)

    drop: dict[int, set[int]] = {}
    for call_id, call in calls.items():
        if call.block.name not in config.read_tools:
            continue
        paths = _read_paths(call.block, config.workspace_root)
        if paths is None:
            continue
        read_time = _read_time(history, call, responses.get(call_id, []))
        if all(
            _written_after(path, call.position, read_time, last_write, ledger) for path in paths
        ):
            entry, block = call.position
            drop.setdefault(entry, set()).add(block)
            for response in responses.get(call_id, []):
                entry, block = response.position
                drop.setdefault(entry, set()).add(block)

    new_blocks = {
        entry: [b for j, b in enumerate(history[entry].blocks) if j not in blocks]
        for entry, blocks in drop.items()
    }
    return edits_from_blocks(history, new_blocks)


def _unique_calls(history: Sequence[IContent]) -> dict[str, _Call]:
    """Tool calls by id, leaving out ids that more than one call uses."""
    found: dict[str, _Call] = {}
    repeated: set[str] = set()
    for i, entry in enumerate(history):
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolCallBlock):
                if block.id in found:
                    repeated.add(block.id)
                else:
                    found[block.id] = _Call((i, j), block)
    for call_id in repeated:
        del found[call_id]
    return found


def _responses_by_call(history: Sequence[IContent]) -> dict[str, list[_Response]]:
    found: dict[str, list[_Response]] = {}
    for i, entry in enumerate(history):
        for j, block in enumerate(entry.blocks):
            if isinstance(block, ToolResponseBlock):
                found.setdefault(block.call_id, []).append(_Response((i, j), block))
    return found


def _answers(call: _Call, responses: Sequence[_Response]) -> list[_Response]:
    """The responses that came after the call (one before it answers nothing)."""
    return [r for r in responses if r.position > call.position]


def _last_writes(
    calls: dict[str, _Call], responses: dict[str, list[_Response]], config: DensityConfig
) -> dict[str, Position]:
    """Resolved path -> position of the latest write known to have succeeded."""
    latest: dict[str, Position] = {}
    for call_id, call in calls.items():
        if call.block.name not in config.write_tools:
            continue
        path = extract_path(call.block.parameters)
        if path is None:
            continue
        answers = _answers(call, responses.get(call_id, []))
        if not answers or any(r.block.error for r in answers):
            continue
        resolved = resolve_path(path, config.workspace_root)
        if resolved not in latest or latest[resolved] < call.position:
            latest[resolved] = call.position
    return latest


def _ledger(config: DensityConfig) -> dict[str, int]:
    """Resolved path -> time of the latest write seen outside the history."""
    latest: dict[str, int] = {}
    for write in config.external_writes:
        path = resolve_path(write.path, config.workspace_root)
        latest[path] = max(write.time, latest.get(path, write.time))
    return latest


def _read_paths(call: ToolCallBlock, workspace_root: str) -> list[str] | None:
    """The resolved files a read is about, or ``None`` when it cannot be judged stale."""
    extracted = extract_paths(call.parameters)
    if extracted is None:
        return None
    concrete, has_glob = extracted
    if has_glob or not concrete:
        return None
    return [resolve_path(p, workspace_root) for p in concrete]


def _read_time(
    history: Sequence[IContent], call: _Call, responses: Sequence[_Response]
) -> int | None:
    """When the file content was taken: the response's entry time, else the call's."""
    answers = _answers(call, responses)
    if answers:
        stamp = history[answers[0].position[0]].timestamp
        if stamp is not None:
            return stamp
    return history[call.position[0]].timestamp


def _written_after(
    path: str,
    read_at: Position,
    read_time: int | None,
    last_write: dict[str, Position],
    ledger: dict[str, int],
) -> bool:
    written = last_write.get(path)
    if written is not None and written > read_at:
        return True
    on_disk = ledger.get(path)
    return on_disk is not None and read_time is not None and on_disk > read_time
