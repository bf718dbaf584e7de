"""hdcontext inside LiteLLM's proxy: a callback that compacts every request's conversation
before it goes to the model, priced against the provider's prompt cache, within the caller's
own sessions (docs/team.md).

``config.yaml``::

    litellm_settings:
      callbacks: hdcontext.litellm.handler

``handler`` is imported from ``handler.py`` only when asked for, so that the rest of this
package (identity, bodies, billing, the runtime) loads, and is tested, without LiteLLM.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "handler":
        from .handler import handler

        return handler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
