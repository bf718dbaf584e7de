"""A block as the Gemini part it is written as, and the shape a request's part keeps.

Both ways of Gemini ``contents`` use it (``importers/gemini_contents.py``,
``exporters/gemini.py``), so that what the importer compares a part with is exactly what the
exporter writes.

A block is written in one default form (``part_of``): a text as ``{"text"}``, thinking as a
``thought: true`` text, a call as ``{"functionCall": {"id"?, "args"?, "name"}}``, a response
as ``{"functionResponse": {"name", "response", "id"?}}``, its ``thoughtSignature`` after
(the order Gemini CLI writes them in). A request's part that is not in that form (its keys in
another order, an ``id`` its call had but it left out, a ``thought`` flag on a user's text, a
part that is only a ``thoughtSignature``, a key hdcontext does not read) keeps its shape: the
part with the values its block carries left ``None`` (``shape_of``), which the exporter fills
with the block's values as they are then (``fill``: a pruned output, a masked one). So a
content the proxy did not change goes back equal to itself, and one it changed keeps every
key the agent gave it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ..core.content import (
    Block,
    CodeBlock,
    MediaBlock,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResponseBlock,
)

PART: Final = "geminiPart"
"""A block's extra: the shape of the part it came as (only when not the default form)."""
CONTENT: Final = "geminiContent"
"""The first block's extra: the shape of its content, when not ``{"parts", "role"}``."""
SIGNED_STEP: Final = "geminiSignedStep"
"""A call's extra: it came after the signed first call of its content (a parallel call)."""
SIGNATURE: Final = "thoughtSignature"
SKIP_SIGNATURE: Final = "skip_thought_signature_validator"
"""The signature Gemini documents for a call the model's own signature does not cover (Gemini
CLI writes it itself where a signature is missing)."""
SYNTHETIC_ID_PREFIX: Final = "gemini_synthetic_"
RESPONSE_KEYS: Final = frozenset({"output", "error"})
DATA_KEYS: Final = (
    "text",
    "functionCall",
    "functionResponse",
    "inlineData",
    "fileData",
    "executableCode",
    "codeExecutionResult",
)
"""The part kinds hdcontext reads: a part holds one of them."""
SIDE_KEYS: Final = frozenset(
    {SIGNATURE, "thought", "partMetadata", "videoMetadata", "mediaResolution"}
)
"""Keys a part may hold beside its kind (kept as they came)."""
_INNER: Final[Mapping[str, frozenset[str]]] = {
    "functionCall": frozenset({"id", "name", "args"}),
    "functionResponse": frozenset({"id", "name", "response"}),
    "inlineData": frozenset({"mimeType", "data"}),
    "fileData": frozenset({"mimeType", "fileUri"}),
    "executableCode": frozenset({"language", "code"}),
    "codeExecutionResult": frozenset({"outcome", "output"}),
}
"""The keys of each kind's object that its block carries."""


def extra(block: object, key: str) -> Any:
    """An extra key a block carries, or ``None``."""
    extras = getattr(block, "model_extra", None) or {}
    return extras.get(key)


def kind_of(part: Mapping[str, Any]) -> str | None:
    """A part's kind: its one key of ``DATA_KEYS``; ``None`` when it has none (a part that
    is only a signature)."""
    return next((k for k in DATA_KEYS if k in part), None)


