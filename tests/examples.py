"""How many examples a property test runs.

Each test names the count that ``make test`` runs, enough for its claim on a quick run (and
hypothesis replays any example that once failed, from ``.hypothesis/``, first). ``make fuzz``
runs every property at length: ``HDCONTEXT_EXAMPLES_SCALE`` (there 10) multiplies each count.
"""

from __future__ import annotations

import os

SCALE = float(os.environ.get("HDCONTEXT_EXAMPLES_SCALE", "1"))


def examples(count: int) -> int:
    """``count`` examples, times the scale ``make fuzz`` sets."""
    return max(1, round(count * SCALE))
