"""The REPL in a real pseudo-terminal: what a daily user sees while typing, resizing, resuming.

Like test_repl_pty: pexpect runs the installed command, pyte plays the terminal
(answering cursor-position requests), and every step polls the screen.
"""

from __future__ import annotations

import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pexpect
import pyte
import pytest

from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall

WAIT_SECONDS = 30.0
CPR_REQUEST = b"\x1b[6n"
PERCENT = re.compile(r"context (\d+)%")
COMMAND = str(Path(sys.executable).with_name("mini-claude"))


class Screen:
    """A pyte screen of any size fed by the child; answers cursor-position requests."""

    def __init__(self, child: pexpect.spawn, columns: int, rows: int) -> None:
        self.child = child
        self.screen = pyte.Screen(columns, rows)
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
    def rows(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    @property
    def text(self) -> str:
        return "\n".join(self.rows)

    @property
    def last_row(self) -> str:
        return self.rows[-1]

    def wait(self, predicate: Callable[[Screen], bool], what: str) -> None:
        deadline = time.monotonic() + WAIT_SECONDS
        while time.monotonic() < deadline:
            self.pump()
            if predicate(self):
                return
        raise AssertionError(f"timed out waiting for {what}; the screen:\n{self.text}")

    def wait_text(self, needle: str) -> None:
        self.wait(lambda s: needle in s.text, repr(needle))

    def at_rest(self) -> None:
        """The idle prompt, its status line on the bottom row (no activity in it)."""
        self.wait(lambda s: any(r == ">" for r in s.rows) and PERCENT.search(s.last_row) is not None
                  and s.last_row.endswith("sim-model"), "the prompt with its status line")

    def type(self, keys: str) -> None:
        self.child.send(keys)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text(
        "".join(f"note {i}: the build uses make and the tests use pytest\n" for i in range(70)))
    return folder


Spawn = Callable[..., Screen]


@pytest.fixture
def spawn(project: Path, isolated_home: Path) -> Iterator[Spawn]:
    children: list[pexpect.spawn] = []

    def start(sim: Simulator, *args: str, columns: int = 100, rows: int = 30) -> Screen:
        env = dict(os.environ)
        env.update({
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": sim.anthropic_base_url,
            "MINI_CLAUDE_MODEL": "sim-model",
            "MINI_CLAUDE_CONTEXT_WINDOW": "12000",
            "MINI_CLAUDE_MAX_RETRIES": "0",
            "TERM": "xterm-256color",
        })
        child = pexpect.spawn(COMMAND, list(args), cwd=str(project), env=env,
                              dimensions=(rows, columns))
        children.append(child)
        return Screen(child, columns, rows)

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)


def test_typing_during_a_turn_is_kept_and_the_status_line_keeps_its_row(
        spawn: Spawn) -> None:
    policy = ScriptedPolicy([Reply(text="The config looks fine."),
                             Reply(text="Answer to the typed-ahead message.")])
    with Simulator(policy) as sim:
        screen = spawn(sim)
        screen.at_rest()
        sim.inject(Fault("slow", delay_s=3))
        screen.type("review the config\r")
        screen.wait(lambda s: "esc to interrupt" in s.text, "the live turn")
        time.sleep(0.3)
        screen.type("typed ahead")
        screen.wait(lambda s: "> typed ahead" in s.text, "the typed text in the input box")
        assert PERCENT.search(screen.last_row) and "thinking" in screen.last_row
        screen.type("\r")
        screen.wait_text("queued: typed ahead")
        assert PERCENT.search(screen.last_row)  # still the bottom row during the turn
        screen.wait_text("Answer to the typed-ahead message.")
        screen.at_rest()
        assert "> typed ahead" in screen.text
        assert [r["text"] for r in _user_messages(sim)] == ["review the config", "typed ahead"]


def _user_messages(sim: Simulator) -> list[dict[str, str]]:
    conversation = sim.requests[-1].conversation
    assert conversation is not None
    return [{"text": m.text} for m in conversation.messages if m.is_plain_user_message]


