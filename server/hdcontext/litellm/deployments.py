"""Which model and provider a LiteLLM request goes to, as hdcontext needs to know them.

A request names a model group (``gpt-4.1``, or an alias such as ``smart``); LiteLLM's router
sends it to one of the group's deployments (``openai/gpt-4.1``, ``anthropic/claude-…``). What
the provider's prompt cache does, and so what every edit costs, is the deployment's model's:
hdcontext prices a request by it when all the group's deployments name one model (the base
model LiteLLM is told of first, else the deployment's own name without its provider).

hdcontext edits a conversation in the format the agent sent it and places breakpoints as that
format's provider reads them. When LiteLLM translates the request for a provider of another
format (chat completions sent on to Anthropic, say), what hdcontext wrote would reach a cache
that reads other marks, or none: such a request goes on as it came. A deployment whose
provider is not known (no router, a wildcard) is carried, priced by the name the request gives,
as ``hdcontext proxy`` does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

CARRIED_TO: Mapping[str, frozenset[str]] = {
    "anthropic": frozenset({"anthropic"}),
    "openai": frozenset(
        {"openai", "azure", "openai_like", "custom_openai", "hosted_vllm", "deepseek"}
    ),
    "responses": frozenset({"openai", "azure"}),
}
"""The providers each Api's format goes to as it is (the Api by its name)."""


@dataclass(frozen=True, slots=True)
class Deployment:
    model: str | None = None
    """The model to price by (``None``: the request's own)."""
    provider: str | None = None
    """LiteLLM's provider name (``None``: not known)."""


UNKNOWN = Deployment()


def _provider_and_model(params: Mapping[str, Any]) -> tuple[str | None, str | None]:
    model = params.get("model")
    provider = params.get("custom_llm_provider")
    if not isinstance(model, str) or not model:
        return (provider if isinstance(provider, str) else None), None
    head, slash, tail = model.partition("/")
    if not isinstance(provider, str) or not provider:
        provider = head if slash else None
    return provider, (tail if slash else model)


def deployment_of(deployments: Iterable[Mapping[str, Any]]) -> Deployment:
    """What a model group's deployments (the router's ``model_list`` entries) have in common:
    the one provider and model they name, else ``UNKNOWN`` for what differs."""
    providers: set[str | None] = set()
    models: set[str | None] = set()
    for deployment in deployments:
        params = deployment.get("litellm_params")
        info = deployment.get("model_info")
        if not isinstance(params, Mapping):
            return UNKNOWN
        provider, model = _provider_and_model(params)
        base = params.get("base_model") or (
            info.get("base_model") if isinstance(info, Mapping) else None
        )
        providers.add(provider)
        models.add(base if isinstance(base, str) and base else model)
    provider = providers.pop() if len(providers) == 1 else None
    model = models.pop() if len(models) == 1 else None
    if model is not None and "*" in model:
        model = None
    return Deployment(model=model, provider=provider)


def carried(api: str, deployment: Deployment) -> bool:
    """Whether a request of the Api ``api`` goes to ``deployment`` in the format it came in."""
    return deployment.provider is None or deployment.provider in CARRIED_TO.get(api, frozenset())
