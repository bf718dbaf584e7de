"""``history/sync``: telling which entries of a resent conversation a session already holds.

A client that resends its whole conversation on every call (a chat panel's language model, an
OpenAI-style API) sends mostly what the session has. Each entry is known by a digest of its JSON
as the client sent it (keys sorted, so that the order a client writes keys in does not
matter), and the session keeps the digests of its conversation, so comparing costs a hash per
entry and no token count. A stored entry carries the timestamp the daemon gave it, which the
client never sent: after a restart the digest of such an entry is taken without it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import orjson

from .stored import Entries

DIGEST_BYTES = 16


def entry_digest(raw: Any) -> bytes:
    """The digest of one entry as JSON values (what the client sent, or ``to_wire()``).

    orjson writes a conversation of megabytes several times faster than the json module,
    which matters: every sync digests the whole conversation. What it cannot write (a lone
    surrogate, an integer beyond 64 bits: refused at the edge, but the core does not rely on
    that) goes through the json module.
    """
    try:
        data = orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        text = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        data = text.encode("utf-8", "surrogatepass")
    return hashlib.blake2b(data, digest_size=DIGEST_BYTES).digest()


def without_timestamp(raw: dict[str, Any]) -> dict[str, Any]:
    """The entry as it was before the daemon stamped it (no ``metadata.timestamp``; no
    ``metadata`` at all if that was all it held)."""
    metadata = raw.get("metadata")
    if not isinstance(metadata, dict) or "timestamp" not in metadata:
        return raw
    rest = {k: v for k, v in metadata.items() if k != "timestamp"}
    out = {k: v for k, v in raw.items() if k != "metadata"}
    if rest:
        out["metadata"] = rest
    return out


def ranges(seqs: list[int]) -> list[list[int]]:
    """``[start, stop)`` runs of a list of increasing integers (how a lineage is saved)."""
    out: list[list[int]] = []
    for seq in seqs:
        if out and out[-1][1] == seq:
            out[-1][1] = seq + 1
        else:
            out.append([seq, seq + 1])
    return out


def unrange(runs: list[list[int]]) -> list[int]:
    return [seq for start, stop in runs for seq in range(start, stop)]


class Lineage:
    """The conversation as the client last sent it: the transcript entry each of its entries
    is, and the digest of each as the client wrote it (a cache, taken again from the
    transcript after a restart).

    ``seqs`` is ``None`` until the first sync: a session filled by ``history/append`` counts
    everything it was given."""

    def __init__(self, seqs: list[int] | None = None) -> None:
        self._seqs = seqs
        self._digests: dict[int, bytes] = {}
        self._sent: list[bytes] | None = None
        """The digests of ``seqs`` in order, as the last sync had them: a resend of the same
        conversation is then one comparison of lists."""

    @property
    def seqs(self) -> list[int] | None:
        return self._seqs

    @seqs.setter
    def seqs(self, seqs: list[int] | None) -> None:
        self._seqs = seqs
        self._sent = None

    def current(self, transcript_length: int) -> list[int]:
        return list(range(transcript_length)) if self._seqs is None else self._seqs

    def held(self, digests: Sequence[bytes], transcript: Entries) -> int:
        """How many of the client's entries (by digest) the lineage holds, in order."""
        sent = self._sent
        if sent is not None and len(digests) >= len(sent) and digests[: len(sent)] == sent:
            return len(sent)
        held = 0
        for seq, digest in zip(self.current(len(transcript)), digests, strict=False):
            if not self._sent_as(seq, digest, transcript):
                break
            held += 1
        return held

    def follow(self, held: int, seqs: Sequence[int], digests: Sequence[bytes], length: int) -> None:
        """The client's conversation, sent as ``digests``, is now the first ``held`` entries
        of the lineage, then the transcript entries ``seqs``."""
        self._seqs = self.current(length)[:held] + list(seqs)
        self._digests.update(zip(seqs, digests[held:], strict=True))
        self._sent = list(digests)

    def forget_after(self, transcript_length: int) -> None:
        """Entries from ``transcript_length`` on are gone (a rollback)."""
        self._digests = {k: v for k, v in self._digests.items() if k < transcript_length}
        self._sent = None

    def _sent_as(self, seq: int, digest: bytes, transcript: Entries) -> bool:
        known = self._digests.get(seq)
        if known is None:
            wire = transcript[seq].to_wire()
            if digest not in {entry_digest(wire), entry_digest(without_timestamp(wire))}:
                return False
            self._digests[seq] = digest
            return True
        return known == digest
