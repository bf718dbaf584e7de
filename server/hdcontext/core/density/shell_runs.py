"""The shell calls of a history in the order they ran, each with its effect, kept across turns.

What a shell command read or wrote depends on the directory it ran in, and for a shell that
keeps its directory that depends on every ``cd`` before it (``shell.effects_in_order``). Redoing
that walk over the whole history after every turn costs the session; but a step depends only
on the call and the directory before it (``shell.next_effect``). So this keeps, for every call,
its effect and the directory after it, and when calls come, go or change success, redoes the
steps from the earliest change on and stops as soon as the directory before a call it has not
touched is what it was: every later step would come out the same.

Positions are ``(entry key, block index)`` (``history/journal.py``): they keep their order when
entries before them are removed. The success of a call is the caller's knowledge (it holds the
responses), asked for through ``succeeded`` when a call's own inputs changed.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable
from dataclasses import dataclass

from ..tools.shell.commands import ShellCall, ShellEffect, next_effect, shell_root
from .edits import Position


@dataclass(frozen=True, slots=True)
class ShellStep:
    """One shell call's place in the walk (``None`` directories: unknown)."""

    effect: ShellEffect | None
    succeeded: bool
    before: str | None
    after: str | None


class ShellRuns:
    def __init__(self, workspace_root: str) -> None:
        self._root = shell_root(workspace_root)
        self._order: list[Position] = []
        self._calls: dict[Position, str] = {}
        """Each shell call's id. Not its command: that is read again from its entry when its
        step is redone (``update``'s ``call_at``), so that a history's commands, which can
        be a sixth of its JSON, are not held twice."""
        self._steps: dict[Position, ShellStep] = {}
        self._by_id: dict[str, list[Position]] = {}
        self._dirty: set[Position] = set()  # calls whose own inputs changed
        self._redo_from: Position | None = None  # where a removed call was
        self._gone: set[str] = set()  # ids of removed calls

    # -- changes --------------------------------------------------------------------------

    def add(self, position: Position, call_id: str) -> None:
        insort(self._order, position)
        self._calls[position] = call_id
        insort(self._by_id.setdefault(call_id, []), position)
        self.touch(call_id)  # the others with this id are no longer alone

    def remove(self, position: Position) -> None:
        call_id = self._calls.pop(position)
        del self._order[bisect_left(self._order, position)]
        self._steps.pop(position, None)
        self._dirty.discard(position)
        same = self._by_id[call_id]
        del same[bisect_left(same, position)]
        if not same:
            del self._by_id[call_id]
        self.touch(call_id)
        self._gone.add(call_id)
        if self._redo_from is None or position < self._redo_from:
            self._redo_from = position

    def touch(self, call_id: str) -> None:
        """The responses of ``call_id`` changed: its calls' success must be asked again."""
        self._dirty.update(self._by_id.get(call_id, ()))

    # -- the walk -------------------------------------------------------------------------

    def update(
        self,
        succeeded: Callable[[str, Position], bool],
        call_at: Callable[[Position], tuple[str, str | None]],
    ) -> set[str]:
        """Redo the steps that may have changed; the ids whose effect or success changed.

        ``succeeded(call_id, position)``: answered, without an error or a failing exit status.
        A call whose id other shell calls share never succeeds (its responses cannot be told
        apart), as in ``read_write``. ``call_at(position)``: the call's command and the
        directory it names (``None``: the shell's own), as its entry holds them now.
        """
        changed = self._gone
        self._gone = set()
        dirty = self._dirty
        self._dirty = set()
        starts = list(dirty)
        if self._redo_from is not None:
            starts.append(self._redo_from)
            self._redo_from = None
        if not starts:
            return changed
        i = bisect_left(self._order, min(starts))
        last = max((bisect_left(self._order, p) for p in dirty), default=-1)
        directory = self._steps[self._order[i - 1]].after if i > 0 else self._root
        while i < len(self._order):
            position = self._order[i]
            old = self._steps.get(position)
            if old is not None and position not in dirty and old.before == directory:
                if i > last:
                    break  # this step and every later one come out as they were
                directory = old.after
                i += 1
                continue
            call_id = self._calls[position]
            if old is None or position in dirty:
                ok = len(self._by_id[call_id]) == 1 and succeeded(call_id, position)
            else:
                ok = old.succeeded
            command, cwd = call_at(position)
            effect, after = next_effect(ShellCall(command, cwd, ok), directory, self._root)
            step = ShellStep(effect, ok, directory, after)
            if old is None or (old.effect, old.succeeded) != (effect, ok):
                changed.add(call_id)
            self._steps[position] = step
            directory = after
            i += 1
        return changed

    def run_of(self, call_id: str) -> ShellStep | None:
        """The step of the one shell call with this id that has an effect, else ``None``."""
        positions = self._by_id.get(call_id)
        if positions is None or len(positions) != 1:
            return None
        step = self._steps.get(positions[0])
        return step if step is not None and step.effect is not None else None
