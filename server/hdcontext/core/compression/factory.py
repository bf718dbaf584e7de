"""The one registry of strategies by name (REQ-HD-004)."""

from __future__ import annotations

from collections.abc import Callable

from ..settings import STRATEGY_NAMES
from .types import CompressionStrategy

__all__ = ["STRATEGY_NAMES", "get_strategy"]


def _builders() -> dict[str, Callable[[], CompressionStrategy]]:
    # Imported here so that settings (which needs only the names) does not pull in every
    # strategy module, and so that a strategy module may import settings-free helpers freely.
    from .high_density import HighDensityStrategy
    from .middle_out import MiddleOutStrategy
    from .one_shot import OneShotStrategy
    from .top_down import TopDownTruncationStrategy

    return {
        "high-density": HighDensityStrategy,
        "middle-out": MiddleOutStrategy,
        "top-down-truncation": TopDownTruncationStrategy,
        "one-shot": OneShotStrategy,
    }


def get_strategy(name: str) -> CompressionStrategy:
    """The strategy registered under ``name``; ValueError for an unknown name."""
    builders = _builders()
    if name not in builders:
        raise ValueError(
            f"unknown compression strategy '{name}' (known: {', '.join(STRATEGY_NAMES)})"
        )
    return builders[name]()