@pytest.mark.parametrize("columns", [60, 80])
def test_the_status_line_fits_narrow_terminals_without_cutting_a_word(
        spawn: Spawn, columns: int) -> None:
    with Simulator() as sim:
        screen = spawn(sim, columns=columns)
        screen.at_rest()
        line = screen.last_row
        assert len(line) < columns
        assert line.rstrip().endswith("sim-model")
        assert re.search(r"\$\d", line)  # the cost is kept at 60 columns too


def test_resume_redraws_the_recent_conversation(spawn: Spawn) -> None:
    policy = ScriptedPolicy([Reply(text=f"Answer number {i}.") for i in range(1, 5)])
    with Simulator(policy) as sim:
        screen = spawn(sim)
        screen.at_rest()
        for i in range(1, 5):
            screen.type(f"question {i}\r")
            screen.wait_text(f"Answer number {i}.")
            screen.at_rest()
        screen.type("\x04")
        screen.child.expect(pexpect.EOF, timeout=WAIT_SECONDS)

        again = spawn(sim, "-c")
        again.wait_text("resumed: 8 messages")
        text = again.text
        assert "… 2 earlier messages" in text
        for i in (2, 3, 4):
            assert f"> question {i}" in text and f"Answer number {i}." in text
        assert "question 1\n" not in text


def test_ctrl_o_shows_the_whole_collapsed_result(spawn: Spawn) -> None:
    policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("read_file", {"path": "notes.txt"})]),
        Reply(text="Read the notes."),
    ])
    with Simulator(policy) as sim:
        screen = spawn(sim)
        screen.at_rest()
        screen.type("read the notes\r")
        screen.wait_text("Read the notes.")
        screen.at_rest()
        assert "note 69:" not in screen.text
        screen.type("\x0f")
        screen.wait_text("── end of result")
        assert "note 69: the build uses make" in screen.text
        screen.at_rest()


# An unusual duration, so that no other process on the machine matches it.
SLEEP = "29.713"


def test_sigterm_closes_the_session_and_kills_the_running_command(
        spawn: Spawn, project: Path) -> None:
    policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell",
                                   {"command": f"touch started; sleep {SLEEP}; touch late"})]),
    ])
    with Simulator(policy) as sim:
        screen = spawn(sim, "--yes")
        screen.at_rest()
        screen.type("wait a while\r")
        deadline = time.monotonic() + WAIT_SECONDS
        while not (project / "started").exists() and time.monotonic() < deadline:
            screen.pump()
        assert (project / "started").exists()
        screen.child.kill(signal.SIGTERM)
        screen.wait_text("mini-claude --resume")
        screen.child.expect(pexpect.EOF, timeout=WAIT_SECONDS)
        screen.child.close()
        assert screen.child.exitstatus == 130
        time.sleep(0.5)
        assert not (project / "late").exists()
        assert not any(f"sleep {SLEEP}" in _cmdline(pid) for pid in _processes())


def _processes() -> list[str]:
    return [p for p in os.listdir("/proc") if p.isdigit()]


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_esc_at_the_question_cancels_the_turn_and_the_status_line_stays(
        spawn: Spawn, project: Path) -> None:
    policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": "touch made.txt"})]),
        Reply(text="Should never be asked for."),
    ])
    with Simulator(policy) as sim:
        screen = spawn(sim)
        screen.at_rest()
        screen.type("make it\r")
        screen.wait_text("esc cancels the turn")
        screen.wait(lambda s: PERCENT.search(s.last_row) is not None
                    and "running run_shell" in s.last_row, "the status line under the question")
        requests = len(sim.requests)
        screen.type("\x1b")
        screen.wait_text("Interrupted")
        screen.at_rest()
        assert len(sim.requests) == requests
        assert "What should the agent do instead?" not in screen.text
        assert not (project / "made.txt").exists()
