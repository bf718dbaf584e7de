"""The user's own summary prompt: ``compression.md`` in the storage folder, read at start.

A file that is missing, unreadable, not UTF-8 or blank falls back quietly to the built-in
prompt: a broken override must not stop compression, and the built-in prompt is always a
working answer. Read once when the daemon starts, so no compaction waits on the disk; a
changed file takes effect at the next start.
"""

from __future__ import annotations

from pathlib import Path

from ...core.compression.prompts import COMPRESSION_PROMPT

PROMPT_FILE_NAME = "compression.md"


def load_compression_prompt(folder: Path | None) -> str:
    if folder is None:
        return COMPRESSION_PROMPT
    try:
        text = (folder / PROMPT_FILE_NAME).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return COMPRESSION_PROMPT
    return text if text.strip() else COMPRESSION_PROMPT
