"""What a compaction decided, as the daemon's DEBUG lines say it: the passes that ran, what
density and compression took out, the cache's reading of the call, and nothing of the
conversation itself (a log is shared more readily than a transcript).
"""

from __future__ import annotations

from ...core.session.reply import CompactResult


def decided(result: CompactResult) -> str:
    """What a compaction decided, for a DEBUG line: counts, names and positions only."""
    cache = result.cache
    parts = [f"passes {', '.join(s.name for s in result.steps) or 'none'}"]
    density = result.density
    if density is not None:
        parts.append(
            f"density removed {density.removals}, replaced {density.replacements} "
            f"({density.tokens_before} → {density.tokens_after} tokens)"
        )
    if result.compression is not None:
        c = result.compression
        parts.append(f"compressed by {c.strategy} ({c.tokens_before} → {c.tokens_after} tokens)")
    parts.append(
        f"{result.status.entry_count} entries, {result.status.total_tokens} tokens"
        f"{', over the limit' if result.over_limit else ''}"
    )
    parts.append(
        f"cache {cache.pricing} {'cold' if cache.cold else 'warm'}: {cache.stable_prefix} "
        f"entries as last time, edits {cache.edits_applied} applied, {cache.edits_pending} "
        f"waiting ({cache.pending_tokens} tokens), breakpoints {cache.breakpoints}"
    )
    return "; ".join(parts)
