"""Re-send a failed request when the failure is worth waiting out.

The SDKs' own retries are off (``max_retries=0``): they cannot retry a stream
that broke midway, and they wait silently. Here every retry is announced with
a :class:`StreamRestarted` event so the UI can drop partial text and say why.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

from mini_claude.protocol import ModelRequest, Provider, ProviderError, StreamEvent, StreamRestarted

Sleep = Callable[[float], Awaitable[object]]

BASE_DELAY_SECONDS = 0.5
MAX_BACKOFF_SECONDS = 8.0
# A server asking for a longer pause than this is not waited for: the user decides.
MAX_RETRY_AFTER_SECONDS = 60.0


def backoff_seconds(retry_number: int) -> float:
    """0.5 s, 1 s, 2 s, 4 s, 8 s, 8 s, ... for the 0th, 1st, ... retry."""
    return float(min(MAX_BACKOFF_SECONDS, BASE_DELAY_SECONDS * 2**retry_number))


class RetryingProvider:
    """Wraps any provider; retries retryable errors with backoff or the server's pause."""

    def __init__(
        self,
        inner: Provider,
        *,
        max_retries: int,
        sleep: Sleep = asyncio.sleep,
        max_retry_after: float = MAX_RETRY_AFTER_SECONDS,
    ) -> None:
        self.inner = inner
        self.name = inner.name
        self.max_retries = max(0, max_retries)
        self._sleep = sleep
        self._max_retry_after = max_retry_after

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        retries = 0
        while True:
            events = self.inner.stream(request)
            try:
                async for event in events:
                    yield event
                return
            except ProviderError as error:
                delay = self._delay_or_give_up(error, retries)
                retries += 1
                yield StreamRestarted(retries, delay, error.message)
            finally:
                await _close(events)
            await self._sleep(delay)

    def _delay_or_give_up(self, error: ProviderError, retries: int) -> float:
        """The pause before the next attempt, or raise ``error`` when retrying is pointless."""
        if not error.retryable:
            raise error
        if retries >= self.max_retries:
            attempts = retries + 1
            noun = "attempt" if attempts == 1 else "attempts"
            raise _reworded(error, f"{error.message} (gave up after {attempts} {noun})")
        wait = error.retry_after
        if wait is None:
            return backoff_seconds(retries)
        if wait > self._max_retry_after:
            raise _reworded(
                error, f"{error.message} (the server asks to wait {wait:.0f} s; not retrying)"
            )
        return wait

    async def close(self) -> None:
        await self.inner.close()


async def _close(events: AsyncIterator[StreamEvent]) -> None:
    """Close the inner stream now (not at garbage collection) so its connection is freed."""
    close = getattr(events, "aclose", None)
    if close is not None:
        await close()


def _reworded(error: ProviderError, message: str) -> ProviderError:
    """The same error, same type and fields, with a message that says what we did."""
    error.message = message
    error.args = (message,)
    return error
