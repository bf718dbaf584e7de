"""What a call billed, as LiteLLM normalizes it for its success hooks.

LiteLLM gives every call's usage in one shape whatever the provider and the endpoint (chat
completions, ``/v1/messages``, the Responses API; streamed or not): ``prompt_tokens`` counts
every input token, cached or not (Anthropic's three figures summed), ``prompt_tokens_details``
holds what was read from the cache (``cached_tokens``) and written to it
(``cache_write_tokens``, or ``cache_creation_tokens``; Anthropic's ``cache_creation_input_tokens``
beside them), ``completion_tokens`` the output. It is read from the standard logging payload's
``usage_object``, else from the response's ``usage``; attributes or keys alike. How the answer
ended (a tool call, an answer) is read from the response, as the proxy reads it from the wire.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.cache.rhythm import waiting_after
from ..edges.proxy.usage import Billed, count

_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
"""Output items of a Responses API answer that call a tool."""


def _get(value: object, name: str) -> object:
    if isinstance(value, Mapping):
        return value.get(name)
    return getattr(value, name, None)


def usage_of(kwargs: Mapping[str, Any], response: object) -> object:
    """The call's usage: the standard logging payload's ``usage_object``, else the
    response's ``usage``; ``None`` when neither is there."""
    payload = kwargs.get("standard_logging_object")
    usage = _get(_get(payload, "metadata"), "usage_object")
    return usage if usage is not None else _get(response, "usage")


def billed_of(kwargs: Mapping[str, Any], response: object) -> Billed | None:
    """The call's bill as ``history/usage`` takes it, or ``None`` when no usage is there."""
    usage = usage_of(kwargs, response)
    if usage is None:
        return None
    details = _get(usage, "prompt_tokens_details")
    read = count(_get(details, "cached_tokens")) or count(_get(usage, "cache_read_input_tokens"))
    write = (
        count(_get(details, "cache_write_tokens"))
        or count(_get(details, "cache_creation_tokens"))
        or count(_get(usage, "cache_creation_input_tokens"))
    )
    split = _get(usage, "cache_creation")
    long = _get(split, "ephemeral_1h_input_tokens")
    return Billed(
        input_tokens=count(_get(usage, "prompt_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
        output_tokens=count(_get(usage, "completion_tokens")),
        cache_write_1h_tokens=None if long is None else min(count(long), write),
        waits_on=waiting_after(ended(response)),
    )


def ended(response: object) -> object:
    """How the answer ended: the first choice's ``finish_reason`` (chat completions, and
    ``/v1/messages`` as LiteLLM logs it), Anthropic's ``stop_reason``, or for a Responses API
    response whether its output calls a tool."""
    choices = _get(response, "choices")
    if isinstance(choices, list | tuple) and choices:
        return _get(choices[0], "finish_reason")
    stop = _get(response, "stop_reason")
    if stop is not None:
        return stop
    output = _get(response, "output")
    if isinstance(output, list | tuple):
        calls = any(_get(item, "type") in _CALLS for item in output)
        return "tool_calls" if calls else "stop"
    return None
