"""The replies of PROTOCOL.md, typed: what the session answers and the edge writes out once.

Field names are Python's; each serializes under its camelCase wire name. The history itself
is not here: a reply carrying one gets it from the session as stored entries, which the edge
joins into the message without parsing them (``edges/daemon/json_text.py``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, computed_field
from pydantic.alias_generators import to_camel

from ..density.types import DensityMetadata
from ..settings import Source


class _Reply(BaseModel):
    model_config = ConfigDict(
        frozen=True, alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True
    )

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


class Usage(_Reply):
    """What the provider billed, summed over the calls ``history/usage`` reported."""

    calls: int = 0
    input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0

    def plus(self, input_tokens: int, read: int, write: int, output: int = 0) -> Usage:
        """These sums with one more call's figures."""
        return self.model_copy(
            update={
                "calls": self.calls + 1,
                "input_tokens": self.input_tokens + input_tokens,
                "cache_read_tokens": self.cache_read_tokens + read,
                "cache_write_tokens": self.cache_write_tokens + write,
                "output_tokens": self.output_tokens + output,
            }
        )


class PricedAs(_Reply):
    """Which row of the price table prices a session (``core/prices.py``)."""

    model: str | None
    """The row's model id (``None``: a provider's preset, ``cache.pricing`` naming another
    provider than the model's)."""
    match: str
    """``exact``, ``family``, ``fallback`` (not in the table: the provider's most common row
    stands in), ``override`` (the user's ``cache.prices``) or ``preset``."""


class Status(_Reply):
    """What a status bar shows (PROTOCOL.md "Status")."""

    session_id: str
    version: int
    entry_count: int
    total_tokens: int
    context_limit: int
    threshold: float
    strategy: str
    saved_tokens: int
    pending_tokens: int = 0
    usage: Usage = Usage()
    masked_outputs: int = 0
    """Tool outputs masking made pointers so far (``history/retrieve`` gives each back)."""
    masked_tokens: int = 0
    """What those outputs weighed, less their pointers (part of ``saved_tokens``)."""
    predicted: Usage = Usage()
    """What the daemon expected of the calls ``usage`` reports, in its own count of the
    history's tokens (the provider counts the system prompt and tools too): input, read from
    the cache, written to it."""
    mispredicted: int = 0
    """Reported calls whose share of input read from the cache was more than a quarter off
    what the daemon expected: a price model that does not fit the provider shows here."""
    priced_as: PricedAs | None = None
    """The price-table row the session's calls are priced by, and how it was found."""

    @computed_field  # type: ignore[prop-decorator]
    @property
    def percent(self) -> float:
        return 100.0 * self.total_tokens / self.context_limit


class DensityCounts(_Reply):
    """REQ-HD-001.8: entries each rule removed or replaced."""

    read_write_pairs_pruned: int = 0
    file_deduplications_pruned: int = 0
    recency_pruned: int = 0
    masked_pruned: int = 0

    @classmethod
    def of(cls, metadata: DensityMetadata) -> DensityCounts:
        return cls(
            read_write_pairs_pruned=metadata.read_write_pairs_pruned,
            file_deduplications_pruned=metadata.file_deduplications_pruned,
            recency_pruned=metadata.recency_pruned,
            masked_pruned=metadata.masked_pruned,
        )


class DensityReport(_Reply):
    removals: int
    replacements: int
    metadata: DensityCounts
    tokens_before: int
    tokens_after: int


class CompressionReport(_Reply):
    strategy: str
    tokens_before: int
    tokens_after: int
    transcript_path: str | None


class CacheReport(_Reply):
    """How the returned history meets the provider's prompt cache (PROTOCOL.md "cache")."""

    pricing: str
    stable_prefix: int
    """Entries of the returned history unchanged from the previous reply."""
    edits_applied: int
    edits_pending: int
    pending_tokens: int
    cold: bool
    breakpoints: list[int] = []
    """Indices of the returned history whose last block should carry a prompt-cache
    breakpoint, ascending, the last entry always among them."""
    breakpoint_ttls: list[Literal["5m", "1h"]] = []
    """Each breakpoint's lifetime, in the same order: every ``1h`` before every ``5m``."""
    refresh_at: int | None = None
    """With ``cache.refresh``: when a refresh call pays if no model call has come (ms)."""


class CompactSummary(_Reply):
    """``history/compact``'s reply but its history (the edge adds ``history`` or ``delta``)."""

    revision: str
    cache: CacheReport
    status: Status
    density: DensityReport | None
    compression: CompressionReport | None
    over_limit: bool


class SyncReply(Status):
    """``history/sync``: the Status, and what the sync did."""

    appended: int
    forked_at: int | None


class SettingsReply(_Reply):
    """``history/settings`` and ``history/setOverride``: values by wire key, and sources."""

    model_config = ConfigDict(frozen=True)

    values: dict[str, Any]
    sources: dict[str, Source]
