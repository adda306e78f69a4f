"""The task tool end to end: a session delegates to sub-agents over HTTP, both providers."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.conversation import INTERRUPTED_RESULT, validate
from mini_claude.session import Session
from mini_claude.simulator import Fault, FunctionPolicy, Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.simulator.policies import system_contains, user_contains
from mini_claude.simulator.types import SimConversation
from mini_claude.subagent import task_transcripts_dir
from mini_claude.transcript import load_session
from mini_claude.tools.base import PermissionDecision, PermissionRequest
from tests.reliability_support import PROVIDERS, Provider, session_settings
from tests.subagent_support import (
    EXPLORE_SYSTEM,
    GENERAL_SYSTEM,
    PARENT_SYSTEM,
    close,
    events_of,
    request_text,
    requests_of,
    results,
    route,
    start,
    task_call,
    tool_names,
    transcript_records,
)

SECRET_LINE = "CHILD-ONLY loader reads settings.toml through load_config()"
ANSWER = "The config is loaded by load_config() in pkg/config.py, line 1."


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "config.py").write_text(f"def load_config():\n    # {SECRET_LINE}\n")
    (root / "README.md").write_text("# demo\n")
    return root


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    new = asyncio.new_event_loop()
    yield new
    if not new.is_closed():
        new.close()


def run_turn(loop: asyncio.AbstractEventLoop, session: Session, text: str) -> list[ev.Event]:
    async def collect(events: AsyncIterator[ev.Event]) -> list[ev.Event]:
        return [event async for event in events]

    return loop.run_until_complete(collect(session.agent.turn(text)))


def child_transcripts(session: Session) -> list[Path]:
    return sorted(task_transcripts_dir(session.settings, session.session_id).glob("*.jsonl"))


@pytest.mark.parametrize("provider", PROVIDERS)
def test_child_works_in_its_own_context_and_only_its_answer_reaches_the_parent(
    simulator: Simulator, provider: Provider, project: Path, isolated_home: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    child = ScriptedPolicy([
        Reply("Searching.", [ToolCall("grep_search", {"pattern": "load_config"})]),
        Reply("Reading.", [ToolCall("read_file", {"path": "pkg/config.py"})]),
        Reply(ANSWER),
    ])
    route(simulator, [Reply("Delegating.", [task_call("FIND-CONFIG: where is the config "
                                                      "loaded?", "find the config loader")])],
          [(user_contains("FIND-CONFIG"), child)])
    session = start(session_settings(simulator, provider, isolated_home), project)
    try:
        events = run_turn(loop, session, "How is the configuration loaded?")
        agent = session.agent

        assert [r.content for r in results(agent)] == [ANSWER]
        parents = requests_of(simulator, PARENT_SYSTEM)
        children = requests_of(simulator, EXPLORE_SYSTEM)
        assert len(parents) == 2 and len(children) == 3
        assert "task" in tool_names(parents[0])
        assert sorted(tool_names(children[0])) == ["grep_search", "list_files", "read_file"]
        assert SECRET_LINE in request_text(children[2])  # the child read it...
        assert not any(SECRET_LINE in request_text(r) for r in parents)  # ...the parent never
        assert ANSWER in request_text(parents[1])
        assert not validate(agent.conversation.messages)

        progress = [e for e in events if isinstance(e, ev.TaskProgress)]
        assert progress[-1].state == "done" and progress[-1].calls == 2
        assert progress[-1].label == "task: find the config loader · 2 calls"
        assert agent.costs.requests == 5  # the child's three calls count in the session's
        total = agent.costs.usage.prompt_tokens + agent.costs.usage.output_tokens
        assert total > progress[-1].tokens > 0
        assert agent.costs.dollars > progress[-1].cost_usd > 0

        [path] = child_transcripts(session)
        [started] = events_of(agent.transcript.path, "task_started")
        assert started["transcript"] == str(path) and started["agent_type"] == "explore"
        [finished] = events_of(agent.transcript.path, "task_finished")
        assert finished["state"] == "done" and finished["calls"] == 2
        child_messages = [r for r in transcript_records(path) if r["type"] == "message"]
        assert len(child_messages) == 6  # prompt, 2 x (call, result), answer
        assert SECRET_LINE in path.read_text()
        assert SECRET_LINE not in agent.transcript.path.read_text()
    finally:
        close(session, loop)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_two_tasks_in_one_reply_run_at_the_same_time_and_answer_in_call_order(
    simulator: Simulator, provider: Provider, project: Path, isolated_home: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    b_arrived = threading.Event()
    reading = Reply("Reading.", [ToolCall("read_file", {"path": "README.md"})])

    def job_a_answer(conv: SimConversation) -> Reply:
        # Run one after the other, B could only start once A had answered.
        return Reply("A ran alongside B." if b_arrived.is_set() else "A ran alone.")

    def job_b(conv: SimConversation) -> Reply:
        b_arrived.set()
        return Reply("B's answer.")

    route(simulator, [Reply("Two at once.", [task_call("JOB-A: first", "first job"),
                                             task_call("JOB-B: second", "second job")])],
          [(user_contains("JOB-A"), ScriptedPolicy([reading, reading, job_a_answer])),
           (user_contains("JOB-B"), FunctionPolicy(job_b))])
    session = start(session_settings(simulator, provider, isolated_home), project)
    try:
        events = run_turn(loop, session, "Do both jobs.")
        agent = session.agent
        assert [r.content for r in results(agent)] == ["A ran alongside B.", "B's answer."]
        assert not validate(agent.conversation.messages)
        finished = [e for e in events if isinstance(e, ev.ToolFinished)]
        assert [e.result.content for e in finished] == ["A ran alongside B.", "B's answer."]
        assert len(child_transcripts(session)) == 2
        assert {e["state"] for e in events_of(agent.transcript.path, "task_finished")} == {"done"}
    finally:
        close(session, loop)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancelling_the_turn_cancels_every_task_and_leaves_valid_histories(
    simulator: Simulator, provider: Provider, project: Path, isolated_home: Path,
    loop: asyncio.AbstractEventLoop,
) -> None:
    reading = Reply("Reading first.", [ToolCall("read_file", {"path": "README.md"})])
    route(simulator, [Reply("Two at once.", [task_call("JOB-A: first"),
                                             task_call("JOB-B: second")])],
          [(user_contains("JOB-A"), ScriptedPolicy([reading], final=Reply("too late"))),
           (user_contains("JOB-B"), ScriptedPolicy([], final=Reply("too late")))])
    # A hangs after its read, B at once: the server answers neither until they go away.
    after_read = user_contains("JOB-A")
    simulator.inject(Fault("hang", when=lambda c: after_read(c) and bool(c.tool_results())))
    simulator.inject(Fault("hang", when=user_contains("JOB-B")))
    session = start(session_settings(simulator, provider, isolated_home), project)
    agent = session.agent
    seen: list[ev.Event] = []

    async def cancel_when_both_wait() -> None:
        async def consume() -> None:
            async for event in agent.turn("Do both jobs."):
                seen.append(event)

        running = asyncio.ensure_future(consume())
        while sum(r.fault == "hang" for r in simulator.requests) < 2:
            await asyncio.sleep(0.02)
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running

    try:
        loop.run_until_complete(asyncio.wait_for(cancel_when_both_wait(), 60))
        assert not validate(agent.conversation.messages)
        assert [r.content for r in results(agent)] == [INTERRUPTED_RESULT] * 2
        paths = child_transcripts(session)
        assert len(paths) == 2
        for path in paths:
            [end] = events_of(path, "task_end")
            assert end["state"] == "interrupted"
            assert events_of(path, "interrupted")
            assert not validate(load_session(path).conversation.messages)
        states = {e["state"] for e in events_of(agent.transcript.path, "task_finished")}
        assert states == {"interrupted"}
    finally:
        close(session, loop)
