"""OpenAI chat-completions messages to IContent.

Accepts a request body (``{"messages": […]}``) or the bare list. Leading ``system`` and
``developer`` messages become the conversation's system prompt; a later one stays in place as a
``human`` entry marked ``metadata.role`` (so the exporter writes it back with its role).
``user`` messages are ``human`` entries (text, ``image_url``, ``input_audio``, ``file`` parts);
``assistant`` messages are ``ai`` entries: a ``reasoning_content`` or ``reasoning`` string (the
field DeepSeek, vLLM and OpenRouter use) becomes a thinking block, the content text blocks,
each ``tool_calls`` item a tool call with its JSON ``arguments`` parsed. Consecutive ``tool``
messages become one ``tool`` entry, each response named after its call. The legacy
``function_call``/``function`` pair is read too, paired by name.

OpenAI has no error flag on a tool message: whatever went wrong is in its text, and stays there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ...core.content import (
    Block,
    IContent,
    MediaBlock,
    Metadata,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)
from ..conversation import SYSTEM_ROLE_KEY, Conversation, FormatError, role_metadata
from .blocks import entry, json_arguments, make, parse_data_url, text_of_parts

MetadataOf = Callable[[Mapping[str, Any]], Metadata | None]

_SYSTEM_ROLES = ("system", "developer")
_AUDIO_MIME = {"mp3": "audio/mpeg", "wav": "audio/wav"}


def load(data: object) -> Conversation:
    messages = data.get("messages") if isinstance(data, Mapping) else data
    if not isinstance(messages, list):
        raise FormatError("an OpenAI conversation is a list of messages or {messages: [...]}")
    return from_messages(messages)


def from_messages(messages: list[Any], metadata_of: MetadataOf | None = None) -> Conversation:
    """``metadata_of`` gives an entry's metadata from its message (timestamps, for formats
    that record them, like mini-swe-agent's)."""
    builder = _Builder(metadata_of or (lambda _: None))
    system: list[str] = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise FormatError(f"messages[{index}] is not an object")
        role = message.get("role")
        if role in _SYSTEM_ROLES and not builder.entries:
            text = text_of_parts(message.get("content"))
            if text is None:
                raise FormatError(f"messages[{index}].content: a system prompt must be text")
            system.append(text)
        elif role in _SYSTEM_ROLES:
            builder.system_in_place(str(role), message)
        elif role == "user":
            builder.user(message)
        elif role == "assistant":
            builder.assistant(message)
        elif role in ("tool", "function"):
            builder.tool(message)
        else:
            raise FormatError(f"messages[{index}].role {role!r} is not an OpenAI chat role")
    return Conversation(tuple(builder.entries), system="\n\n".join(system) if system else None)


