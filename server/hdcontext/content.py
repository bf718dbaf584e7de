"""The IContent wire model (PROTOCOL.md "Wire shapes"), validated at the edge.

Entries are frozen pydantic models: the core never mutates one, it builds a new one with
``model_copy(update=...)``. Unknown keys on entries, blocks and metadata are kept
(``extra="allow"``) and written back unchanged, and keys the client left out stay out on the
way back (``exclude_unset``), so a history round-trips byte-for-byte in meaning.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

Speaker: TypeAlias = Literal["human", "ai", "tool"]


class _Wire(BaseModel):
    model_config = ConfigDict(
        extra="allow",
        frozen=True,
        alias_generator=to_camel,
        populate_by_name=True,
        serialize_by_alias=True,
    )


class _BlockBase(_Wire):
    def model_post_init(self, context: Any, /) -> None:
        # ``type`` has a default so code can build blocks tersely, but it must always be
        # written out: a block without its tag is not valid IContent.
        self.__pydantic_fields_set__.add("type")


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
    timestamp: int | None = None
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


def text_entry(speaker: Speaker, text: str) -> IContent:
    return IContent(speaker=speaker, blocks=(TextBlock(text=text),))


def is_empty_ai(entry: IContent) -> bool:
    """An AI turn with nothing a model could read (the curated view leaves these out)."""
    if entry.speaker != "ai":
        return False
    return all(isinstance(b, TextBlock) and not b.text.strip() for b in entry.blocks)
