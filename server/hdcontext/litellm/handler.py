"""The callback LiteLLM's proxy loads: ``litellm_settings: callbacks: hdcontext.litellm.handler``.

The only module of hdcontext that imports LiteLLM. Its hooks are defined on this class itself,
with exactly LiteLLM's parameter names: LiteLLM passes them by name, and calls a pre-call hook
only when the callback's own class defines one (an inherited one is skipped). Each hands its
arguments to ``gateway.Gateway``, which reads them without LiteLLM's types; none raises.

The hooks: ``async_pre_call_hook`` (the request compacted in place; ``None`` returned, so
LiteLLM goes on with the same ``data``), ``async_log_success_event`` (every call that went
through, streamed or not: its usage), ``async_post_call_success_hook`` (a call answered in one
body: its session's commit on disk first), ``async_post_call_failure_hook`` (a call that
failed, once, whatever LiteLLM retried: taken back).

The deployment a request goes to is asked of LiteLLM's router (``deployments.py`` says why),
kept a minute per model group. hdcontext stops at the start of LiteLLM's own shutdown
(``proxy_shutdown_event``, which its lifespan calls by name: ``at_litellm_stop`` wraps it).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from litellm.integrations.custom_logger import CustomLogger

from .deployments import UNKNOWN, Deployment, deployment_of
from .gateway import Gateway
from .runtime import Process

log = logging.getLogger(__name__)

KEPT_FOR_S = 60.0
"""How long a model group's deployment is kept before the router is asked again."""


class Deployments:
    """Each model group's deployment, from LiteLLM's router, kept ``KEPT_FOR_S``."""

    def __init__(self) -> None:
        self._kept: dict[str, tuple[float, Deployment]] = {}

    def __call__(self, group: object) -> Deployment:
        if not isinstance(group, str) or not group:
            return UNKNOWN
        now = time.monotonic()
        kept = self._kept.get(group)
        if kept is not None and now - kept[0] < KEPT_FOR_S:
            return kept[1]
        found = _asked(group)
        if len(self._kept) > 1024:
            self._kept.clear()
        self._kept[group] = (now, found)
        return found


def _asked(group: str) -> Deployment:
    """The group's deployment as the router lists it; UNKNOWN without a router or a match."""
    try:
        from litellm.proxy import proxy_server

        router = getattr(proxy_server, "llm_router", None)
        if router is None:
            return UNKNOWN
        listed = router.get_model_list(model_name=group)
        if not isinstance(listed, list) or not listed:
            return UNKNOWN
        return deployment_of(d for d in listed if isinstance(d, dict))
    except Exception as exc:  # a router of another shape: priced by the request's name
        log.debug("hdcontext: no deployment for a model group: %s", type(exc).__name__)
        return UNKNOWN


def at_litellm_stop(stop: Callable[[], Awaitable[None]]) -> None:
    """Run ``stop`` first when LiteLLM's proxy shuts down (its lifespan's end)."""
    from litellm.proxy import proxy_server

    shutdown = proxy_server.proxy_shutdown_event

    async def stopping(*args: Any, **kwargs: Any) -> Any:
        try:
            await stop()
        except Exception as exc:  # LiteLLM's own shutdown goes on
            log.warning("hdcontext: stopping failed: %s", type(exc).__name__)
        return await shutdown(*args, **kwargs)

    proxy_server.proxy_shutdown_event = stopping


class HdcontextCallback(CustomLogger):
    def __init__(self, gateway: Gateway | None = None) -> None:
        super().__init__()
        self.gateway = gateway or Gateway(Process(at_stop=at_litellm_stop), Deployments())

    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: Any
    ) -> None:
        await self.gateway.pre_call(user_api_key_dict, data, call_type)

    async def async_log_success_event(
        self, kwargs: Any, response_obj: Any, start_time: Any, end_time: Any
    ) -> None:
        await self.gateway.succeeded(kwargs, response_obj)

    async def async_post_call_success_hook(
        self, data: dict[str, Any], user_api_key_dict: Any, response: Any
    ) -> None:
        await self.gateway.answered(data)

    async def async_post_call_failure_hook(
        self,
        request_data: dict[str, Any],
        original_exception: Exception,
        user_api_key_dict: Any,
        traceback_str: str | None = None,
    ) -> None:
        await self.gateway.failed(request_data, original_exception)


handler = HdcontextCallback()
"""The instance LiteLLM's ``config.yaml`` names."""
