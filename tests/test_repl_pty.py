"""`mini-claude` in a real pseudo-terminal, its screen read back through a terminal emulator.

pexpect runs the installed command; pyte plays the terminal (and answers the
cursor-position requests prompt_toolkit sends, so the bottom toolbar is drawn).
Every step waits for text on the screen with a generous limit.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pyte
import pytest

from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall

COLUMNS, ROWS = 120, 32
WAIT_SECONDS = 30.0
CPR_REQUEST = b"\x1b[6n"
PERCENT = re.compile(r"context (\d+)% ")
COMMAND = str(Path(sys.executable).with_name("mini-claude"))


class Terminal:
    """A screen fed by the child's output; answers cursor-position requests like a terminal."""

    def __init__(self, child: pexpect.spawn) -> None:
        self.child = child
        self.screen = pyte.Screen(COLUMNS, ROWS)
        self.stream = pyte.ByteStream(self.screen)

    def pump(self) -> None:
        try:
            data = self.child.read_nonblocking(65536, timeout=0.05)
        except (pexpect.TIMEOUT, pexpect.EOF):
            return
        for chunk in re.split(b"(" + re.escape(CPR_REQUEST) + b")", data):
            if chunk == CPR_REQUEST:
                row, column = self.screen.cursor.y + 1, self.screen.cursor.x + 1
                self.child.send(f"\x1b[{row};{column}R")
            else:
                self.stream.feed(chunk)

    @property
    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    @property
    def bottom(self) -> str:
        """The lowest row with anything on it: the status bar, at the prompt or during a turn."""
        rows = [line for line in self.screen.display if line.strip()]
        return rows[-1] if rows else ""

    def wait(self, predicate: Callable[[Terminal], bool], what: str) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            self.pump()
            if predicate(self):
                return
        raise AssertionError(f"timed out waiting for {what}; the screen:\n{self.text}")

    def wait_text(self, needle: str) -> None:
        self.wait(lambda t: needle in t.text, repr(needle))

    def at_prompt(self) -> int:
        """Wait for an empty prompt with the idle status bar; returns the percentage shown."""
        self.wait(lambda t: _has_empty_prompt(t) and t.bottom.rstrip().endswith("sim-model")
                  and PERCENT.search(t.bottom) is not None, "the prompt with its status bar")
        match = PERCENT.search(self.bottom)
        assert match is not None
        return int(match.group(1))

    def type(self, keys: str) -> None:
        self.child.send(keys)


def _has_empty_prompt(term: Terminal) -> bool:
    return any(line.rstrip() == ">" for line in term.screen.display)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text(
        "".join(f"note {i}: the build uses make and the tests use pytest\n" for i in range(70)))
    return folder


@pytest.fixture
def spawn(project: Path, isolated_home: Path) -> Iterator[Callable[[Simulator], Terminal]]:
    children: list[pexpect.spawn] = []

    def start(sim: Simulator) -> Terminal:
        env = dict(os.environ)
        env.update({
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": sim.anthropic_base_url,
            "MINI_CLAUDE_MODEL": "sim-model",
            "MINI_CLAUDE_CONTEXT_WINDOW": "12000",
            "MINI_CLAUDE_MAX_RETRIES": "0",
            "TERM": "xterm-256color",
            "COLUMNS": str(COLUMNS),
            "LINES": str(ROWS),
        })
        child = pexpect.spawn(COMMAND, cwd=str(project), env=env, dimensions=(ROWS, COLUMNS))
        children.append(child)
        return Terminal(child)

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)


def essay(topic: str) -> str:
    return " ".join(f"The {topic} step {i} went as planned." for i in range(12))


def test_a_session_in_a_real_terminal(spawn: Callable[[Simulator], Terminal],
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
        term = spawn(sim)
        term.wait_text("sim-model")
        start = term.at_prompt()
        assert "12k window" in term.text

        term.type("what do the notes say?\r")
        term.wait_text("● grep_search(build)")
        term.wait_text("print('ok')")
        after_first = term.at_prompt()
        assert "The reading step 11 went as planned." in term.text
        assert after_first > start

        term.type("run the tests\r")
        term.wait_text("Do you want to proceed?")
        term.wait_text("1. Yes")
        assert "echo 7 passed" in term.text
        term.type("1")
        term.wait_text("7 passed")
        after_second = term.at_prompt()
        assert after_second > after_first

        term.type("clean up\r")
        term.wait_text("3. No, and tell the agent what to do differently")
        term.type("3")
        term.wait_text("What should the agent do instead?")
        term.type("keep the build\r")
        term.wait_text("Understood, I left the build folder alone.")
        after_third = term.at_prompt()
        assert after_third > after_second
        assert "denied: keep the build" in term.text

        term.type("/context\r")
        term.wait_text("output reserve")
        assert re.search(r"in the prompt\s+[\d,]+", term.text)
        term.at_prompt()
        term.type("/cost\r")
        term.wait_text("cache read")
        term.at_prompt()

        term.type("/compact\r")
        term.wait_text("✓ compacted (/compact)")
        after_compact = term.at_prompt()
        assert after_compact < after_third

        sim.inject(Fault("slow", delay_s=60))
        term.type("one more thing\r")
        term.wait(lambda t: "esc to interrupt" in t.text and PERCENT.search(t.bottom) is not None,
                  "the live spinner and status bar")
        assert "thinking…" in term.bottom
        term.type("\x03")
        term.wait_text("Interrupted")
        term.at_prompt()

        term.type("and now?\r")
        term.wait_text("Done.")
        term.at_prompt()
        term.type("\x04")
        term.wait_text("mini-claude --resume")
        term.child.expect(pexpect.EOF, timeout=WAIT_SECONDS)
