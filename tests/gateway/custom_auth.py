"""The keys of the gateway's tests, as LiteLLM's ``general_settings: custom_auth`` reads them:
each key a user of a team, the way a gateway's keys are (LiteLLM's own virtual keys need its
database, which these tests leave out). Loaded by LiteLLM's proxy only."""

from __future__ import annotations

from typing import Any

from litellm.proxy._types import UserAPIKeyAuth

from tests.gateway.keys import KEYS


async def user_api_key_auth(request: Any, api_key: str) -> UserAPIKeyAuth:
    if api_key not in KEYS:
        raise ValueError("unknown key")
    user, team, alias = KEYS[api_key]
    return UserAPIKeyAuth(api_key=api_key, user_id=user, team_id=team, key_alias=alias)
