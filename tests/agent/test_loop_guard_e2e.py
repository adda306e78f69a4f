"""The loop guard end to end over HTTP, both providers: scripted loops earn the model a reminder
on the newest result (the cached prefix untouched), recorded in the transcript; a loop that goes
on is told to the user (a notice; a line in print mode); polling output that changes and
re-reading a file that changed earn nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.cli import main
from mini_claude.plan import REMINDER_TAG
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import last_results
from tests.support.printing import point_at, run_from

READ = ToolCall("read_file", {"path": "a.txt"})
COUNTER = "n=$(cat n 2>/dev/null || echo 0); n=$((n+1)); echo $n > n; echo run $n of the tests"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("alpha\n")
    return root


def guard_events(path: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [r for r in lines if r["type"] == "event" and r["kind"] == "loop_guard"]


def steps(*calls: ToolCall) -> list[Reply]:
    return [Reply(f"Step {n}.", [c]) for n, c in enumerate(calls, 1)]


def test_a_file_read_over_and_over_earns_a_reminder_then_a_notice(
        provider: str, make_run: Any, simulator: Simulator) -> None:
    simulator.policy = ScriptedPolicy([*steps(READ, READ, READ, READ), Reply("Done.")])
    run = make_run(provider)
    run.start()
    events = run.turn("what is in a.txt?")

    requests = run.model_requests()
    assert len(requests) == 5
    assert not any(REMINDER_TAG in r for q in requests[:3] for r in last_results(q))
    reminded = last_results(requests[3])[-1]  # after the third read
    assert "Loop guard: a.txt was read 3 times" in reminded
    assert "another approach" in reminded
    first_three = json.dumps(requests[3].body["messages"][:-1])
    assert "Loop guard" not in first_three  # older messages untouched: the cache holds
    notices = [e for e in events if isinstance(e, ev.Notice) and "circles" in e.text]
    assert len(notices) == 1 and notices[0].level == "warning"
    recorded = guard_events(run.agent.transcript.path)
    assert [(r["rule"], r["reminded"], r["told_user"]) for r in recorded] == [
        ("re-read", True, False), ("re-read", True, True)]
    assert run.agent.loop_guard.summary() is not None


def test_a_command_failing_the_same_way_earns_a_reminder_naming_it(
        provider: str, make_run: Any, simulator: Simulator) -> None:
    failing = ToolCall("run_shell", {"command": "cat missing.txt"})
    simulator.policy = ScriptedPolicy([*steps(failing, failing, failing), Reply("Stuck.")])
    run = make_run(provider)
    run.start()
    run.turn("show missing.txt")

    reminded = last_results(run.model_requests()[3])[-1]
    assert "the command `cat missing.txt` failed 3 times with the same error" in reminded
    assert [r["rule"] for r in guard_events(run.agent.transcript.path)] == ["failing command"]


def test_polling_output_that_changes_and_rereading_a_changed_file_earn_nothing(
        provider: str, make_run: Any, simulator: Simulator, project: Path) -> None:
    poll = ToolCall("run_shell", {"command": COUNTER})
    grow = ToolCall("run_shell", {"command": "echo more >> a.txt"})
    simulator.policy = ScriptedPolicy([
        *steps(poll, poll, poll, poll, READ, grow, READ, grow, READ, grow, READ),
        Reply("Done."),
    ])
    run = make_run(provider)
    run.start()
    events = run.turn("run the tests until they are done, and watch a.txt")

    assert (project / "n").read_text().strip() == "4"
    assert not guard_events(run.agent.transcript.path)
    assert not any(REMINDER_TAG in r for q in run.model_requests() for r in last_results(q))
    assert not any(isinstance(e, ev.Notice) for e in events)


def test_print_mode_says_so_in_one_line_when_the_loop_goes_on(
        simulator: Simulator, project: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    simulator.policy = ScriptedPolicy([*steps(READ, READ, READ, READ), Reply("Done.")])
    point_at(simulator, "anthropic", monkeypatch)
    run_from(project, monkeypatch)
    assert main(["-p", "what is in a.txt?"]) == 0
    out, err = capsys.readouterr()
    assert out == "Done.\n"
    [line] = [line for line in err.splitlines() if "circles" in line]
    assert "a.txt was read 4 times" in line
