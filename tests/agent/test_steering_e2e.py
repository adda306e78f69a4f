"""Steering end to end over HTTP, both providers: a message sent while a turn runs reaches the
model before its next call, beside the step's tool results (every call keeps its result) or as
a message of its own; it is marked in the transcript, survives a compaction word for word, and
goes to the parent while a sub-agent works."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.agent.loop import Agent
from mini_claude.conversation import validate
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.simulator.policies import user_contains
from mini_claude.transcript import load_session
from tests.support.agent import Run
from tests.support.subagent import (
    EXPLORE_SYSTEM,
    PARENT_SYSTEM,
    request_text,
    requests_of,
    route,
    task_call,
)

STEER = "STEER-7: use the staging config, not production"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    for i in range(6):
        (root / f"big_{i}.txt").write_text("".join(f"BIG-{i} row {n}\n" for n in range(400)))
    return root


def steered_turn(run: Run, text: str, when: Callable[[ev.Event], bool],
                 message: str = STEER) -> list[ev.Event]:
    """A turn during which ``message`` is sent the first time ``when`` holds for an event."""

    async def collect(events: AsyncIterator[ev.Event], agent: Agent) -> list[ev.Event]:
        seen: list[ev.Event] = []
        sent = False
        async for event in events:
            seen.append(event)
            if not sent and when(event):
                sent = agent.steer(message)
        return seen

    events = run.run(collect(run.agent.turn(text), run.agent))
    run.events.extend(events)
    return events


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_a_message_sent_during_a_step_goes_with_its_results_and_is_marked(
        provider: str, make_run: Any, simulator: Simulator) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "a.txt"})]),
        Reply("Switched to staging."),
    ])
    run = make_run(provider)
    run.start()
    events = steered_turn(run, "check the config", lambda e: isinstance(e, ev.ToolStarted))

    assert [e.text for e in events if isinstance(e, ev.SteeringDelivered)] == [STEER]
    first, second = run.model_requests()
    assert STEER not in json.dumps(first.body)
    messages = second.body["messages"]
    if provider == "anthropic":
        last = messages[-1]
        assert last["role"] == "user"
        kinds = [block["type"] for block in last["content"]]
        assert kinds == ["tool_result", "text"]  # the call keeps its result, first
        assert STEER in last["content"][1]["text"]
    else:
        assert [m["role"] for m in messages[-3:]] == ["assistant", "tool", "user"]
        assert STEER in messages[-1]["content"]
    assert validate(run.agent.conversation.messages) == []
    lines = records(run.agent.transcript.path)
    [mark] = [r for r in lines if r["type"] == "steering"]
    assert mark["text"] == STEER
    carrier = next(r for r in lines if r.get("id") == mark["message"])
    assert STEER in json.dumps(carrier["message"])
    assert load_session(run.agent.transcript.path).warnings == []


def test_a_message_sent_while_the_model_answers_goes_as_its_own_and_the_turn_goes_on(
        provider: str, make_run: Any, simulator: Simulator) -> None:
    simulator.policy = ScriptedPolicy([Reply("Production looks fine."),
                                       Reply("Staging, then: also fine.")])
    run = make_run(provider)
    run.start()
    events = steered_turn(run, "check the config", lambda e: isinstance(e, ev.ModelCallStarted))

    finished = [e for e in events if isinstance(e, ev.TurnFinished)]
    assert [f.final_text for f in finished] == ["Staging, then: also fine."]
    second = run.model_requests()[1]
    assert second.conversation is not None
    assert second.conversation.messages[-1].text == STEER
    assert validate(run.agent.conversation.messages) == []
    assert [r["text"] for r in records(run.agent.transcript.path)
            if r["type"] == "steering"] == [STEER]


def test_a_steering_message_survives_a_compaction_word_for_word(
        provider: str, make_run: Any, simulator: Simulator) -> None:
    reads = [Reply(f"Reading {i}.", [ToolCall("read_file", {"path": f"big_{i}.txt"})])
             for i in range(4)]
    simulator.policy = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "a.txt"})]),
        *reads,
        Reply("Compacting.", [ToolCall("compact", {})]),
        Reply("Done, with staging."),
    ])
    run = make_run(provider, context_window=40_000)
    run.start()
    steered_turn(run, "check the config", lambda e: isinstance(e, ev.ToolStarted))

    [summary] = run.summary_requests()
    after = next(r for r in run.sim.requests[run.sim.requests.index(summary) + 1:]
                 if not r.is_side_request)
    assert after.conversation is not None
    texts = "\n".join(m.text for m in after.conversation.messages)
    assert texts.count(STEER) == 1  # kept verbatim, once
    assert "BIG-0 row 200" not in json.dumps(after.body)  # the step it rode on was compacted
    assert validate(run.agent.conversation.messages) == []


def test_a_message_sent_while_a_sub_agent_works_goes_to_the_parent(
        provider: str, make_run: Any, simulator: Simulator) -> None:
    child = ScriptedPolicy([
        Reply("Reading.", [ToolCall("read_file", {"path": "a.txt"})]),
        Reply("The file says alpha."),
    ])
    route(simulator, [Reply("Delegating.", [task_call("LOOK-A: what is in a.txt?")]),
                      Reply("Noted: staging.")],
          [(user_contains("LOOK-A"), child)])
    run = make_run(provider)
    run.start()
    events = steered_turn(run, "look at a.txt",
                          lambda e: isinstance(e, ev.TaskProgress) and e.state == "running")

    assert [e.text for e in events if isinstance(e, ev.SteeringDelivered)] == [STEER]
    parents = requests_of(simulator, PARENT_SYSTEM)
    children = requests_of(simulator, EXPLORE_SYSTEM)
    assert len(parents) == 2 and children
    assert STEER in request_text(parents[1])  # with the task's result
    assert "The file says alpha." in request_text(parents[1])
    assert not any(STEER in request_text(r) for r in children)
    assert validate(run.agent.conversation.messages) == []


def test_what_was_not_delivered_is_taken_back(make_run: Any, simulator: Simulator) -> None:
    simulator.policy = ScriptedPolicy([Reply("Reading.", [ToolCall("read_file",
                                                                   {"path": "a.txt"})])])
    run = make_run("anthropic")
    run.start()
    assert not run.agent.steer("   ")  # blank: nothing queued

    async def stopped_at_the_tool() -> None:
        async for event in run.agent.turn("check"):
            if isinstance(event, ev.ToolStarted):
                run.agent.steer("STEER-ONE")
                run.agent.steer("STEER-TWO")
                raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        run.run(stopped_at_the_tool())
    assert run.agent.take_steering() == ["STEER-ONE", "STEER-TWO"]
    assert run.agent.take_steering() == []
    assert "STEER-ONE" not in json.dumps([r.body for r in run.model_requests()])