def values_of(block: Block, shape: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """What a block says, as the keys of its part in their default form (its signature
    last), blank or not; a response in the form its ``shape`` had (its result under
    ``output``, or the whole response)."""
    out: dict[str, Any]
    if isinstance(block, TextBlock):
        outcome = extra(block, "codeExecutionOutcome")
        if outcome is not None:
            out = {"codeExecutionResult": {"outcome": outcome, "output": block.text}}
        else:
            out = {"text": block.text}
    elif isinstance(block, ThinkingBlock):
        out = {"text": block.thought, "thought": True}
    elif isinstance(block, CodeBlock):
        out = {"executableCode": {"language": block.language, "code": block.code}}
    elif isinstance(block, ToolCallBlock):
        out = {"functionCall": call_of(block)}
    elif isinstance(block, ToolResponseBlock):
        inner = shape.get("functionResponse") if shape is not None else None
        wrapped = isinstance(inner, Mapping) and isinstance(inner.get("response"), Mapping)
        response = response_of(block, wrapped)
        if isinstance(inner, Mapping) and inner.get("response") == {} and _nothing(block):
            response["response"] = {}  # an answer of nothing, as it came (read as "")
        out = {"functionResponse": response}
    else:
        out = media_of(block)
    signature = extra(block, SIGNATURE)
    if signature is not None:
        out[SIGNATURE] = signature
    return out


def _nothing(block: ToolResponseBlock) -> bool:
    """The response still says nothing: the empty output an empty ``response`` is read as."""
    return block.result == "" and not block.error


def part_of(block: Block, model: bool) -> tuple[dict[str, Any] | None, str | None]:
    """(the part a block is written as in a ``model`` content or a user's, ``None`` when
    it cannot be; what was lost, ``None`` when nothing). Blank texts and thinking are left
    out (Gemini refuses an empty text part); code in another language than Python is a
    fenced text (Gemini runs no other)."""
    shape = extra(block, PART)
    if isinstance(shape, Mapping):
        return fill(shape, values_of(block, shape)), None
    if isinstance(block, TextBlock):
        if extra(block, "codeExecutionOutcome") is not None and model:
            return values_of(block), None
        if not block.text.strip():
            return None, "blank text"
        return _signed({"text": block.text}, block), None
    if isinstance(block, ThinkingBlock):
        if not model:
            return None, "thinking in human"
        if not block.thought.strip():
            return None, "blank thinking"  # redacted thinking: nothing Gemini can read
        return values_of(block), None
    if isinstance(block, CodeBlock):
        if model and (block.language or "").upper() == "PYTHON":
            return values_of(block), None
        return {"text": f"```{block.language or ''}\n{block.code}\n```"}, "code as text"
    if isinstance(block, ToolCallBlock) and not model:
        return None, "tool_call in human"
    return values_of(block), None


def _signed(part: dict[str, Any], block: Block) -> dict[str, Any]:
    signature = extra(block, SIGNATURE)
    if signature is not None:
        part[SIGNATURE] = signature
    return part


def call_of(block: ToolCallBlock) -> dict[str, Any]:
    call: dict[str, Any] = {}
    if not block.id.startswith(SYNTHETIC_ID_PREFIX):
        call["id"] = block.id
    if block.parameters is not None:
        call["args"] = block.parameters
    call["name"] = block.name
    return call


def response_of(block: ToolResponseBlock, wrapped: bool = False) -> dict[str, Any]:
    """The documented ``{"output": …, "error": …}`` object, or a result that is an object
    of other keys as it is (unless it came ``wrapped`` in ``output``)."""
    result = block.result
    body: dict[str, Any]
    if (
        isinstance(result, dict)
        and result
        and not set(result) <= RESPONSE_KEYS
        and not block.error
        and not wrapped
    ):
        body = result
    else:
        body = {} if result is None else {"output": result}
        if block.error:
            body["error"] = block.error
    response: dict[str, Any] = {"name": block.tool_name, "response": body}
    if not block.call_id.startswith(SYNTHETIC_ID_PREFIX):
        response["id"] = block.call_id
    return response


def media_of(block: MediaBlock) -> dict[str, Any]:
    if block.encoding == "base64":
        return {"inlineData": {"mimeType": block.mime_type, "data": block.data}}
    return {"fileData": {"mimeType": block.mime_type, "fileUri": block.data}}


def shape_of(part: Mapping[str, Any]) -> dict[str, Any]:
    """A part with the values its block carries left ``None``, the rest as it came."""
    out: dict[str, Any] = {}
    for key, value in part.items():
        inner = _INNER.get(key)
        if key == "text" or key == SIGNATURE:
            out[key] = None
        elif inner is not None and isinstance(value, Mapping):
            out[key] = {k: _inner_shape(k, v) if k in inner else v for k, v in value.items()}
        else:
            out[key] = value
    return out


def _inner_shape(key: str, value: object) -> dict[str, Any] | None:
    """A value the block carries, left ``None``; but a response object the block unwraps
    (``output``, ``error``) keeps its keys, each left ``None`` (one it holds whole is
    ``None`` as well)."""
    if key == "response" and isinstance(value, Mapping) and set(value) <= RESPONSE_KEYS:
        return dict.fromkeys(value)
    return None


def fill(
    shape: Mapping[str, Any], values: Mapping[str, Any], grows: bool = False
) -> dict[str, Any]:
    """``shape`` with ``values`` in place of the keys it left ``None`` (one the values lack
    goes), in its own order. Only a response object takes keys the shape does not name
    (``grows``: an output pruning gave an error's response)."""
    out: dict[str, Any] = {}
    for key, kept in shape.items():
        if kept is None:
            if key in values:
                out[key] = values[key]
        elif isinstance(kept, Mapping) and isinstance(values.get(key), Mapping):
            out[key] = fill(kept, values[key], grows=key == "response")
        else:
            out[key] = kept
    if grows:
        out.update({k: v for k, v in values.items() if k not in shape})
    return out


def same(a: object, b: object) -> bool:
    """Equal as JSON values, keys in the same order (``==`` on dicts ignores the order, and
    takes ``1`` for ``true``)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        assert isinstance(b, list)
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b
