"""The IDE's ``hdcontext`` settings, as the daemon last received them.

Two sources feed them: ``initializationOptions.settings`` (given once, at start) and the section
pulled with ``workspace/configuration`` (again on every change, or pushed in
``workspace/didChangeConfiguration`` by clients that cannot be asked). PROTOCOL.md says "pulled,
else initializationOptions.settings": the initial settings stand until a section arrives, and
from then on the latest section is the whole truth. Layering them key by key would let a value
the user removed in the IDE live on from the start-up options, with no way to clear it.

A refused value never replaces a good one: ``settings.merge_section`` keeps the previous value of
that key, and the refusals come back for the caller to report (``window/logMessage``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...core.settings import SettingError, merge_section


class IdeSettings:
    def __init__(self) -> None:
        self._initial: dict[str, object] = {}
        self._pulled: dict[str, object] | None = None
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
        # A refused key keeps the value in force before, whichever source it came from.
        self._pulled, errors = merge_section(self._effective, section)
        self._update()
        return errors

    def _update(self) -> None:
        self._effective = dict(self._initial if self._pulled is None else self._pulled)
