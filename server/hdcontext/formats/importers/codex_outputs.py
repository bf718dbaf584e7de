"""Which Codex tool outputs say that the call never ran.

Codex knows whether a call succeeded (its output payload has a ``success`` flag), but a rollout
writes only the text. The text's frame tells: each shell tool frames the output of a command
that ran (``shell`` and ``apply_patch``: a JSON string ``{"output", "metadata": {"exit_code",
…}}``; ``shell_command``: ``Exit code: N`` first; ``exec_command`` and ``write_stdin``:
``Chunk ID: …``), and anything else it answers is a refusal: the sandbox denied the command,
the user rejected it, the patch did not apply. Read as a result, such a refusal would make a
``sed -i`` that never ran a write and prune the read the model still needs; so it is read as an
error, and counts as neither read nor write. A command that ran and failed keeps its framed
output: its exit status says so (``core/tools/shell/commands.exit_status``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

ENVELOPED = frozenset({"shell", "container.exec", "local_shell", "apply_patch"})
"""Tools whose output, when the call ran, is the JSON envelope."""
HEADERS: dict[str, tuple[str, ...]] = {
    "shell_command": ("Exit code: ",),
    "exec_command": ("Chunk ID: ", "Wall time: ", "Process exited with code "),
    "write_stdin": ("Chunk ID: ", "Wall time: ", "Process exited with code "),
}
"""Tools whose output, when the call ran, opens with one of these."""


def failed(tool: str, output: str) -> bool:
    """Whether ``output`` of a ``tool`` call is a refusal rather than a command's output.
    Tools other than Codex's shell tools and ``apply_patch`` never fail here."""
    if tool in ENVELOPED:
        return not is_envelope(output)
    headers = HEADERS.get(tool)
    return headers is not None and not output.startswith(headers)


def is_envelope(output: str) -> bool:
    """``{"output": …, "metadata": {…}}``, as Codex frames what a command printed."""
    if not output.startswith("{"):
        return False
    try:
        data = json.loads(output)
    except ValueError:
        return False
    return (
        isinstance(data, Mapping) and "output" in data and isinstance(data.get("metadata"), Mapping)
    )
