"""``--fallback-model``: when the model is overloaded or unknown to the server, the same
request goes to the fallback model, and so does every later one of the session.

It wraps the retrying provider, so the fallback is taken only once the model's own
retries are spent, and only before any of the reply has arrived.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import replace

from mini_claude.protocol import (
    ModelNotFound,
    ModelRequest,
    ModelSwitched,
    Overloaded,
    Provider,
    StreamEvent,
    StreamRestarted,
)


class ModelFallback:
    """Forwards to ``inner``; sends to ``fallback`` from the first overload or "not found"."""

    def __init__(self, inner: Provider, fallback: str,
                 on_switch: Callable[[str, str], None]) -> None:
        self.inner = inner
        self.name = inner.name
        self.fallback = fallback
        self.on_switch = on_switch  # (the model given up, the fallback), to follow it
        self.replaced: set[str] = set()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if request.model in self.replaced:
            request = replace(request, model=self.fallback)
        started = False
        try:
            async for event in self.inner.stream(request):
                started = started or not isinstance(event, StreamRestarted)
                yield event
        except (Overloaded, ModelNotFound) as exc:
            if started or request.model == self.fallback:
                raise
            self.replaced.add(request.model)
            self.on_switch(request.model, self.fallback)
            yield ModelSwitched(request.model, self.fallback, exc.message)
            async for event in self.inner.stream(replace(request, model=self.fallback)):
                yield event

    async def close(self) -> None:
        await self.inner.close()
