"""``stats/savings``: the editor's savings view, the figures and page of ``hdcontext stats``.

Read through the daemon's own store (its thread, its connection: the folder's lock is this
daemon's), so a reply sees every commit answered before it; no session is locked or loaded.
"""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING, Any

from ..storage.records import StoreError
from ..storage.store import Store
from .wire import SavingsParams, parse_params, storage_unusable

if TYPE_CHECKING:  # imported when asked (below)
    from ...core.stats.costs import PriceOverrides


async def savings(store: Store, shown: str, prices: PriceOverrides, raw: object) -> dict[str, Any]:
    """What the calls of these sessions (of the whole storage folder when none are named)
    cost and would have cost without hdcontext, as the savings page shows them
    (``core.stats.page_json``: counts, prices, model names and session ids, never content),
    and with a ``nonce`` the page itself for the editor's webview. A named session the folder
    does not hold is no error (a window may name one deleted meanwhile): it is listed in
    ``missing`` and adds nothing. ``prices``: the user's ``cache.prices``."""
    # Imported here: a daemon start does not pay for the savings view until it is asked.
    from ...core.stats.costs import page_json
    from ..stats.page import render
    from ..stats.report import StatsError, of_rows

    p = parse_params(SavingsParams, raw)
    asked = None if p.sessions is None else list(dict.fromkeys(p.sessions))
    try:
        read = await store.calls_for_stats(asked)
        report = await asyncio.to_thread(
            of_rows, read.calls, read.overrides, read.stored, prices=prices, only=asked
        )
    except (StatsError, StoreError) as exc:
        raise storage_unusable(f"the savings cannot be read: {exc}") from None
    figures = page_json(report, shown, None, time.time_ns() // 1_000_000)
    page = None if p.nonce is None else await asyncio.to_thread(render, figures, nonce=p.nonce)
    stored = set(read.stored)
    return {
        "figures": figures,
        "html": page,
        "missing": [] if asked is None else [sid for sid in asked if sid not in stored],
    }
