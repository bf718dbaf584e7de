"""A call as the provider billed it (``history/usage``), held against what the daemon expected.

The daemon prices each call before it is made (``ledger.CallBill``); the provider's bill comes
after it. The two never agree to the token (the provider counts the system prompt and the tools,
with its own tokenizer), but the share of input read from the cache should: when it is far off,
the price model does not fit the provider, and the daemon logs it. A bill that neither read nor
wrote the cache says more: the provider is not caching this conversation, so the prompt cache
holds nothing the schedule could lose.
"""

from __future__ import annotations

from dataclasses import dataclass

from .ledger import CallBill
from .prompt_cache import PromptCache

MISPREDICTED = 0.25
"""How far the billed share of input read from the cache may be from the expected one before
the call counts as mispredicted."""


@dataclass(frozen=True)
class UsageCheck:
    """A call as the daemon expected it billed, and as the provider billed it."""

    expected_tokens: int
    expected_read: int
    expected_write: int
    billed_tokens: int
    billed_read: int
    billed_write: int

    @property
    def off(self) -> bool:
        """Whether the share of input read from the cache is more than a quarter off what
        the daemon expected (the counts differ anyway: the provider's include the system
        prompt and tools, and its tokenizer is its own)."""
        if not self.expected_tokens or not self.billed_tokens:
            return False
        expected = self.expected_read / self.expected_tokens
        billed = self.billed_read / self.billed_tokens
        return abs(expected - billed) > MISPREDICTED


def expected_of(bill: CallBill) -> tuple[int, int, int]:
    """A call's input as the daemon expects it billed: (tokens, read from the cache, written
    to it), kept until its usage comes."""
    charge = bill.charge
    return charge.total, charge.read, charge.write + charge.write_long


def billed(
    prompt: PromptCache,
    expected: tuple[int, int, int] | None,
    input_tokens: int,
    read: int,
    write: int,
) -> tuple[PromptCache, UsageCheck | None]:
    """The prompt cache once the provider's bill came (cold when the call neither read nor
    wrote it), and the bill held against what the daemon ``expected`` of the call that waited
    for it (``None``: no call did)."""
    if input_tokens > 0 and read == 0 and write == 0:
        prompt = prompt.reported_cold()
    check = None if expected is None else UsageCheck(*expected, input_tokens, read, write)
    return prompt, check
