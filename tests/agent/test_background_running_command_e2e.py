"""Sending a running foreground command to the background (Ctrl-B's method), end to end over
HTTP on both providers: the call returns at once with a shell id while the command goes on,
the shell is listed as running, its later output is read with shell_output, the turn goes
on, and its later file changes are checkpointed as a background shell's."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.agent.loop import Agent
from mini_claude.protocol import ToolProgress
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import Run, last_results

# Bounded: 40 s at most even if nothing stops it. Waits for ``go`` before its second part,
# so the test decides when the output after the move comes.
LOOP = ("for i in $(seq 1 400); do echo tick $i; [ -e go ] && break; sleep 0.1; done; "
        "echo AFTER-THE-MOVE > late.txt; echo part $((6*7)); sleep 60")
WAIT_SECONDS = 90.0


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    return root


def moved_turn(run: Run, text: str) -> tuple[list[ev.Event], list[int], list[bool]]:
    """A turn whose first live output of run_shell sends it to the background; what the
    method returned, and whether the shell still ran when the call's result came back."""
    moved: list[int] = []
    running_at_result: list[bool] = []

    async def collect(events: AsyncIterator[ev.Event], agent: Agent) -> list[ev.Event]:
        seen: list[ev.Event] = []
        async for event in events:
            seen.append(event)
            if isinstance(event, ToolProgress) and not moved:
                moved.append(agent.send_commands_to_background())
            if isinstance(event, ev.ToolFinished) and event.name == "run_shell":
                running_at_result.append(agent.tool_context.shells.get("bash_1").running)
        return seen

    events = run.run(collect(run.agent.turn(text), run.agent))
    return events, moved, running_at_result


def read_output(run: Run, shell_id: str) -> str:
    async def read() -> str:
        agent = run.agent
        output = await agent.registry.execute("shell_output", {"shell_id": shell_id},
                                              agent.tool_context)
        return output.content

    return run.run(read())


def until_read(run: Run, shell_id: str, needle: str) -> str:
    """Read the shell's new output until ``needle`` came (the event loop runs meanwhile)."""
    seen = ""
    for _ in range(int(WAIT_SECONDS / 0.1)):
        seen += read_output(run, shell_id)
        if needle in seen:
            return seen
        run.run(asyncio.sleep(0.1))
    raise AssertionError(f"{needle!r} never came; read: {seen[-2000:]}")


def test_a_running_command_sent_to_the_background_goes_on_and_the_turn_goes_on(
        provider: str, make_run: Any, simulator: Simulator, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Running the loop.", [ToolCall("run_shell", {"command": LOOP})]),
        Reply("Checking on it.", [ToolCall("shell_output", {"shell_id": "bash_1"})]),
        Reply("It goes on in the background."),
    ])
    run = make_run(provider)
    run.start()
    events, moved, running_at_result = moved_turn(run, "run the loop")

    assert moved == [1]
    assert running_at_result == [True]  # the call returned while the command still ran
    [result] = [e.result.content for e in events
                if isinstance(e, ev.ToolFinished) and e.name == "run_shell"]
    assert "moved this command to the background" in result and "bash_1" in result
    assert "tick 1" in result  # its output so far
    assert 'shell_output(shell_id="bash_1")' in result
    finished = [e for e in events if isinstance(e, ev.TurnFinished)]
    assert [f.final_text for f in finished] == ["It goes on in the background."]
    second, third = run.model_requests()[1:]
    assert last_results(second) == [result]  # the model was told, over the wire
    [check] = last_results(third)
    assert "[shell bash_1: running" in check

    shells = run.session.shells
    assert [s.id for s in shells.running()] == ["bash_1"]
    assert shells.get("bash_1").command == LOOP
    (project / "go").write_text("")
    later = until_read(run, "bash_1", "part 42")
    assert "tick 1\n" not in later  # already in the call's result: not read twice
    assert (project / "late.txt").read_text() == "AFTER-THE-MOVE\n"
    assert shells.running() != []  # still sleeping: it outlived the turn that started it

    run.run(asyncio.to_thread(shells.stop, "bash_1"))
    assert shells.running() == []
    assert "killed" in read_output(run, "bash_1")


def test_its_later_changes_are_checkpointed_as_a_background_shells(
        make_run: Any, simulator: Simulator, project: Path) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Running the loop.", [ToolCall("run_shell", {"command": LOOP})]),
        Reply("Moved on."),
        Reply("Next turn."),
    ])
    run = make_run("anthropic")
    run.start()
    _events, moved, _running = moved_turn(run, "run the loop")
    assert moved == [1]
    (project / "go").write_text("")
    until_read(run, "bash_1", "part 42")
    run.turn("anything new?")  # a turn boundary: the shell's changes so far are recorded

    records = [json.loads(line) for line in run.agent.transcript.path.read_text().splitlines()
               if line.strip()]
    changes = [r for r in records if r.get("path", "").endswith("late.txt")]
    assert changes and {r["by"] for r in changes} == {"a background shell"}


def test_sending_to_the_background_with_nothing_running_does_nothing(
        make_run: Any, simulator: Simulator) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Quick.", [ToolCall("run_shell", {"command": "echo quick"})]),
        Reply("Done."),
    ])
    run = make_run("anthropic")
    run.start()
    assert run.agent.send_commands_to_background() == 0
    events = run.turn("run something quick")
    assert run.agent.send_commands_to_background() == 0
    assert run.session.shells.all() == []
    [result] = [e.result.content for e in events
                if isinstance(e, ev.ToolFinished) and e.name == "run_shell"]
    assert result.startswith("quick") and "[exit code 0]" in result
    assert [e.final_text for e in events if isinstance(e, ev.TurnFinished)] == ["Done."]


def test_a_moved_commands_log_keeps_its_cap(make_run: Any, simulator: Simulator,
                                             project: Path) -> None:
    flood = LOOP.replace("echo AFTER-THE-MOVE > late.txt;",
                         "head -c 300000 /dev/zero | tr '\\0' x;")
    simulator.policy = ScriptedPolicy([
        Reply("Running the loop.", [ToolCall("run_shell", {"command": flood})]),
        Reply("Moved on."),
    ])
    run = make_run("anthropic", shell_log_cap_bytes=20_000)
    run.start()
    _events, moved, _running = moved_turn(run, "run the loop")
    assert moved == [1]
    (project / "go").write_text("")
    later = until_read(run, "bash_1", "part 42")  # the tail, rewritten though it went quiet
    assert "were dropped for good" in later
    log = run.session.shells.get("bash_1").log_path
    assert log.stat().st_size < 20_000 + 200  # the cap, and the line saying what was dropped
