"""The daemon's edge: request params as PROTOCOL.md defines them, and its error codes.

Every request is validated here before any session is touched, so a malformed request changes
nothing and its error names the JSON path of the fault (``entries[3].blocks[0].callId: field
required``), which is what a client author needs to fix the call. Types are strict: a session
id of ``5`` or a ``pendingTokens`` of ``"5"`` is a client bug worth reporting, not coercing.
Keys the protocol does not define are ignored, so a newer client can talk to this daemon.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, StringConstraints, ValidationError
from pygls.exceptions import JsonRpcException

from ...core.content import (
    ContentError,
    IContent,
    parse_entries,
    parse_entry,
    validation_messages,
)
from ...core.tools.todos import Todo, parse_todos

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602
UNKNOWN_SESSION = -32001
SUMMARIZER_FAILED = -32002
UNKNOWN_CALL = -32003
STORAGE_UNUSABLE = -32004
UNAUTHORIZED = -32005
INTERNAL_ERROR = -32603
SERVER_NOT_INITIALIZED = -32002  # LSP's own code for a request before ``initialize``

SessionId = Annotated[str, StringConstraints(min_length=1, max_length=512)]


class WireError(JsonRpcException):
    """An error this daemon answers on purpose (bad input, unknown session, summarizer).

    A distinct class so the log filter can tell expected answers from bugs: pygls logs every
    raised error with its traceback, and bad input from a client is not worth a traceback.
    """


def invalid_params(problems: list[str]) -> WireError:
    return WireError(message="; ".join(problems), code=INVALID_PARAMS, data={"errors": problems})


def unknown_session(session_id: str) -> WireError:
    return WireError(message=f"unknown session '{session_id}'", code=UNKNOWN_SESSION)


def unknown_call(call_id: str, session_id: str) -> WireError:
    return WireError(
        message=f"unknown call '{call_id}' in session '{session_id}'", code=UNKNOWN_CALL
    )


def summarizer_failed(message: str) -> WireError:
    return WireError(message=message, code=SUMMARIZER_FAILED)


def invalid_request(message: str) -> WireError:
    return WireError(message=message, code=INVALID_REQUEST)


def storage_unusable(message: str) -> WireError:
    return WireError(message=message, code=STORAGE_UNUSABLE)


def internal_error(method: str, exc: BaseException) -> WireError:
    # The exception's text may quote conversation content: only its type leaves the daemon.
    return WireError(
        message=f"internal error ({type(exc).__name__}) in {method}; see the daemon's log",
        code=INTERNAL_ERROR,
    )


class _Params(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


class SessionParams(_Params):
    """``history/settings``, ``clear``, ``close``, ``delete``: the session alone."""

    session_id: SessionId = Field(alias="sessionId")


class OpenParams(SessionParams):
    context_limit: Annotated[int, Field(gt=0)] | None = Field(default=None, alias="contextLimit")
    model: str | None = None


class AppendParams(SessionParams):
    entries: list[Any]


class CompactParams(SessionParams):
    pending_tokens: Annotated[int, Field(ge=0)] = Field(default=0, alias="pendingTokens")
    at: Annotated[int, Field(ge=0, lt=2**53)] | None = None
    """The model call's time (ms since the epoch): drives the prompt-cache clock."""
    reply: Literal["full", "delta", "none"] = "full"
    base: str | None = None


class SyncParams(OpenParams):
    entries: list[Any]


NonNegative = Annotated[int, Field(ge=0, lt=2**53)]


class UsageParams(SessionParams):
    input_tokens: NonNegative = Field(alias="inputTokens")
    cache_read_tokens: NonNegative | None = Field(default=None, alias="cacheReadTokens")
    cache_write_tokens: NonNegative | None = Field(default=None, alias="cacheWriteTokens")
    cache_write_1h_tokens: NonNegative | None = Field(default=None, alias="cacheWrite1hTokens")
    """Of ``cacheWriteTokens``, those written for an hour (Anthropic's
    ``cache_creation.ephemeral_1h_input_tokens``): billed at 2x, the rest at 1.25x."""
    output_tokens: NonNegative | None = Field(default=None, alias="outputTokens")
    at: NonNegative | None = None
    stop_reason: Annotated[str, StringConstraints(max_length=64)] | None = Field(
        default=None, alias="stopReason"
    )
    """How the answer ended, as the provider said (``tool_use``, ``end_turn``,
    ``tool_calls``, ``stop``…): what the session now waits on, for a client that does not
    append the answer before the next call."""


