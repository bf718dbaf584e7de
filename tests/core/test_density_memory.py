"""What the density engine keeps of a history between turns: its own indexes, not copies of
what the entries say. A shell command and a call's key parameters are read again from the
entry when a rule needs them (``shell_runs.py``, ``masking.py``): the history holds them
already, as JSON, and a session's commands alone can be a sixth of it."""

from __future__ import annotations

import gc
import types
from collections.abc import Iterator

from hdcontext.core.content import IContent
from hdcontext.core.density.engine import DensityEngine
from hdcontext.core.density.types import DensityConfig
from hdcontext.core.history.history import History

from .builders import ai_call, ai_text, human, tool_result

MARK = "only-in-this-command-7f3a"
COMMAND = f"ls -la /w/{MARK}"
"""Neither a read nor a write: what the rules keep of it is its place in the shell walk (a
partial read's command is kept, as the span it showed)."""


def _strings(root: object) -> Iterator[str]:
    """Every string reachable from ``root`` (not through modules, classes or functions)."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, type | types.ModuleType | types.FunctionType):
            continue
        seen.add(id(item))
        if isinstance(item, str):
            yield item
            continue
        stack.extend(gc.get_referents(item))


def _history(answered: bool) -> History:
    entries: list[IContent] = [
        human("look around", ts=1_000),
        ai_call("c1", "Bash", {"command": COMMAND, "description": "look"}, ts=2_000),
        tool_result("c1", "Bash", "line one\n" * 200, ts=3_000),
    ]
    if answered:
        entries.append(ai_text("seen", ts=4_000))
    history = History()
    history.append(entries)
    return history


def test_the_engine_keeps_no_command_nor_key_parameters_of_a_call() -> None:
    config = DensityConfig(
        workspace_root="/w",
        shell_tools=frozenset({"Bash"}),
        masking="cold",
        keep_latest_view=True,
        mask_retention=0,
    )
    engine = DensityEngine()
    history = _history(answered=False)  # not answered yet: nothing is masked, nothing edited
    assert engine.proposals(history, config) == []
    held = [s for p in engine._passes for s in _strings(p) if MARK in s]
    assert held == []
