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
from typing import Any

import orjson

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
