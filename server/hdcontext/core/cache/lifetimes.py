"""Which breakpoints ask the longer lifetime (``cache.ttl: auto``): where a pause would cost
more than the hour's dearer write.

A breakpoint that asks the longer lifetime writes the tokens from where the request reads up
to it at the longer lifetime's price (Anthropic: 2× instead of 1.25×), and its entry outlives
a pause of up to that lifetime: the call after such a pause reads the prefix instead of writing
it all again. So the longer lifetime pays on breakpoint ``b`` when

    chance × keep  >  (write_long − write) × tokens(read, b)

where ``chance`` is the chance that the next gap is such a pause (``rhythm.pause_chance``) and
``keep`` what the call after it saves: the prefix up to ``b`` that no live entry of the longer
lifetime holds yet, read instead of written, less what waiting free edits would take out of
that rewrite and the calls after it (a cold cache lets them apply for nothing). Breakpoints
before the chosen one ask the longer lifetime too (the provider requires the longer ones
first); those the request only reads cost nothing more. Like a batch of edits, the premium is
paid only out of what the session has saved so far (``budget``): a session whose pauses never
come is no dearer than it would have been without hdcontext.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .pricing import Pricing


def last_long(
    breakpoints: Sequence[int],
    *,
    tokens_between: Callable[[int, int], int],
    read: int,
    protected: int,
    pricing: Pricing,
    chance: float,
    horizon: float,
    budget: float,
    free_waiting: int = 0,
) -> int:
    """The index of the last breakpoint that asks the longer lifetime (-1: none does)."""
    write_long = pricing.write_long
    if write_long is None:
        return -1
    premium = write_long - pricing.write
    best, best_value = -1, 0.0
    for k, b in enumerate(breakpoints):
        if b <= read or b <= protected:
            continue  # nothing written there, or a longer-lived entry already holds it
        kept = tokens_between(protected, b)
        # What the call after a pause saves if the entry lives: the rewrite of the prefix (less
        # what free edits would take out of it), and the free edits' saving over the calls
        # after it, which a live cache keeps waiting.
        spared = (pricing.write - pricing.read) * kept - pricing.write * free_waiting
        spared -= horizon * pricing.read * free_waiting
        cost = premium * tokens_between(read, b)
        value = chance * spared - cost
        if value > best_value and cost <= budget:
            best, best_value = k, value
    return best