class _Builder:
    def __init__(self, metadata_of: MetadataOf) -> None:
        self.entries: list[IContent] = []
        self._metadata_of = metadata_of
        self._names: dict[str, str] = {}
        self._legacy: list[ToolCallBlock] = []  # function_call calls not yet answered
        self._legacy_count = 0

    def _push(self, speaker: Any, blocks: list[Block], message: Mapping[str, Any]) -> None:
        self.entries.append(entry(speaker, blocks, self._metadata_of(message)))

    def system_in_place(self, role: str, message: Mapping[str, Any]) -> None:
        text = text_of_parts(message.get("content")) or ""
        meta = self._metadata_of(message)
        extra = {SYSTEM_ROLE_KEY: role}
        if meta is not None:
            metadata = Metadata.model_validate({**meta.model_dump(exclude_unset=True), **extra})
        else:
            metadata = role_metadata(role)
        self.entries.append(entry("human", [TextBlock(text=text)], metadata))

    def user(self, message: Mapping[str, Any]) -> None:
        self._push("human", user_parts(message.get("content")), message)

    def assistant(self, message: Mapping[str, Any]) -> None:
        blocks: list[Block] = []
        for field in ("reasoning_content", "reasoning"):
            thought = message.get(field)
            if isinstance(thought, str) and thought:
                blocks.append(ThinkingBlock(thought=thought))
                break
        content = message.get("content")
        if isinstance(content, str):
            if content:
                blocks.append(TextBlock(text=content))
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, Mapping) and part.get("type") in ("text", "refusal"):
                    text = part.get("text", part.get("refusal", ""))
                    blocks.append(TextBlock(text=text if isinstance(text, str) else ""))
        for raw in message.get("tool_calls") or []:
            call = _tool_call(raw)
            if call is not None:
                self._names[call.id] = call.name
                blocks.append(call)
        legacy = message.get("function_call")
        if isinstance(legacy, Mapping):
            self._legacy_count += 1
            call = ToolCallBlock(
                id=f"function_call_{self._legacy_count}",
                name=str(legacy.get("name")),
                parameters=json_arguments(legacy.get("arguments")),
            )
            self._legacy.append(call)
            blocks.append(call)
        if not blocks:
            # An empty answer, as the source has it; the repair every import goes through
            # (core.validity) drops it, as providers refuse blank text.
            blocks.append(TextBlock(text=""))
        self._push("ai", blocks, message)

    def tool(self, message: Mapping[str, Any]) -> None:
        call_id = message.get("tool_call_id")
        if message.get("role") == "function":
            call_id = self._answer_legacy(str(message.get("name")))
        call_id = str(call_id)
        content = message.get("content")
        text = text_of_parts(content)
        response = ToolResponseBlock(
            call_id=call_id,
            tool_name=self._names.get(call_id, str(message.get("name") or "unknown")),
            result=text if text is not None else content,
        )
        last = self.entries[-1] if self.entries else None
        if last is not None and last.speaker == "tool":
            self.entries[-1] = last.with_blocks((*last.blocks, response))
        else:
            self._push("tool", [response], message)

    def _answer_legacy(self, name: str) -> str:
        for k, call in enumerate(self._legacy):
            if call.name == name:
                del self._legacy[k]
                self._names[call.id] = call.name
                return call.id
        self._legacy_count += 1
        return f"function_call_{self._legacy_count}"


def _tool_call(raw: object) -> ToolCallBlock | None:
    if not isinstance(raw, Mapping):
        return None
    function = raw.get("function")
    if not isinstance(function, Mapping):
        return None
    return ToolCallBlock(
        id=str(raw.get("id")),
        name=str(function.get("name")),
        parameters=json_arguments(function.get("arguments")),
    )


def user_parts(content: object) -> list[Block]:
    if isinstance(content, str):
        return [TextBlock(text=content)]
    blocks: list[Block] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, Mapping):
            continue
        kind = part.get("type")
        if kind == "text":
            blocks.append(TextBlock(text=str(part.get("text", ""))))
        elif kind == "image_url":
            media = _image(part.get("image_url"))
            if media is not None:
                blocks.append(media)
        elif kind == "input_audio":
            audio = part.get("input_audio")
            if isinstance(audio, Mapping):
                fmt = str(audio.get("format", "wav"))
                fields = {
                    "mime_type": _AUDIO_MIME.get(fmt, f"audio/{fmt}"),
                    "data": str(audio.get("data", "")),
                    "encoding": "base64",
                }
                blocks.append(MediaBlock.model_validate(fields))
        elif kind == "file":
            media = _file(part.get("file"))
            if media is not None:
                blocks.append(media)
    return blocks


def _image(image: object) -> MediaBlock | None:
    if isinstance(image, str):
        image = {"url": image}
    if not isinstance(image, Mapping) or not isinstance(image.get("url"), str):
        return None
    url = image["url"]
    inline = parse_data_url(url)
    if inline is not None:
        fields = {"mime_type": inline[0], "data": inline[1], "encoding": "base64"}
    else:
        fields = {"mime_type": "image/*", "data": url, "encoding": "url"}
    return make(MediaBlock, fields, detail=image.get("detail"))


def _file(file: object) -> MediaBlock | None:
    """A ``file`` part with inline data; one that only names an uploaded ``file_id`` has no
    content here, and is left out."""
    if not isinstance(file, Mapping) or not isinstance(file.get("file_data"), str):
        return None
    inline = parse_data_url(file["file_data"])
    if inline is None:
        return None
    fields = {"mime_type": inline[0], "data": inline[1], "encoding": "base64"}
    return make(MediaBlock, fields, filename=file.get("filename"))
