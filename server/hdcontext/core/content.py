"""The IContent wire model (PROTOCOL.md "Wire shapes"), validated at the edge.

Entries are frozen pydantic models: the core never mutates one, it builds a new one with
``model_copy(update=...)``. Unknown keys on entries, blocks and metadata are kept
(``extra="allow"``) and written back unchanged, and keys the client left out stay out on the
way back (``exclude_unset``), so a history round-trips byte-for-byte in meaning.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, Self, TypeAlias

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    Strict,
    TypeAdapter,
    ValidationError,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticSerializationError

Speaker: TypeAlias = Literal["human", "ai", "tool"]


class _Wire(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
    )

    def model_post_init(self, context: Any, /) -> None:
        _share_bookkeeping(self)

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        copied = super().model_copy(update=update, deep=deep)
        _share_bookkeeping(copied)
        return copied


# Every model carries a set of the fields it was given (for ``exclude_unset``) and a dict of
# its unknown keys: 280 bytes a model for what is, entry after entry, the same few sets and
# mostly an empty dict. A frozen model never changes them (pydantic gives a copy copies of
# both), so models with equal sets share one, and models without unknown keys share one empty
# dict, whether validated or copied: about a fifth of what parsed entries take in memory (a
# history holds its entries as JSON, stored.py, but whole-history work parses them all at once).
# Bounded, so odd clients cannot grow the table.
_SHARED_FIELDS: dict[frozenset[str], set[str]] = {}
_SHARED_FIELDS_MAX = 1024
_NO_EXTRA: dict[str, Any] = {}


def _share_bookkeeping(model: BaseModel) -> None:
    fields = model.__pydantic_fields_set__
    key = frozenset(fields)
    shared = _SHARED_FIELDS.get(key)
    if shared is None and len(_SHARED_FIELDS) < _SHARED_FIELDS_MAX:
        shared = _SHARED_FIELDS.setdefault(key, set(key))
    if shared is not None:
        object.__setattr__(model, "__pydantic_fields_set__", shared)
    if model.__pydantic_extra__ == {}:
        object.__setattr__(model, "__pydantic_extra__", _NO_EXTRA)


class _BlockBase(_Wire):
    def model_post_init(self, context: Any, /) -> None:
        # ``type`` has a default so code can build blocks tersely, but it must always be
        # written out: a block without its tag is not valid IContent.
        self.__pydantic_fields_set__.add("type")
        super().model_post_init(context)


class TextBlock(_BlockBase):
    type: Literal["text"] = "text"
    text: str


class ToolCallBlock(_BlockBase):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    parameters: JsonValue = None


class ToolResponseBlock(_BlockBase):
    type: Literal["tool_response"] = "tool_response"
    call_id: str
    tool_name: str
    result: JsonValue
    error: str | None = None


class ThinkingBlock(_BlockBase):
    type: Literal["thinking"] = "thinking"
    thought: str


class MediaBlock(_BlockBase):
    type: Literal["media"] = "media"
    mime_type: str
    data: str
    encoding: Literal["url", "base64"]


class CodeBlock(_BlockBase):
    type: Literal["code"] = "code"
    code: str
    language: str | None = None


Block: TypeAlias = Annotated[
    TextBlock | ToolCallBlock | ToolResponseBlock | ThinkingBlock | MediaBlock | CodeBlock,
    Field(discriminator="type"),
]
BLOCK_TYPES = frozenset({"text", "tool_call", "tool_response", "thinking", "media", "code"})


class Metadata(_Wire):
    # Strict: pydantic's lax mode would store ``"123"`` as 123 and ``true`` as 1, and hand
    # back something the client never sent. The string fields need no such care: lax mode
    # turns nothing but bytes (which JSON cannot carry) into a string.
    timestamp: Annotated[int, Strict()] | None = None
    id: str | None = None


class IContent(_Wire):
    speaker: Speaker
    blocks: tuple[Block, ...]
    metadata: Metadata | None = None

    @property
    def timestamp(self) -> int | None:
        return self.metadata.timestamp if self.metadata is not None else None

    def with_blocks(self, blocks: Iterable[Block]) -> IContent:
        return self.model_copy(update={"blocks": tuple(blocks)})

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_unset=True)


_ENTRIES: TypeAdapter[list[IContent]] = TypeAdapter(list[IContent])
# Non-finite numbers come out as Python's json module writes them (the dict path's output).
_ENTRIES_OUT: TypeAdapter[list[IContent]] = TypeAdapter(
    list[IContent], config=ConfigDict(ser_json_inf_nan="constants")
)
_ENTRY: TypeAdapter[IContent] = TypeAdapter(IContent)


class ContentError(ValueError):
    """Invalid IContent; ``errors`` holds one ``path: problem`` line per fault."""

    def __init__(self, errors: Sequence[str]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(self.errors))


def format_loc(loc: Sequence[int | str], prefix: str = "") -> str:
    """Render a pydantic error location as the JSON path PROTOCOL.md shows.

    The discriminated union puts the block's tag into the location
    (``blocks, 0, tool_response, callId``); a client never wrote that segment, so it goes.
    """
    out = prefix
    previous_was_index = False
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
            previous_was_index = True
            continue
        if previous_was_index and part in BLOCK_TYPES:
            previous_was_index = False
            continue
        out += f".{part}" if out else part
        previous_was_index = False
    return out or "(root)"


def _message(err: Any) -> str:
    msg = str(err["msg"])
    if err["type"] == "missing":
        return "field required"
    return msg[:1].lower() + msg[1:]


def validation_messages(exc: ValidationError, prefix: str = "") -> list[str]:
    return [f"{format_loc(err['loc'], prefix)}: {_message(err)}" for err in exc.errors()]


def parse_entries(raw: Any, path: str = "entries") -> list[IContent]:
    """Validate a JSON array of entries; raise ContentError naming each bad path."""
    try:
        return _ENTRIES.validate_python(raw)
    except ValidationError as exc:
        raise ContentError(validation_messages(exc, path)) from None


def parse_entries_json(data: str | bytes, path: str = "entries") -> list[IContent]:
    try:
        return _ENTRIES.validate_json(data)
    except ValidationError as exc:
        raise ContentError(validation_messages(exc, path)) from None


def parse_entry(raw: Any, path: str = "entry") -> IContent:
    try:
        return _ENTRY.validate_python(raw)
    except ValidationError as exc:
        raise ContentError(validation_messages(exc, path)) from None


def dump_entries(entries: Iterable[IContent]) -> list[dict[str, Any]]:
    return [entry.to_wire() for entry in entries]


def entries_json(entries: Iterable[IContent]) -> bytes:
    """``dump_entries`` as JSON text (UTF-8), written by pydantic's serializer in one call.

    A whole history in a reply is megabytes: built as dicts and walked by the json module
    it costs several times this, and leaves the daemon's heap fragmented with the dicts.
    Text pydantic cannot write as UTF-8 (a lone surrogate) goes the dict way, escaped.
    """
    listed = list(entries)
    try:
        return _ENTRIES_OUT.dump_json(listed, exclude_unset=True)
    except PydanticSerializationError:
        return json.dumps(dump_entries(listed)).encode("ascii")


def entry_json(entry: IContent) -> bytes:
    """One entry as ``entries_json`` writes it inside the array: compact UTF-8 JSON."""
    try:
        return _ENTRIES_OUT.dump_json([entry], exclude_unset=True)[1:-1]
    except PydanticSerializationError:
        return json.dumps(entry.to_wire(), separators=(",", ":")).encode("ascii")


def entry_from_json(data: str | bytes) -> IContent:
    """An entry from its JSON, validated. pydantic's JSON reader refuses an escaped lone
    surrogate (which ``entry_json`` may write); the json module reads it."""
    try:
        return _ENTRY.validate_json(data)
    except ValidationError:
        return _ENTRY.validate_python(json.loads(data))


def text_entry(speaker: Speaker, text: str) -> IContent:
    return IContent(speaker=speaker, blocks=(TextBlock(text=text),))


def is_empty_ai(entry: IContent) -> bool:
    """An AI turn with nothing a model could read (the curated view leaves these out)."""
    if entry.speaker != "ai":
        return False
    return all(isinstance(b, TextBlock) and not b.text.strip() for b in entry.blocks)


def stamped(entries: Sequence[IContent], now: int) -> list[IContent]:
    """Every entry with a timestamp, ``now`` where it had none: it orders tool reads against
    writes seen on disk."""
    out: list[IContent] = []
    for entry in entries:
        if entry.timestamp is not None:
            out.append(entry)
            continue
        meta = entry.metadata or Metadata()
        out.append(
            entry.model_copy(update={"metadata": meta.model_copy(update={"timestamp": now})})
        )
    return out
