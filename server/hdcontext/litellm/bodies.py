"""A LiteLLM request as the proxy's Api modules read it, and the compacted one written back.

LiteLLM hands its pre-call hook the request already parsed (``data``), with entries of its own
beside the client's fields: its call id, its logging object, its metadata (the request's
headers among them), the whole request again (``proxy_server_request``). hdcontext reads the
client's fields only, as the bytes ``Compactor.compact`` takes, in the order they came: from
one turn to the next those bytes start alike, so the compactor reads only what a turn added,
as it does for ``hdcontext proxy``. A field that is not JSON makes the request Unsupported
(it goes on as it came).

Written back into ``data``: the conversation (``messages`` or ``input``) and the other fields
the compactor sent otherwise (an Anthropic agent's five-minute marks lifted to an hour,
OpenAI's day-long retention), never the model, which hdcontext may have read as the
deployment's (``model``). Everything else of ``data`` stays LiteLLM's. On chat completions
LiteLLM passes on only the fields it knows (1.108.7 drops ``prompt_cache_retention`` there, and
keeps it on the Responses API): what hdcontext adds goes in ``extra_body``, which LiteLLM hands
to OpenAI's client, which sends it at the top of the body.

The session is named here, not by the compactor, because a gateway's sessions are named within
their owner (``identity.py``): ``litellm-<tag>-<api>-<digest>``, the digest of the client's
name, what starts the conversation (``Api.start``) and its first entry, as the proxy names its
own, so that the same conversation resent is the same session and an edited one a fork.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from ..edges.proxy.anthropic import AnthropicApi
from ..edges.proxy.api import Api, Unsupported
from ..edges.proxy.openai import OpenAiApi
from ..edges.proxy.responses import ResponsesApi
from ..edges.stats.owners import session_prefix

CALL_TYPES: Mapping[str, str] = {
    "acompletion": "openai",
    "completion": "openai",
    "anthropic_messages": "anthropic",
    "aresponses": "responses",
    "responses": "responses",
}
"""LiteLLM's call types whose conversation hdcontext carries, and the Api that reads each:
``/v1/chat/completions``, ``/v1/messages``, ``/v1/responses``."""

APIS: Mapping[str, Api] = {
    "openai": OpenAiApi(),
    "anthropic": AnthropicApi(),
    "responses": ResponsesApi(),
}

LITELLM_KEYS = frozenset(
    {
        "metadata",
        "proxy_server_request",
        "secret_fields",
        "provider_specific_header",
        "user_api_key_dict",
        "standard_callback_dynamic_params",
    }
)
"""Entries of ``data`` that are LiteLLM's, not the client's (besides every ``litellm_…`` one).
``metadata`` is LiteLLM's on chat completions (the request's headers, which change with every
request, are in it)."""

THROUGH_EXTRA_BODY = frozenset({"openai"})
"""The Apis whose fields hdcontext adds go in ``extra_body`` (chat completions)."""
EXTRA_BODY = "extra_body"

GLANCED = 64
"""Elements read at most to name a conversation by its first entry."""


def is_litellm_key(key: str) -> bool:
    return key.startswith("litellm_") or key in LITELLM_KEYS


@dataclass(frozen=True, slots=True)
class Request:
    """A request's fields as hdcontext read them."""

    api: Api
    fields: dict[str, Any]
    """The client's fields, ``model`` the one hdcontext prices by."""
    raw: bytes
    """``fields`` as JSON: what the compactor takes."""


def api_for(call_type: object) -> Api | None:
    """The Api of a LiteLLM call type, or ``None`` for one hdcontext does not carry."""
    name = CALL_TYPES.get(call_type) if isinstance(call_type, str) else None
    return APIS[name] if name is not None else None


def read_request(api: Api, data: Mapping[str, Any], model: str | None = None) -> Request:
    """The client's fields of ``data`` (``model``: the model to price by, when LiteLLM's
    deployment names another than the request); Unsupported when one is not JSON, or the
    conversation is not a list."""
    if not isinstance(data.get(api.key), list):
        raise Unsupported(f"no '{api.key}' list")
    fields = {k: v for k, v in data.items() if isinstance(k, str) and not is_litellm_key(k)}
    if model is not None:
        fields["model"] = model
    try:
        raw = orjson.dumps(fields)
    except orjson.JSONEncodeError:
        raise Unsupported("a field that is not JSON") from None
    return Request(api, fields, raw)


def write_back(request: Request, data: dict[str, Any], compacted: bytes) -> list[str]:
    """Put into ``data`` what the compactor sent otherwise than the client's ``request``: the
    conversation, and each other field it changed (not the model). The keys written."""
    sent = orjson.loads(compacted)
    if not isinstance(sent, dict) or not isinstance(sent.get(request.api.key), list):
        raise Unsupported("the compacted request has no conversation")
    key = request.api.key
    data[key] = sent[key]
    written = [key]
    extra = data.get(EXTRA_BODY)
    into = request.api.name in THROUGH_EXTRA_BODY and (extra is None or isinstance(extra, dict))
    for name, value in sent.items():
        if name in (key, "model", EXTRA_BODY) or is_litellm_key(name):
            continue
        if name not in request.fields or request.fields[name] != value:
            if into:
                data[EXTRA_BODY] = {**(data.get(EXTRA_BODY) or {}), name: value}
                written.append(f"{EXTRA_BODY}.{name}")
            else:
                data[name] = value
                written.append(name)
    return written


def first_entry(api: Api, elements: list[Any]) -> object:
    """The conversation's first entry as JSON (``to_wire``), from the elements before the
    model's first turn (at most ``GLANCED``), as the proxy names a conversation."""
    head = api.head(elements)
    if head >= len(elements):
        raise Unsupported("no conversation after the system messages")
    end = head + 1
    while (
        end < len(elements)
        and end - head < GLANCED
        and not api.opens(elements[end], elements[end - 1])
    ):
        end += 1
    first = elements[head:end]
    api.check(first, 0)
    entries = api.import_messages(first, head)
    return entries[0].to_wire() if entries else None


def session_name(request: Request, tag: str, client: str) -> str:
    """The session of ``request``'s conversation within the owner ``tag``."""
    api, fields = request.api, request.fields
    elements: list[Any] = fields[api.key]
    start = api.start(fields, elements[: api.head(elements)])
    key = orjson.dumps(
        [api.name, client, start, first_entry(api, elements)],
        option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS,
        default=str,
    )
    digest = hashlib.blake2b(key, digest_size=12).hexdigest()
    return f"{session_prefix(tag)}{api.name}-{digest}"
