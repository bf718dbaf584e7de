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


Run = tuple[int, int]
"""``[start, stop)``: transcript entries ``start`` to ``stop - 1``, in order."""


def unrange(runs: Sequence[Sequence[int]]) -> list[int]:
    return [seq for start, stop in runs for seq in range(start, stop)]


class Lineage:
    """The conversation as the client last sent it: the transcript entries it is made of, as
    runs (one run while it never forked, so a turn costs no walk of the conversation), and the
    digest of each entry as the client wrote it (a cache, taken again from the transcript
    after a restart).

    ``runs`` is ``None`` until the first sync: a session filled by ``history/append`` counts
    everything it was given."""

    def __init__(self, runs: Sequence[Run] | None = None) -> None:
        self._runs: list[Run] | None = None if runs is None else list(runs)
        self._digests: dict[int, bytes] = {}
        self._sent: list[bytes] | None = None
        """The digests of the lineage's entries in order, as the last sync had them: a
        resend of the same conversation is then one comparison of lists."""

    @property
    def runs(self) -> tuple[Run, ...] | None:
        return None if self._runs is None else tuple(self._runs)

    @runs.setter
    def runs(self, runs: Sequence[Run] | None) -> None:
        self._runs = None if runs is None else list(runs)
        self._sent = None

    def _current_runs(self, transcript_length: int) -> list[Run]:
        if self._runs is None:
            return [(0, transcript_length)] if transcript_length else []
        return self._runs

    def current(self, transcript_length: int) -> list[int]:
        """The lineage's transcript entries, one by one (for a fork; a turn needs none)."""
        return unrange(self._current_runs(transcript_length))

    def size(self, transcript_length: int) -> int:
        return sum(stop - start for start, stop in self._current_runs(transcript_length))

    def seq_at(self, index: int, transcript_length: int) -> int:
        for start, stop in self._current_runs(transcript_length):
            if index < stop - start:
                return start + index
            index -= stop - start
        raise IndexError(index)

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

    def follow(
        self, held: int, start: int, count: int, digests: Sequence[bytes], length: int
    ) -> None:
        """The client's conversation, sent as ``digests``, is now the first ``held`` entries
        of the lineage, then the ``count`` transcript entries from ``start`` on."""
        runs: list[Run] = []
        left = held
        for first, stop in self._current_runs(length):
            if left <= 0:
                break
            take = min(left, stop - first)
            runs.append((first, first + take))
            left -= take
        if count:
            if runs and runs[-1][1] == start:
                runs[-1] = (runs[-1][0], start + count)
            else:
                runs.append((start, start + count))
        self._runs = runs
        self._digests.update(zip(range(start, start + count), digests[held:], strict=True))
        self._sent = list(digests)

    def forget_after(self, transcript_length: int) -> None:
        """Entries from ``transcript_length`` on are gone (a rollback)."""
        self._digests = {k: v for k, v in self._digests.items() if k < transcript_length}
        self._sent = None

    def _sent_as(self, seq: int, digest: bytes, transcript: Entries) -> bool:
        known = self._digests.get(seq)
        if known is None:
            if not _digested(digest, _read_back(transcript.blobs[seq])) and not _digested(
                digest, transcript[seq].to_wire()
            ):
                return False
            self._digests[seq] = digest
            return True
        return known == digest


def _read_back(blob: bytes) -> Any:
    """A stored entry's JSON values read straight from its JSON (what ``to_wire`` gives for
    every entry of the shared transcripts, four times faster than parsing it into IContent
    first: after a restart every entry of a resent conversation is compared once this way).
    None when orjson cannot read it (the slower way then decides)."""
    try:
        return orjson.loads(blob)
    except orjson.JSONDecodeError:
        return None


def _digested(digest: bytes, wire: Any) -> bool:
    """Whether ``digest`` is the entry's, with or without the timestamp the daemon gave it.
    Without it, an entry whose metadata was only that timestamp may have come with no
    ``metadata`` or with ``"metadata": null`` (the daemon stores both alike): either is the
    client's."""
    if not isinstance(wire, dict):
        return False
    if digest == entry_digest(wire):
        return True
    bare = without_timestamp(wire)
    if digest == entry_digest(bare):
        return True
    return (
        bare is not wire
        and "metadata" not in bare
        and digest == entry_digest({**bare, "metadata": None})
    )
