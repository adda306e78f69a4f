"""A real session against the simulator, for the fault, disk, resume and secrets tests.

Everything here is the real stack: settings, the provider factory with its
retries, the SDK over HTTP to the simulator, the agent, tools and transcript.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from mini_claude import events as ev
from mini_claude.agent.loop import Agent
from mini_claude.conversation import Message, message_to_dict, validate
from mini_claude.permissions.asking import allow_all
from mini_claude.providers import create_provider
from mini_claude.session.wiring import Session
from mini_claude.settings import Settings
from mini_claude.simulator import RecordedRequest, Simulator

Provider = Literal["anthropic", "openai"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "openai")
MODEL = "sim-sonnet"
# One event loop per agent, as in the REPL: the SDK's connection pool belongs to a loop.
_loops: weakref.WeakKeyDictionary[Agent, asyncio.AbstractEventLoop] = weakref.WeakKeyDictionary()


def session_settings(sim: Simulator, provider: Provider, home: Path, **changes: Any) -> Settings:
    """Settings pointing one provider at the simulator, with a private home."""
    key = changes.pop("api_key", "test-key")
    base: dict[str, Any] = {"provider": provider, "model": MODEL, "home": home}
    url = sim.anthropic_base_url if provider == "anthropic" else sim.openai_base_url
    base.update(api_keys={provider: key}, base_urls={provider: url})
    base.update(changes)
    return Settings(**base)


def start_session(settings: Settings, project: Path) -> Session:
    session = Session(settings, project, create_provider(settings), allow_all)
    session.start_new()
    return session


def close_session(session: Session) -> None:
    """Close the SDK client on the loop that opened it, then the loop and the transcript."""
    agent = session.agent
    loop = _loops.pop(agent, None)
    if loop is not None and not loop.is_closed():
        loop.run_until_complete(session.provider.close())
        loop.close()
    agent.transcript.close()


@contextmanager
def closing_sessions() -> Iterator[list[Session]]:
    """A list to put sessions in; each is closed at the end."""
    opened: list[Session] = []
    try:
        yield opened
    finally:
        for session in opened:
            close_session(session)


def _run(agent: Agent, events: AsyncIterator[ev.Event]) -> list[ev.Event]:
    loop = _loops.get(agent)
    if loop is None or loop.is_closed():
        loop = _loops[agent] = asyncio.new_event_loop()
        weakref.finalize(agent, loop.close)

    async def collect() -> list[ev.Event]:
        return [event async for event in events]

    return loop.run_until_complete(collect())


def turn(agent: Agent, text: str) -> list[ev.Event]:
    """One user turn to the end, every event it produced."""
    return _run(agent, agent.turn(text))


def watched(agent: Agent, events: AsyncIterator[ev.Event],
            watch: Callable[[ev.Event], None]) -> list[ev.Event]:
    """``events`` of ``agent`` to the end, with ``watch`` called on each as it comes; the
    agent waits while ``watch`` runs (to make something happen at an exact point of a turn)."""

    async def each() -> AsyncIterator[ev.Event]:
        async for event in events:
            watch(event)
            yield event

    return _run(agent, each())


def compact(agent: Agent, focus: str | None = None) -> list[ev.Event]:
    return _run(agent, agent.compact(focus))


def before_call(agent: Agent) -> list[ev.Event]:
    """What the context steps do before the agent's next model call."""
    return _run(agent, agent.steps.before_call())


def of_kind(events: Iterable[ev.Event], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def finished_text(events: list[ev.Event]) -> str:
    done = of_kind(events, ev.TurnFinished)
    errors = [e.message for e in of_kind(events, ev.TurnError)]
    assert done, f"the turn did not finish: {errors}"
    return str(done[-1].final_text)


def snapshot(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [message_to_dict(m) for m in messages]


def assert_history_valid(agent: Agent, sim: Simulator) -> None:
    """The conversation is valid, and the server never had to refuse a request we built."""
    assert not validate(agent.conversation.messages), validate(agent.conversation.messages)
    refused = [r for r in sim.requests if r.status == 400 and r.fault != "prompt_too_long"]
    assert not refused, [r.error for r in refused]


def answered(sim: Simulator) -> list[RecordedRequest]:
    return [r for r in sim.requests if r.status == 200 and r.fault is None]


def make_project(root: Path) -> Path:
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "core.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "README.md").write_text("# demo project\n")
    return root
