"""Keeping the prompt cache alive while the user is away.

A cached prefix lives five minutes from its last use. Reading it again costs a tenth of the
input price and writing it again 1.25 times, so while the user thinks, the last request is
sent once more, cut to one output token, shortly before its entry would expire: the next turn
then finds the whole conversation cached. The pings stop once together they would cost what
one rewrite does (``cache_keepalive_pings``): a user who never comes back then costs at most
one rewrite more than a choice made knowing when they would.

Only a request nothing has changed since is sent again (a summary, an edited history or a
new turn makes it stale), and never with thinking on, where one output token cannot be asked
for. The same schedule serves the REPL, which sleeps between pings, and the benchmark, which
moves its simulated clock.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace

from mini_claude.conversation import Conversation
from mini_claude.protocol import ModelRequest, Provider, ProviderError, ResponseComplete

PING_MAX_TOKENS = 1  # a ping asks for one output token: it is there to read the cache


class CacheKeeper:
    """The last request of the loop, and when it should be read again."""

    def __init__(self, provider: Provider, *, pings: int, interval: float,
                 last_call_at: Callable[[], float | None],
                 call_made: Callable[[], None],
                 worth_keeping: Callable[[], bool] = lambda: True) -> None:
        self.provider = provider
        self.pings = pings
        self.interval = interval
        self._last_call_at = last_call_at
        self._call_made = call_made
        self._worth_keeping = worth_keeping
        self._request: ModelRequest | None = None
        self._left = 0

    def remember(self, request: ModelRequest) -> None:
        """The loop sent ``request``: it is what the cache now holds, and the pings restart."""
        self._request = None if request.thinking is not None else request
        self._left = self.pings

    def next_ping_at(self, conversation: Conversation) -> float | None:
        """When the next ping is due; None when there is nothing worth keeping."""
        request = self._request
        last = self._last_call_at()
        if request is None or self._left <= 0 or last is None:
            return None
        if not _still_the_prefix(request, conversation) or not self._worth_keeping():
            return None
        return last + self.interval

    async def ping(self) -> bool:
        """Read the cached prompt once more; False (and no more pings) if that failed."""
        request = self._request
        if request is None:
            return False
        self._left -= 1
        try:
            async for event in self.provider.stream(replace(request, max_tokens=PING_MAX_TOKENS)):
                if isinstance(event, ResponseComplete):
                    break
        except ProviderError:
            self._left = 0
            return False
        self._call_made()
        return True

    async def keep_until(self, conversation: Conversation, now: Callable[[], float],
                         wait_until: Callable[[float], Awaitable[None]],
                         end: float | None = None) -> None:
        """Ping on schedule until ``end`` (None: until the pings run out); ``wait_until``
        sleeps (the REPL) or moves a simulated clock (the benchmark)."""
        while (due := self.next_ping_at(conversation)) is not None:
            if end is not None and due >= end:
                return
            if due > now():
                await wait_until(due)
            if not await self.ping():
                return


def _still_the_prefix(request: ModelRequest, conversation: Conversation) -> bool:
    """True while the conversation starts with exactly the messages that were sent."""
    messages = conversation.messages
    sent = request.messages
    return len(messages) >= len(sent) and all(
        a is b for a, b in zip(sent, messages[:len(sent)], strict=True))