def parse_usage(raw: object) -> UsageParams:
    """``history/usage``'s params, the one-hour writes a part of the writes."""
    p = parse_params(UsageParams, raw)
    if p.cache_write_1h_tokens is not None and p.cache_write_1h_tokens > (
        p.cache_write_tokens or 0
    ):
        raise invalid_params(["cacheWrite1hTokens: more than cacheWriteTokens"])
    return p


class RefreshParams(SessionParams):
    at: NonNegative | None = None
    """When the refresh call is made (ms since the epoch; default: the daemon's clock)."""


class RetrieveParams(SessionParams):
    call_id: Annotated[str, StringConstraints(min_length=1)] = Field(alias="callId")


class GetParams(SessionParams):
    view: Literal["curated", "raw", "transcript"] = "curated"


class SetOverrideParams(SessionParams):
    key: str
    value: JsonValue


class TodosParams(SessionParams):
    todos: list[Any]


class ListParams(_Params):
    pass


MAX_SAVINGS_SESSIONS = 1000
"""The most sessions one ``stats/savings`` names (a window holds a handful)."""
Nonce = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9+/_=-]{16,128}$")]
"""A content security policy's nonce: base64 (or base64url) of 12 to 96 random bytes, so it
can stand in the page's ``nonce`` attribute and in the policy as it is."""


class SavingsParams(_Params):
    """``stats/savings``: the figures of these sessions (all the storage when left out), and
    the page that shows them when a ``nonce`` is given for its script and style."""

    sessions: Annotated[list[SessionId], Field(max_length=MAX_SAVINGS_SESSIONS)] | None = None
    nonce: Nonce | None = None


P = TypeVar("P", bound=_Params)


def parse_params(model: type[P], raw: object) -> P:
    """Validate a request's params, or raise -32602 naming each bad path."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise invalid_params(["params: expected an object"])
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise invalid_params(validation_messages(exc)) from None


def parse_entries_param(raw: list[Any]) -> list[IContent]:
    try:
        return parse_entries(raw, path="entries")
    except ContentError as exc:
        raise invalid_params(exc.errors) from None


def parse_entries_from(raw: list[Any], first: int) -> list[IContent]:
    """``raw`` as entries, where ``raw[0]`` is entry ``first`` of the array the client sent:
    errors name each path in that whole array."""
    entries: list[IContent] = []
    problems: list[str] = []
    for index, value in enumerate(raw, start=first):
        try:
            entries.append(parse_entry(value, path=f"entries[{index}]"))
        except ContentError as exc:
            problems.extend(exc.errors)
    if problems:
        raise invalid_params(problems)
    return entries


def parse_todos_param(raw: list[Any]) -> list[Todo]:
    try:
        return parse_todos(raw, path="todos")
    except ValueError as exc:
        errors = exc.errors if isinstance(exc, ContentError) else [str(exc)]
        raise invalid_params(errors) from None


class ProxyOptions(BaseModel):
    """``initializationOptions.proxy``: the daemon also serves ``hdcontext proxy`` on loopback,
    over its own sessions (so the editor sees the proxy's sessions in ``history/tokens``)."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    port: Annotated[int, Field(ge=0, le=65535)] = 8787
    anthropic_upstream: str | None = Field(default=None, alias="anthropicUpstream")
    openai_upstream: str | None = Field(default=None, alias="openaiUpstream")
    context_limit: Annotated[int, Field(gt=0)] | None = Field(default=None, alias="contextLimit")


class InitOptions(BaseModel):
    """``initializationOptions``: all optional; a bad part is reported and ignored."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    settings: dict[str, Any] | None = None
    storage_dir: str | None = Field(default=None, alias="storageDir")
    retrieve_tool: Annotated[str, StringConstraints(min_length=1, max_length=128)] | None = Field(
        default=None, alias="retrieveTool"
    )
    """The tool through which the client's model can call ``history/retrieve``: pruned
    results then point at it by call id."""
    proxy: ProxyOptions | None = None
    retention_days: Annotated[int, Field(ge=0)] | Literal["forever"] | None = Field(
        default=None, alias="retentionDays"
    )
    """Days an idle session is kept in the storage folder (0: only while in use; "forever");
    unset: ``serve --retention-days`` (retention.py)."""


class SummarizeAnswer(BaseModel):
    """The client's answer to ``history/summarize``."""

    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)

    text: str
