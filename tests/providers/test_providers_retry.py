"""RetryingProvider against a scripted provider of our own (no network, no real sleeps)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from mini_claude.conversation import Message, TextBlock, user_text
from mini_claude.protocol import (
    AuthenticationFailed,
    ConnectionLost,
    ModelRequest,
    ModelTextDelta,
    Overloaded,
    PromptTooLong,
    ProviderError,
    RateLimited,
    ResponseComplete,
    ServerError,
    StreamEvent,
    StreamRestarted,
    Usage,
)
from mini_claude.providers.retry import RetryingProvider, backoff_seconds

REQUEST = ModelRequest("sim-model", "sys", [user_text("hi")], [], 100)
DONE = ResponseComplete(Message("assistant", [TextBlock("done")]), "end_turn", Usage(1, 0, 0, 1))


@dataclass
class ScriptedProvider:
    """Each attempt yields its events, then raises its error (if any)."""

    attempts: list[tuple[list[StreamEvent], ProviderError | None]]
    name: str = "scripted"
    calls: int = 0
    closed: bool = False
    streams_closed: int = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        events, error = self.attempts[self.calls]
        self.calls += 1
        try:
            for event in events:
                yield event
            if error is not None:
                raise error
        finally:
            self.streams_closed += 1

    async def close(self) -> None:
        self.closed = True


@dataclass
class RecordingSleep:
    delays: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def run(provider: RetryingProvider) -> list[StreamEvent]:
    async def collect() -> list[StreamEvent]:
        return [event async for event in provider.stream(REQUEST)]

    return asyncio.run(collect())


def test_backoff_doubles_from_half_a_second_and_caps_at_eight() -> None:
    assert [backoff_seconds(n) for n in range(7)] == [0.5, 1, 2, 4, 8, 8, 8]


def test_retries_after_partial_text_and_announces_each_restart() -> None:
    inner = ScriptedProvider(
        [
            ([ModelTextDelta("par")], ConnectionLost("the connection dropped")),
            ([], Overloaded("the API is overloaded (529): busy")),
            ([ModelTextDelta("done"), DONE], None),
        ]
    )
    sleep = RecordingSleep()
    events = run(RetryingProvider(inner, max_retries=4, sleep=sleep))

    assert events == [
        ModelTextDelta("par"),
        StreamRestarted(1, 0.5, "the connection dropped"),
        StreamRestarted(2, 1.0, "the API is overloaded (529): busy"),
        ModelTextDelta("done"),
        DONE,
    ]
    assert sleep.delays == [0.5, 1.0]
    assert inner.calls == 3


def test_server_retry_after_replaces_backoff() -> None:
    inner = ScriptedProvider([([], RateLimited("rate limited", retry_after=0.02)), ([DONE], None)])
    sleep = RecordingSleep()
    events = run(RetryingProvider(inner, max_retries=2, sleep=sleep))

    assert sleep.delays == [0.02]
    assert events[0] == StreamRestarted(1, 0.02, "rate limited")


def test_retry_after_beyond_a_minute_gives_up_at_once() -> None:
    inner = ScriptedProvider([([], RateLimited("rate limited (429): quota", retry_after=300))])
    sleep = RecordingSleep()
    with pytest.raises(RateLimited) as caught:
        run(RetryingProvider(inner, max_retries=5, sleep=sleep))

    assert "300 s" in caught.value.message and "not retrying" in caught.value.message
    assert sleep.delays == [] and inner.calls == 1


def test_exhausted_retries_raise_the_last_error() -> None:
    inner = ScriptedProvider(
        [
            ([], ServerError("server error (500): a")),
            ([], ServerError("server error (503): b")),
            ([], Overloaded("the API is overloaded (529): c")),
        ]
    )
    sleep = RecordingSleep()
    with pytest.raises(Overloaded) as caught:
        run(RetryingProvider(inner, max_retries=2, sleep=sleep))

    assert caught.value.message.startswith("the API is overloaded (529): c")
    assert "gave up after 3 attempts" in caught.value.message
    assert sleep.delays == [0.5, 1.0]


@pytest.mark.parametrize(
    "error",
    [
        PromptTooLong("prompt is too long: 5 tokens > 4 maximum", tokens=5, maximum=4),
        AuthenticationFailed("authentication failed (401)"),
        ProviderError("something else"),
    ],
)
def test_non_retryable_errors_pass_through_untouched(error: ProviderError) -> None:
    inner = ScriptedProvider([([], error), ([DONE], None)])
    sleep = RecordingSleep()
    with pytest.raises(type(error)) as caught:
        run(RetryingProvider(inner, max_retries=3, sleep=sleep))

    assert caught.value is error and inner.calls == 1 and sleep.delays == []


def test_zero_retries_means_one_attempt() -> None:
    inner = ScriptedProvider([([], ServerError("boom"))])
    with pytest.raises(ServerError, match="gave up after 1 attempt"):
        run(RetryingProvider(inner, max_retries=0, sleep=RecordingSleep()))


def test_name_and_close_delegate() -> None:
    inner = ScriptedProvider([])
    wrapper = RetryingProvider(inner, max_retries=1)
    asyncio.run(wrapper.close())
    assert wrapper.name == "scripted" and inner.closed


def test_stopping_early_closes_the_inner_stream_at_once() -> None:
    inner = ScriptedProvider([([ModelTextDelta("a"), ModelTextDelta("b"), DONE], None)])
    wrapper = RetryingProvider(inner, max_retries=1, sleep=RecordingSleep())

    async def first_event_then_stop() -> tuple[StreamEvent, int]:
        events = wrapper.stream(REQUEST)
        first = await anext(events)
        await events.aclose()  # type: ignore[attr-defined]
        return first, inner.streams_closed

    assert asyncio.run(first_event_then_stop()) == (ModelTextDelta("a"), 1)
