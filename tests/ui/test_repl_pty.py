"""`mini-claude` in a real pseudo-terminal, its screen read back through a terminal emulator
(the harness is tests/support/pty_terminal.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.pty_terminal import WAIT_SECONDS, Screen, Spawn, spawner, write_notes_project

COLUMNS, ROWS = 120, 32
PERCENT = re.compile(r"context (\d+)% ")


def at_prompt(term: Screen) -> int:
    """Wait for an empty prompt with the idle status bar; returns the percentage shown."""
    term.wait(lambda t: t.has_empty_prompt and t.bottom.rstrip().endswith("sim-model")
              and PERCENT.search(t.bottom) is not None, "the prompt with its status bar")
    match = PERCENT.search(term.bottom)
    assert match is not None
    return int(match.group(1))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_notes_project(tmp_path / "project")


@pytest.fixture
def spawn(project: Path, isolated_home: Path) -> Iterator[Spawn]:
    yield from spawner(project, size_in_env=True)


def essay(topic: str) -> str:
    return " ".join(f"The {topic} step {i} went as planned." for i in range(12))


def test_a_session_in_a_real_terminal(spawn: Spawn,
                                      project: Path) -> None:
    policy = ScriptedPolicy([
        Reply(text="Searching the notes first.",
              tool_calls=[ToolCall("grep_search", {"pattern": "build"})]),
        Reply(text="## Findings\n\n" + essay("reading") + "\n\n```python\nprint('ok')\n```\n"),
        Reply(text="Running them.",
              tool_calls=[ToolCall("run_shell", {"command": "echo 7 passed"})]),
        Reply(text=essay("testing")),
        Reply(tool_calls=[ToolCall("run_shell", {"command": "rm -rf build"})]),
        Reply(text="Understood, I left the build folder alone. " + essay("waiting")),
    ])
    with Simulator(policy) as sim:
        term = spawn(sim, columns=COLUMNS, rows=ROWS)
        term.wait_text("sim-model")
        start = at_prompt(term)
        assert "12k window" in term.text

        term.type("what do the notes say?\r")
        term.wait_text("● grep_search(build)")
        term.wait_text("print('ok')")
        after_first = at_prompt(term)
        assert "The reading step 11 went as planned." in term.text
        assert after_first > start

        term.type("run the tests\r")
        term.wait_text("Do you want to proceed?")
        term.wait_text("1. Yes")
        assert "echo 7 passed" in term.text
        term.type("1")
        term.wait_text("7 passed")
        after_second = at_prompt(term)
        assert after_second > after_first

        term.type("clean up\r")
        term.wait_text("3. No, and tell the agent what to do differently")
        term.type("3")
        term.wait_text("What should the agent do instead?")
        term.type("keep the build\r")
        term.wait_text("Understood, I left the build folder alone.")
        after_third = at_prompt(term)
        assert after_third > after_second
        assert "denied: keep the build" in term.text

        term.type("/context\r")
        term.wait_text("output reserve")
        assert re.search(r"in the prompt\s+[\d,]+", term.text)
        at_prompt(term)
        term.type("/cost\r")
        term.wait_text("cache read")
        at_prompt(term)

        term.type("/compact\r")
        term.wait_text("✓ compacted (/compact)")
        after_compact = at_prompt(term)
        assert after_compact < after_third

        sim.inject(Fault("slow", delay_s=60))
        term.type("one more thing\r")
        term.wait(lambda t: "esc to interrupt" in t.text and PERCENT.search(t.bottom) is not None,
                  "the live spinner and status bar")
        assert "thinking…" in term.bottom
        term.type("\x03")
        term.wait_text("Interrupted")
        at_prompt(term)

        term.type("and now?\r")
        term.wait_text("Done.")
        at_prompt(term)
        term.type("\x04")
        term.wait_text("mini-claude --resume")
        term.child.expect(pexpect.EOF, timeout=WAIT_SECONDS)
