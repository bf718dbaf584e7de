# ruff: noqa: E501 (long literal strings are the example's data)
"""Writes examples/session.json: a small, realistic bug-fixing session in IContent.

The agent reads src/calc.py, searches and runs the tests (bulky output), edits the file,
and reads it again; the user @-includes README.md twice. Run from the repository root:
``python examples/make_session.py``.
"""

import json
from pathlib import Path
from typing import Any

T0 = 1763800000000
entries: list[dict[str, Any]] = []


def add(speaker: str, blocks: list[dict[str, Any]], seconds: int) -> None:
    meta = {"timestamp": T0 + seconds * 1000, "id": f"e{len(entries)}"}
    entries.append({"speaker": speaker, "blocks": blocks, "metadata": meta})


def call(call_id: str, name: str, **params: Any) -> dict[str, Any]:
    return {"type": "tool_call", "id": call_id, "name": name, "parameters": params}


def result(call_id: str, name: str, text: str) -> dict[str, Any]:
    return {"type": "tool_response", "callId": call_id, "toolName": name, "result": text}


helpers = "".join(
    f'\n\ndef helper_{i}(x):\n    """Helper number {i}, kept for the bulk."""\n    return x * {i} + {i}\n'
    for i in range(40)
)
calc_v1 = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n" + helpers
calc_v2 = calc_v1.replace("return a - b", "return a + b")
tests = "from calc import add, mul\n\n\ndef test_add():\n    assert add(2, 3) == 5\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
readme = "# calc\n\nA tiny calculator used by the hdcontext example.\n" + "".join(
    f"\n- feature {i}: described at some length so that the inclusion weighs something"
    for i in range(30)
)
grep = "\n".join(f"src/calc.py:{7 + 5 * i}:def helper_{i}(x):" for i in range(40))
failure = (
    "F.\n=================================== FAILURES ===================================\n"
    "___________________________________ test_add ___________________________________\n\n"
    + "".join(
        f"    frame {i}: calc/internal/module_{i}.py:{10 * i} in call_{i}\n" for i in range(40)
    )
    + "E       assert -1 == 5\nE        +  where -1 = add(2, 3)\n\n"
    "FAILED tests/test_calc.py::test_add - assert -1 == 5\n1 failed, 1 passed in 0.02s"
)

add(
    "human",
    [
        {
            "type": "text",
            "text": f"The add() test fails. Here is the README for context:\n--- README.md ---\n{readme}\n--- End of content ---\nPlease fix it.",
        }
    ],
    0,
)
add(
    "ai",
    [
        {"type": "text", "text": "Let me look at the code and the test."},
        call("c1", "read_file", file_path="src/calc.py"),
        call("c2", "read_file", file_path="tests/test_calc.py"),
    ],
    5,
)
add("tool", [result("c1", "read_file", calc_v1), result("c2", "read_file", tests)], 6)
add("ai", [call("c3", "search_file_content", pattern="def ", path="src")], 8)
add("tool", [result("c3", "search_file_content", grep)], 9)
add("ai", [call("c4", "run_shell_command", command="pytest -q")], 10)
add("tool", [result("c4", "run_shell_command", failure)], 12)
add(
    "ai",
    [
        {"type": "text", "text": "add() subtracts. Fixing it."},
        call(
            "c5",
            "replace",
            file_path="./src/calc.py",
            old_string="return a - b",
            new_string="return a + b",
        ),
    ],
    20,
)
add(
    "tool",
    [result("c5", "replace", "Successfully modified file: src/calc.py (1 replacement).")],
    21,
)
add("ai", [call("c6", "run_shell_command", command="pytest -q")], 25)
add("tool", [result("c6", "run_shell_command", "..\n2 passed in 0.01s")], 27)
add("ai", [{"type": "text", "text": "Fixed: add() now adds, and both tests pass."}], 30)
add(
    "human",
    [
        {
            "type": "text",
            "text": f"Thanks. I updated the README, take another look:\n--- README.md ---\n{readme.replace('tiny', 'small')}\n--- End of content ---\nDoes it still describe calc correctly?",
        }
    ],
    60,
)
add("ai", [call("c7", "read_file", file_path="src/calc.py")], 65)
add("tool", [result("c7", "read_file", calc_v2)], 66)
add(
    "ai",
    [{"type": "text", "text": "Yes: the README matches the code, which now adds correctly."}],
    70,
)

Path("examples/session.json").write_text(json.dumps(entries, indent=1) + "\n")
