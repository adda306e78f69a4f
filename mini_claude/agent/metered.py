"""A provider wrapper that books every call it carries on the session's cost tracker.

The summary call is made by the compactor, which only sees a provider; wrapping
the provider it is given is how those calls reach ``/cost`` and the status bar
without the compactor knowing about money.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

from mini_claude.pricing import CostTracker
from mini_claude.protocol import ModelRequest, Provider, ResponseComplete, StreamEvent, Usage


class MeteredProvider:
    """Forwards to ``inner``; each reply's usage and the time waited go to ``costs``."""

    def __init__(self, inner: Provider, costs: CostTracker, *, summary: bool, ping: bool = False,
                 record: Callable[[str, Usage], None] | None = None) -> None:
        self.inner = inner
        self.costs = costs
        self.summary = summary
        self.ping = ping
        self.record = record  # also told each reply's usage (the transcript, for resuming)
        self.name = inner.name

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        started = time.perf_counter()
        try:
            async for event in self.inner.stream(request):
                if isinstance(event, ResponseComplete) and event.usage is not None:
                    self.costs.add(request.model, event.usage, summary=self.summary,
                                   ping=self.ping)
                    if self.record is not None:
                        self.record(request.model, event.usage)
                yield event
        finally:
            self.costs.api_seconds += time.perf_counter() - started

    async def close(self) -> None:
        await self.inner.close()
