"""The REPL in a real pseudo-terminal: what a daily user sees while typing, resizing, resuming.

The harness (pexpect, a pyte screen answering cursor-position requests) is
tests/support/pty_terminal.py.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest

from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.pty_terminal import WAIT_SECONDS, Screen, Spawn, spawner, write_notes_project

PERCENT = re.compile(r"context (\d+)%")


def at_rest(screen: Screen) -> None:
    """The idle prompt, its status line on the bottom row (no activity in it)."""
    screen.wait(lambda s: s.has_empty_prompt and PERCENT.search(s.last_row) is not None
                and s.last_row.endswith("sim-model"), "the prompt with its status line")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_notes_project(tmp_path / "project")


@pytest.fixture
def spawn(project: Path, isolated_home: Path) -> Iterator[Spawn]:
    yield from spawner(project)


def test_typing_during_a_turn_is_kept_and_the_status_line_keeps_its_row(
        spawn: Spawn) -> None:
    policy = ScriptedPolicy([Reply(text="The config looks fine."),
                             Reply(text="Answer to the typed-ahead message.")])
    with Simulator(policy) as sim:
        screen = spawn(sim)
        at_rest(screen)
        sim.inject(Fault("slow", delay_s=3))
        screen.type("review the config\r")
        screen.wait(lambda s: "esc to interrupt" in s.text, "the live turn")
        time.sleep(0.3)
        screen.type("typed ahead")
        screen.wait(lambda s: "> typed ahead" in s.text, "the typed text in the input box")
        assert PERCENT.search(screen.last_row) and "thinking" in screen.last_row
        screen.type("\r")
        screen.wait_text("steering: typed ahead")
        assert PERCENT.search(screen.last_row)  # still the bottom row during the turn
        screen.wait_text("Answer to the typed-ahead message.")
        at_rest(screen)
        assert "> typed ahead" in screen.text
        assert [r["text"] for r in _user_messages(sim)] == ["review the config", "typed ahead"]


def test_ctrl_c_leaves_a_queued_message_in_the_input_box_unsent(spawn: Spawn) -> None:
    policy = ScriptedPolicy([Reply(text="Not wanted any more.")])
    with Simulator(policy) as sim:
        screen = spawn(sim)
        at_rest(screen)
        sim.inject(Fault("slow", delay_s=60))
        screen.type("review the config\r")
        screen.wait(lambda s: "esc to interrupt" in s.text, "the live turn")
        time.sleep(0.3)
        screen.type("also check the logs\r")
        screen.wait_text("steering: also check the logs")
        screen.type("\x03")
        screen.wait_text("Interrupted")
        screen.wait(lambda s: "> also check the logs" in s.rows and "↳ steering" not in s.text
                    and "esc to interrupt" not in s.text,
                    "the queued message back in the input box")
        time.sleep(1.0)
        screen.pump()
        assert "Not wanted any more." not in screen.text
        assert "esc to interrupt" not in screen.text  # no turn started on its own
        assert screen.last_row.endswith("sim-model")
        sent = [m.text for r in sim.requests if r.conversation is not None
                for m in r.conversation.messages if m.is_plain_user_message]
        assert "also check the logs" not in sent


def _user_messages(sim: Simulator) -> list[dict[str, str]]:
    conversation = sim.requests[-1].conversation
    assert conversation is not None
    return [{"text": m.text} for m in conversation.messages if m.is_plain_user_message]


@pytest.mark.parametrize("columns", [60, 80])
def test_the_status_line_fits_narrow_terminals_without_cutting_a_word(
        spawn: Spawn, columns: int) -> None:
    with Simulator() as sim:
        screen = spawn(sim, columns=columns)
        at_rest(screen)
        line = screen.last_row
        assert len(line) < columns
        assert line.rstrip().endswith("sim-model")
        assert re.search(r"\$\d", line)  # the cost is kept at 60 columns too


def test_resume_redraws_the_recent_conversation(spawn: Spawn) -> None:
    policy = ScriptedPolicy([Reply(text=f"Answer number {i}.") for i in range(1, 5)])
    with Simulator(policy) as sim:
        screen = spawn(sim)
        at_rest(screen)
        for i in range(1, 5):
            screen.type(f"question {i}\r")
            screen.wait_text(f"Answer number {i}.")
            at_rest(screen)
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
        at_rest(screen)
        screen.type("read the notes\r")
        screen.wait_text("Read the notes.")
        at_rest(screen)
        assert "note 69:" not in screen.text
        screen.type("\x0f")
        screen.wait_text("── end of result")
        assert "note 69: the build uses make" in screen.text
        at_rest(screen)


# An unusual duration, so that no other process on the machine matches it.
SLEEP = "29.713"


@pytest.mark.parametrize("number", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_sigterm_closes_the_session_and_kills_the_running_command(
        spawn: Spawn, project: Path, number: signal.Signals) -> None:
    policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell",
                                   {"command": f"touch started; sleep {SLEEP}; touch late"})]),
    ])
    with Simulator(policy) as sim:
        screen = spawn(sim, "--yes")
        at_rest(screen)
        screen.type("wait a while\r")
        deadline = time.monotonic() + WAIT_SECONDS
        while not (project / "started").exists() and time.monotonic() < deadline:
            screen.pump()
        assert (project / "started").exists()
        screen.child.kill(number)
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
        at_rest(screen)
        screen.type("make it\r")
        screen.wait_text("esc cancels the turn")
        screen.wait(lambda s: PERCENT.search(s.last_row) is not None
                    and "running run_shell" in s.last_row, "the status line under the question")
        requests = len(sim.requests)
        screen.type("\x1b")
        screen.wait_text("Interrupted")
        at_rest(screen)
        assert len(sim.requests) == requests
        assert "What should the agent do instead?" not in screen.text
        assert not (project / "made.txt").exists()


def test_a_prompt_on_the_command_line_is_the_repls_first_message(spawn: Spawn,
                                                                   project: Path) -> None:
    policy = ScriptedPolicy([
        Reply(tool_calls=[ToolCall("run_shell", {"command": "touch made.txt"})]),
        Reply(text="Made it, as the rule allows."),
    ])
    with Simulator(policy) as sim:
        screen = spawn(sim, "--allowed-tools", "run_shell(touch:*)", "--", "explain this")
        screen.wait_text("Made it, as the rule allows.")
        at_rest(screen)
        assert "> explain this" in screen.text
        assert "Do you want to proceed?" not in screen.text  # the REPL took the rule
        assert (project / "made.txt").exists()
        assert [r["text"] for r in _user_messages(sim)] == ["explain this"]


def test_an_mcp_notice_prints_above_the_resume_picker_not_over_it(
        spawn: Spawn, isolated_home: Path) -> None:
    from tests.support.mcp import stdio_entry, write_config

    with Simulator(ScriptedPolicy([Reply(text="First answer.")])) as sim:
        screen = spawn(sim)
        at_rest(screen)
        screen.type("the first question\r")
        screen.wait_text("First answer.")
        at_rest(screen)
        screen.type("/exit\r")
        screen.wait(lambda s: not s.child.isalive(), "the first session to end")
        write_config(isolated_home / "mcp.json", {"sample": stdio_entry(start_delay=8.0)})
        screen = spawn(sim)
        at_rest(screen)
        screen.type("/resume\r")
        screen.wait_text("esc to cancel")
        assert "connected · " not in screen.text  # the picker came first
        screen.wait_text("MCP server sample connected")
        time.sleep(0.5)
        screen.pump()
        rows = screen.rows
        notice = next(i for i, r in enumerate(rows) if "MCP server sample connected" in r)
        option = next(i for i, r in enumerate(rows) if "the first question" in r)
        hint = next(i for i, r in enumerate(rows) if "esc to cancel" in r)
        assert notice < option < hint, screen.text
        assert rows[notice].strip().endswith("tools")  # a row of its own, nothing drawn over it
        screen.type("\x1b")
        screen.wait_text("resume cancelled")


def test_a_300_line_paste_is_one_placeholder_on_screen(spawn: Spawn) -> None:
    pasted = "\n".join(f"log line {n}" for n in range(1, 301))
    policy = ScriptedPolicy([lambda conv: Reply(
        text=f"Got {conv.messages[-1].text.count('log line')} log lines.")])
    with Simulator(policy) as sim:
        screen = spawn(sim)
        at_rest(screen)
        screen.type("\x1b[200~" + pasted + "\x1b[201~")
        screen.wait_text("[Pasted text #1 +300 lines]")
        assert "log line 150" not in screen.text
        screen.type("\r")
        screen.wait_text("Got 300 log lines.")
        at_rest(screen)
        assert "log line 299" not in screen.text
