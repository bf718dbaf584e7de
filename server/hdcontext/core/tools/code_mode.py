"""Codex's code mode: one tool call that stands for another.

Codex CLI's newest models offer the model one freeform tool, ``exec``, whose input is
JavaScript that calls the agent's tools: ``const r = await tools.exec_command({"cmd": "cat
a.py"}); text(r.output);`` reads a file through the shell, ``await
tools.apply_patch("*** Begin Patch…")`` writes one. The rules that see reads and writes know
``exec_command`` and ``apply_patch``; so an ``exec`` call whose script is one such call, with
a literal argument and nothing else done, is read as that call (``called``). Anything else
(two calls, a variable, a loop, an argument built at run time) is nothing known: missing a read
keeps a stale one, inventing one would lose a live one.

Only the rules' reading changes: the call itself, its script and its id, stays as the model
wrote it, and no edit rewrites a script.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Final

from ..content import ToolCallBlock

CODE_TOOL: Final = "exec"
SCRIPT_KEY: Final = "input"
"""A freeform call's parameters (``{"input": <its script>}``, the Responses importer's)."""

_CALL = re.compile(
    r"""\A\s*(?:(?:const|let|var)\s+(?P<var>[A-Za-z_$][\w$]*)\s*=\s*)?await\s+
    tools\.(?P<tool>[A-Za-z_][\w]*)\s*\(""",
    re.VERBOSE,
)
_AFTER = re.compile(r"\s*\)\s*;?\s*")
_SHOWN = re.compile(
    r"\A(?:(?:text|console\.log)\s*\(\s*(?P<var>[A-Za-z_$][\w$]*)(?:\.[A-Za-z_$][\w$]*)?"
    r"\s*\)\s*;?\s*)?\Z"
)
_DECODER = json.JSONDecoder()


def called(name: str, parameters: object) -> tuple[str, object] | None:
    """The tool call an ``exec`` call's script makes, as (its tool's name, its parameters:
    an object argument as it is, a string one as ``{"input": …}``, a freeform tool's), when
    the script makes exactly that one call and shows its result at most; else ``None``."""
    if name != CODE_TOOL or not isinstance(parameters, Mapping):
        return None
    script = parameters.get(SCRIPT_KEY)
    if not isinstance(script, str):
        return None
    found = _CALL.match(script)
    if found is None:
        return None
    try:
        argument, end = _DECODER.raw_decode(script, _skip_blanks(script, found.end()))
    except ValueError:
        return None
    rest = _AFTER.match(script, end)
    if rest is None:
        return None
    shown = _SHOWN.match(script[rest.end() :])
    if shown is None or (shown.group("var") and shown.group("var") != found.group("var")):
        return None
    if isinstance(argument, dict):
        return found.group("tool"), argument
    if isinstance(argument, str):
        return found.group("tool"), {SCRIPT_KEY: argument}
    return None


def seen_as(block: ToolCallBlock) -> ToolCallBlock:
    """The call as the read and write rules see it: the call a code-mode script makes, under
    the script's call id, or the call itself."""
    inner = called(block.name, block.parameters)
    if inner is None:
        return block
    name, parameters = inner
    return block.model_copy(update={"name": name, "parameters": parameters})


def _skip_blanks(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at
