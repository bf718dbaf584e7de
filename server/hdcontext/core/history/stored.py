"""Entries kept as their wire JSON: how a history holds what it holds.

A session is mostly text: file contents, tool output, prose. As CPython strings inside one
pydantic object per block, a session takes about three times its JSON size (a string with one
non-Latin character stores every character in 2 or 4 bytes, and each model carries its
bookkeeping). Kept as the compact UTF-8 JSON of each entry (``content.entry_json``), it takes
its JSON size. Nothing on a turn's path needs the old entries as objects: the density passes
keep what they learnt in their indexes and see only the entries that changed, token counts
are kept beside the entries, and a reply is the entries' JSON joined. Whole-history work
(compression, a custom strategy's optimize, the command line's tables) parses the entries it
reads, once.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import overload

from ..content import IContent, entry_from_json

Blob = bytes
"""One entry as ``content.entry_json`` writes it, or ``pack``ed."""

PACK_MIN = 512
"""An entry's JSON this long or longer is packed once it has left the working view (a
shorter one gains little from zlib)."""
_PACKED = b"x"
"""How a packed blob starts (a zlib stream's first byte); an entry's JSON starts with ``{``."""


def pack(blob: Blob) -> Blob:
    """A transcript entry the working view no longer holds as it was appended (an edit
    replaced or dropped it, a summary took its place): kept compressed, since only a look
    back reads it again (``history/retrieve``, a fork, a restart's comparison, the exported
    transcript). The pruned originals are about half a long session's JSON, and pack to
    about 0.44 of it."""
    if len(blob) < PACK_MIN or blob[:1] == _PACKED:
        return blob
    return zlib.compress(blob, 1)


def unpack(blob: Blob) -> Blob:
    """The entry's JSON, whether it was packed or not."""
    return zlib.decompress(blob) if blob[:1] == _PACKED else blob


def parse(blob: Blob) -> IContent:
    """The entry, whether it was packed or not."""
    return entry_from_json(unpack(blob))


class Unpacked(Sequence[Blob]):
    """A list of blobs, some packed, read as their JSON (what a reader of the transcript
    gets: a packed entry is unpacked as it is read, any other is the very object held)."""

    __slots__ = ("_blobs",)

    def __init__(self, blobs: Sequence[Blob]) -> None:
        self._blobs = blobs

    def __len__(self) -> int:
        return len(self._blobs)

    @overload
    def __getitem__(self, index: int) -> Blob: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Blob]: ...

    def __getitem__(self, index: int | slice) -> Blob | Sequence[Blob]:
        if isinstance(index, slice):
            return [unpack(b) for b in self._blobs[index]]
        return unpack(self._blobs[index])

    def __iter__(self) -> Iterator[Blob]:
        return map(unpack, self._blobs)


class Entries(Sequence[IContent]):
    """A read-only view of stored entries as IContent: an item is parsed when it is read.

    Reading one entry costs its parse (microseconds); iterating costs the whole history's,
    so code that reads every entry more than once takes ``list(entries)`` first.
    ``json()`` is the JSON array of the entries, made without parsing any of them. Its
    blobs are JSON: a transcript, which holds some packed, is read through ``Unpacked``.
    """

    __slots__ = ("_blobs",)

    def __init__(self, blobs: Sequence[Blob]) -> None:
        self._blobs = blobs

    @property
    def blobs(self) -> Sequence[Blob]:
        return self._blobs

    def __len__(self) -> int:
        return len(self._blobs)

    @overload
    def __getitem__(self, index: int) -> IContent: ...

    @overload
    def __getitem__(self, index: slice) -> Entries: ...

    def __getitem__(self, index: int | slice) -> IContent | Entries:
        if isinstance(index, slice):
            return Entries(self._blobs[index])
        return entry_from_json(self._blobs[index])

    def __iter__(self) -> Iterator[IContent]:
        return map(entry_from_json, self._blobs)

    def __eq__(self, other: object) -> bool:
        """Equal to another view or a list of the same entries (as IContent compares)."""
        if isinstance(other, Entries):
            return list(self._blobs) == list(other._blobs) or list(self) == list(other)
        if isinstance(other, (list, tuple)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Entries({len(self._blobs)} stored)"

    def json_parts(self) -> list[bytes]:
        """The JSON array of the entries as pieces to join (``[``, the entries, commas, ``]``):
        a reply takes them into its body as they are, so the history is copied once."""
        if not self._blobs:
            return [b"[]"]
        parts = [b","] * (2 * len(self._blobs) + 1)
        parts[0], parts[-1] = b"[", b"]"
        parts[1:-1:2] = self._blobs
        return parts

    def json(self) -> bytes:
        return b"".join(self.json_parts())
