"""A whole session (settings, tools, agent, transcript) talking HTTP to the simulator."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from mini_claude import events as ev
from mini_claude.agent.loop import Agent
from mini_claude.permissions.asking import Approver, allow_all
from mini_claude.permissions.mode_table import PermissionMode
from mini_claude.providers import create_provider
from mini_claude.session.wiring import Session
from mini_claude.settings import Settings
from mini_claude.simulator import RecordedRequest, Simulator

PROVIDERS = ("anthropic", "openai")
T = TypeVar("T")


class Run:
    """One event loop for the whole test: the SDK client is bound to the loop it started on."""

    def __init__(self, sim: Simulator, provider: str, home: Path, project: Path, *,
                 approver: Approver = allow_all, mode_flag: PermissionMode | None = None,
                 **overrides: Any) -> None:
        values: dict[str, Any] = {
            "provider": provider,
            "model": "sim-model",
            "home": home,
            "max_retries": 0,
            "api_keys": {"anthropic": "sk-test-plan", "openai": "sk-test-plan"},
            "base_urls": {"anthropic": sim.anthropic_base_url, "openai": sim.openai_base_url},
        }
        values.update(overrides)
        self.sim = sim
        self.settings = Settings(**values)
        self.project = project
        self.loop = asyncio.new_event_loop()
        self.session = Session(self.settings, project, create_provider(self.settings), approver,
                               mode_flag=mode_flag)
        self.events: list[ev.Event] = []

    def start(self) -> Agent:
        return self.session.start_new()

    @property
    def agent(self) -> Agent:
        return self.session.agent

    def run(self, coro: Awaitable[T]) -> T:
        return self.loop.run_until_complete(coro)

    def turn(self, text: str) -> list[ev.Event]:
        async def collect() -> list[ev.Event]:
            return [event async for event in self.agent.turn(text)]

        events = self.run(collect())
        self.events.extend(events)
        return events

    def stopped_turn(self, text: str) -> None:
        """A turn stopped (Esc) while its first tool call runs, as the user stops one."""

        async def stop_when_the_call_runs() -> None:
            started = asyncio.Event()

            async def consume() -> None:
                async for event in self.agent.turn(text):
                    if isinstance(event, ev.ToolStarted):
                        started.set()

            task = asyncio.ensure_future(consume())
            waiter = asyncio.ensure_future(started.wait())
            await asyncio.wait([task, waiter], return_when=asyncio.FIRST_COMPLETED)
            waiter.cancel()
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

        self.run(stop_when_the_call_runs())

    def compact(self, focus: str | None = None) -> list[ev.Event]:
        async def collect() -> list[ev.Event]:
            return [event async for event in self.agent.compact(focus)]

        events = self.run(collect())
        self.events.extend(events)
        return events

    def close(self) -> None:
        if self.loop.is_closed():
            return
        self.agent.transcript.close()
        self.session.checkpointer.close()  # its watch on the project (a per-user kernel limit)
        self.run(self.session.provider.close())
        self.loop.close()

    def model_requests(self) -> list[RecordedRequest]:
        return [r for r in self.sim.requests if not r.is_side_request]

    def summary_requests(self) -> list[RecordedRequest]:
        return [r for r in self.sim.requests if r.is_summary_request]


class Runs:
    """Runs of one test, made on demand and all closed at its end (a fixture's yield)."""

    def __init__(self, sim: Simulator, home: Path, project: Path) -> None:
        self.sim, self.home, self.project = sim, home, project
        self.made: list[Run] = []

    def __call__(self, provider: str, **overrides: Any) -> Run:
        run = Run(self.sim, provider, self.home, self.project, **overrides)
        self.made.append(run)
        return run

    def close(self) -> None:
        for run in self.made:
            run.session.shells.stop_all(grace=0.5)
            run.close()


@contextmanager
def run_factory(sim: Simulator, home: Path, project: Path) -> Iterator[Runs]:
    """Makes :class:`Run` objects for a test and closes them all at its end."""
    made = Runs(sim, home, project)
    try:
        yield made
    finally:
        made.close()


@pytest.fixture
def runs(simulator: Simulator, isolated_home: Path, project: Path) -> Iterator[Runs]:
    """``runs(provider, **settings)`` makes a Run in the test's ``project``; all are closed
    (and their background shells stopped) when the test ends."""
    with run_factory(simulator, isolated_home, project) as made:
        yield made


def request_text(request: RecordedRequest) -> str:
    """Every text and tool result of a request, as the policy saw it."""
    assert request.conversation is not None
    parts: list[str] = []
    for message in request.conversation.messages:
        parts.append(message.text)
        parts.extend(r.content for r in message.tool_results)
    return "\n".join(parts)


def first_message_text(request: RecordedRequest) -> str:
    assert request.conversation is not None
    return request.conversation.messages[0].text


def last_results(request: RecordedRequest) -> list[str]:
    assert request.conversation is not None
    return [r.content for r in request.conversation.last_tool_results()]
