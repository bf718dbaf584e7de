"""Codex's code mode (``core/tools/code_mode.py``): an ``exec`` script that makes one call of
a tool with a literal argument is read as that call; anything else is nothing known."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from hdcontext.core.content import ToolCallBlock
from hdcontext.core.tools.code_mode import called, seen_as
from tests.examples import examples

READ = {"cmd": "cat big_module.py", "workdir": "/w"}
PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch\n"


def script(js: str) -> dict[str, str]:
    return {"input": js}


def test_a_read_and_a_patch_as_codex_writes_them() -> None:
    read = f"const r = await tools.exec_command({json.dumps(READ)});\ntext(r.output);\n"
    patch = f"const r = await tools.apply_patch({json.dumps(PATCH)});\ntext(r);\n"
    assert called("exec", script(read)) == ("exec_command", READ)
    assert called("exec", script(patch)) == ("apply_patch", {"input": PATCH})
    assert called("exec", script(f"await tools.exec_command({json.dumps(READ)})")) == (
        "exec_command",
        READ,
    )


def test_a_call_is_seen_as_the_one_it_makes_under_its_own_id() -> None:
    block = ToolCallBlock(
        id="call_1",
        name="exec",
        parameters=script(f"const r = await tools.exec_command({json.dumps(READ)});"),
    )
    seen = seen_as(block)
    assert (seen.id, seen.name, seen.parameters) == ("call_1", "exec_command", READ)
    other = ToolCallBlock(id="call_2", name="exec_command", parameters=READ)
    assert seen_as(other) is other


def test_anything_more_is_nothing_known() -> None:
    one = f"const r = await tools.exec_command({json.dumps(READ)});"
    for js in (
        one + f"\nconst s = await tools.exec_command({json.dumps(READ)});",  # two calls
        one + "\nfor (const x of [1]) {}",  # a loop after it
        "const p = 'a.py';\nawait tools.exec_command({cmd: 'cat ' + p});",  # built at run time
        "await tools.exec_command(args);",  # a variable
        one + "\ntext(other.output);",  # shows something else
        "await tools.exec_command([1, 2]);",  # neither an object nor a string
    ):
        assert called("exec", script(js)) is None, js
    assert called("exec_command", script(one)) is None  # not code mode's tool
    assert called("exec", {"input": 3}) is None
    assert called("exec", "no parameters") is None


SHOWN = ("", "text(r)", "text(r);", "text(r.output)", "text(r.output);", "console.log(r);")


@given(st.text(max_size=80))
@settings(max_examples=examples(200))
def test_a_script_with_more_after_its_call_is_never_read_as_the_call(tail: str) -> None:
    """Whatever follows the call but a line showing its result makes it nothing known: a read
    is never taken from a script that may do more (a write it made would be lost)."""
    one = f"const r = await tools.exec_command({json.dumps(READ)});\n"
    if called("exec", script(one + tail)) is not None:
        assert tail.strip() in SHOWN
