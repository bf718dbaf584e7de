"""A callback whose compactor raises on every request, for the test that a failure inside
hdcontext leaves LiteLLM's request as it came (``config.yaml``: ``callbacks:
tests.gateway.poisoned.handler``). Loaded by LiteLLM's proxy only."""

from __future__ import annotations

from typing import Any

from hdcontext.litellm.gateway import Gateway
from hdcontext.litellm.handler import HdcontextCallback
from hdcontext.litellm.runtime import Process, Runtime
from tests.gateway.keys import SAID


class Poisoned(Process):
    async def ready(self) -> Runtime | None:
        runtime = await super().ready()
        if runtime is not None:

            async def broken(*args: Any, **kwargs: Any) -> Any:
                raise RuntimeError(SAID)

            runtime.compactor.compact = broken  # type: ignore[method-assign]
        return runtime


handler = HdcontextCallback(Gateway(Poisoned()))
