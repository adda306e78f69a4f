"""The model's `compact` tool goes through the registry like any tool, then the agent summarizes.

Real session, real adapters over HTTP to the simulator: the arguments are
checked by the registry, and a valid call leads to one compaction (reason
"tool") before the next request, with the focus in the summary request.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.session.wiring import Session
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.reliability import (
    PROVIDERS,
    Provider,
    assert_history_valid,
    before_call,
    closing_sessions,
    finished_text,
    make_project,
    of_kind,
    session_settings,
    start_session,
    turn,
)


@pytest.fixture
def start(tmp_path: Path, simulator: Simulator) -> Iterator[Callable[[Provider], Session]]:
    project = make_project(tmp_path / "project")
    with closing_sessions() as opened:

        def open_session(provider: Provider) -> Session:
            settings = session_settings(simulator, provider, tmp_path / "home")
            opened.append(start_session(settings, project))
            return opened[-1]

        yield open_session


def script(compact_args: dict[str, Any]) -> ScriptedPolicy:
    """A first turn that reads a file, then a turn whose first step calls compact."""
    return ScriptedPolicy([
        Reply("", [ToolCall("read_file", {"path": "pkg/core.py"})]),
        Reply("core.py adds two numbers."),
        Reply("", [ToolCall("compact", compact_args)]),
        Reply("Compacted; carrying on."),
    ])


def summary_requests(sim: Simulator) -> list[str]:
    return [r.conversation.messages[-1].text for r in sim.requests
            if r.is_summary_request and r.conversation is not None]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_valid_compact_call_summarizes_before_the_next_request(
    provider: Provider, simulator: Simulator, start: Callable[[Provider], Session]
) -> None:
    simulator.policy = script({"focus": "the adder"})
    session = start(provider)
    finished_text(turn(session.agent, "what does core.py do?"))
    events = turn(session.agent, "tidy up the context")
    assert finished_text(events) == "Compacted; carrying on."
    assert [e.reason for e in of_kind(events, ev.CompactionFinished)] == ["tool"]
    (instruction,) = summary_requests(simulator)
    assert instruction.endswith("Focus: the adder")
    (result,) = [e.result for e in of_kind(events, ev.ToolFinished)]
    assert not result.is_error and "summarized" in result.content
    assert session.agent.stats()["compactions"] == 1
    assert not of_kind(before_call(session.agent), ev.CompactionStarted)  # served once
    assert_history_valid(session.agent, simulator)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_compact_call_with_bad_arguments_is_refused_and_nothing_is_summarized(
    provider: Provider, simulator: Simulator, start: Callable[[Provider], Session]
) -> None:
    simulator.policy = script({"focus": 42, "level": "deep"})
    session = start(provider)
    finished_text(turn(session.agent, "what does core.py do?"))
    events = turn(session.agent, "tidy up the context")
    assert finished_text(events) == "Compacted; carrying on."
    (result,) = [e.result for e in of_kind(events, ev.ToolFinished)]
    assert result.is_error
    assert "'focus' must be a string" in result.content
    assert "unknown argument 'level'" in result.content
    assert not of_kind(events, ev.CompactionStarted)
    assert summary_requests(simulator) == []
    assert_history_valid(session.agent, simulator)
