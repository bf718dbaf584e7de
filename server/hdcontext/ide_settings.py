"""The IDE's ``hdcontext`` settings, as the daemon last received them.

Two sources feed them: ``initializationOptions.settings`` (given once, at start) and the section
pulled with ``workspace/configuration`` (again on every change, or pushed in
``workspace/didChangeConfiguration`` by clients that cannot be asked). PROTOCOL.md says "pulled,
else initializationOptions.settings"; this is applied key by key, so a client that pulls only
part of the section keeps the rest of what it passed at start.

A refused value never replaces a good one: ``settings.merge_section`` keeps the previous value of
that key, and the refusals come back for the caller to report (``window/logMessage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .settings import SettingError, merge_section


class IdeSettings:
    def __init__(self) -> None:
        self._initial: dict[str, object] = {}
        self._pulled: dict[str, object] = {}
        self._effective: dict[str, object] = {}

    def current(self) -> dict[str, object]:
        """The effective IDE settings, dotted keys (what ``Session(settings=...)`` reads)."""
        return self._effective

    def set_initial(self, section: Mapping[str, Any]) -> list[SettingError]:
        self._initial, errors = merge_section({}, section)
        self._update()
        return errors

    def apply_pulled(self, section: Mapping[str, Any]) -> list[SettingError]:
        """A freshly pulled section replaces the last one; bad values keep their old value."""
        merged, errors = merge_section(self._effective, section)
        # merge_section kept the previous value of a refused key only if it had one; a key
        # whose previous value came from the initial settings falls back to it in _update.
        self._pulled = merged
        self._update()
        return errors

    def _update(self) -> None:
        self._effective = {**self._initial, **self._pulled}
