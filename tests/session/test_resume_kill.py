"""Kill `mini-claude -p` mid-turn, then `--continue`: the session resumes whole and valid.

The CLI runs as a real subprocess against a simulator in this process; the kill
lands while a slow shell command is running, which is when a user gives up.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mini_claude.agent.history import INTERRUPTED_OUTPUT_NOTE
from mini_claude.cli import main
from mini_claude.conversation import INTERRUPTED_RESULT
from mini_claude.simulator import FunctionPolicy, Reply, SimConversation, Simulator, ToolCall

SLOW_COMMAND = "echo $$ > shell.pid; echo compiling step 1; echo started > started.txt; sleep 30"
PROMPT = "run the slow job"
WAIT_SECONDS = 30.0
STOP_SECONDS = 10.0  # the shell sleeps 30 s: stopped well before means it was killed


def policy(conv: SimConversation) -> Reply:
    """The slow job for the first prompt; afterwards, say how much history arrived."""
    if conv.last_user_text == PROMPT:
        return Reply("Starting the slow job.", [ToolCall("run_shell", {"command": SLOW_COMMAND})])
    return Reply(f"Resumed with {len(conv.messages)} messages.")


@dataclass(frozen=True)
class Outcome:
    returncode: int
    stdout: str
    stderr: str


@dataclass
class Cli:
    """The real command line in a project folder, pointed at the simulator.

    ``start`` runs it as a process that can be killed; ``run`` runs the same entry
    point in this process, which spares the SDK import on every resume.
    """

    project: Path
    home: Path
    sim: Simulator
    capsys: pytest.CaptureFixture[str]

    def variables(self) -> dict[str, str]:
        return {
            "ANTHROPIC_API_KEY": "test-key",
            "ANTHROPIC_BASE_URL": self.sim.anthropic_base_url,
            "MINI_CLAUDE_HOME": str(self.home),
            "MINI_CLAUDE_MODEL": "sim-sonnet",
        }

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "mini_claude.cli", *args],
            cwd=self.project,
            env={**os.environ, **self.variables()},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run(self, *args: str) -> Outcome:
        self.capsys.readouterr()
        with pytest.MonkeyPatch.context() as patch, open(os.devnull) as nothing:
            for name, value in self.variables().items():
                patch.setenv(name, value)
            patch.chdir(self.project)
            patch.setattr(sys, "stdin", nothing)
            code = main(list(args))
        out, err = self.capsys.readouterr()
        return Outcome(code, out, err)

    def transcript(self) -> Path:
        (path,) = (self.home / "transcripts").glob("*.jsonl")
        return path


def wait_for(condition: Callable[[], bool], what: str, seconds: float = WAIT_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def shell_group(project: Path) -> int | None:
    try:
        return int((project / "shell.pid").read_text().strip())
    except (OSError, ValueError):
        return None


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[Cli]:
    project = tmp_path / "project"
    project.mkdir()
    (project / "README.md").write_text("# a project\n")
    with Simulator(FunctionPolicy(policy)) as sim:
        runner = Cli(project, tmp_path / "home", sim, capsys)
        try:
            yield runner
        finally:
            pgid = shell_group(project)
            if pgid is not None and group_alive(pgid):
                os.killpg(pgid, signal.SIGKILL)  # the shell outlives a SIGKILLed parent


def interrupt_mid_tool(cli: Cli, sig: signal.Signals) -> subprocess.Popen[str]:
    """Start a turn, wait until its shell command is running, then send ``sig``."""
    process = cli.start("-p", PROMPT, "--yes")
    try:
        wait_for(lambda: (cli.project / "started.txt").exists(), "the slow command to start")
        process.send_signal(sig)
        process.wait(timeout=WAIT_SECONDS)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def messages_in(path: Path) -> list[dict[str, Any]]:
    return [r["message"] for r in records(path) if r["type"] == "message"]


def sent_messages(sim: Simulator) -> list[dict[str, Any]]:
    body = sim.requests[-1].body
    assert isinstance(body, dict)
    return list(body["messages"])


def test_killed_mid_tool_call_the_session_continues_with_everything_written(cli: Cli) -> None:
    interrupt_mid_tool(cli, signal.SIGKILL)
    written = messages_in(cli.transcript())
    assert [m["role"] for m in written] == ["user", "assistant"]
    assert written[1]["blocks"][-1]["kind"] == "tool_use"

    resumed = cli.run("--continue", "-p", "go on")
    assert resumed.returncode == 0, resumed.stderr
    assert "interrupted" in resumed.stderr and "Traceback" not in resumed.stderr
    last = cli.sim.requests[-1]
    assert last.status == 200, last.error
    # The interrupted call got a result, and the new request follows it in the same turn.
    assert "Resumed with 3 messages." in resumed.stdout
    user, assistant, answer = sent_messages(cli.sim)
    assert PROMPT in json.dumps(user)
    call = assistant["content"][-1]
    assert call["type"] == "tool_use" and call["input"] == {"command": SLOW_COMMAND}
    result = answer["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == call["id"]
    assert INTERRUPTED_RESULT in json.dumps(result) and "go on" in json.dumps(answer)


def test_a_torn_last_line_is_skipped_with_a_warning_and_later_resumes_stay_valid(
    cli: Cli,
) -> None:
    """A crash in the middle of writing a record leaves half a line. Resuming skips it with
    a warning; the records written after it must not be glued to it and lost, or the next
    resume would find a tool call without its result."""
    interrupt_mid_tool(cli, signal.SIGKILL)
    path = cli.transcript()
    with path.open("a", encoding="utf-8") as handle:
        handle.write('{"type": "message", "message": {"role": "user", "blocks": [{"tool_us')

    first = cli.run("--continue", "-p", "go on")
    assert first.returncode == 0, first.stderr
    assert "damaged" in first.stderr and "Traceback" not in first.stderr
    assert cli.sim.requests[-1].status == 200, cli.sim.requests[-1].error

    second = cli.run("--continue", "-p", "and once more")
    assert second.returncode == 0, second.stderr
    assert cli.sim.requests[-1].status == 200, cli.sim.requests[-1].error
    sent = json.dumps(sent_messages(cli.sim))
    assert "go on" in sent and "and once more" in sent and INTERRUPTED_RESULT in sent


def test_damaged_records_anywhere_are_skipped_with_warnings_and_the_rest_resumes(
    cli: Cli,
) -> None:
    """Garbage in the middle and half a record at the end: warnings, then the intact
    messages are sent, valid, and the session is still found by ``--continue``."""
    transcripts = cli.home / "transcripts"
    transcripts.mkdir(parents=True)
    session = {"type": "session", "id": "20260101-000000-abcdef", "cwd": str(cli.project)}
    first = {"role": "user", "blocks": [{"kind": "text", "text": "FACT-5 keep this"}]}
    reply = {"role": "assistant", "blocks": [{"kind": "text", "text": "Kept."}]}
    (transcripts / "20260101-000000-abcdef.jsonl").write_text(
        json.dumps(session) + "\n"
        + "\x00\x00 not json\n"
        + json.dumps({"type": "message", "message": first}) + "\n"
        + '{"type": "message", "message": {"role": "user", "blocks": [}\n'
        + json.dumps({"type": "message", "message": reply}) + "\n"
        + '{"type": "message", "mess'
    )
    result = cli.run("--continue", "-p", "go on")
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("damaged") == 3 and "Traceback" not in result.stderr
    assert cli.sim.requests[-1].status == 200
    sent = json.dumps(sent_messages(cli.sim))
    assert "FACT-5 keep this" in sent and "Kept." in sent and "go on" in sent


def test_a_terminated_run_leaves_no_shell_command_behind(cli: Cli) -> None:
    """`kill` (SIGTERM) is how tools and terminals stop a program; the command it was
    running must go with it, as it does on Ctrl-C."""
    process = interrupt_mid_tool(cli, signal.SIGTERM)
    assert process.returncode != 0
    pgid = shell_group(cli.project)
    assert pgid is not None
    wait_for(lambda: not group_alive(pgid), "the shell command to be stopped", STOP_SECONDS)


def test_ctrl_c_mid_tool_call_stops_the_command_and_keeps_the_session_resumable(
    cli: Cli,
) -> None:
    process = interrupt_mid_tool(cli, signal.SIGINT)
    assert process.returncode == 130
    pgid = shell_group(cli.project)
    assert pgid is not None
    wait_for(lambda: not group_alive(pgid), "the shell command to be stopped", STOP_SECONDS)
    resumed = cli.run("--continue", "-p", "go on")
    assert resumed.returncode == 0, resumed.stderr
    assert cli.sim.requests[-1].status == 200
    _user, assistant, answer = sent_messages(cli.sim)
    result = answer["content"][0]
    assert result["tool_use_id"] == assistant["content"][-1]["id"]
    # What the command printed before Ctrl-C reaches the model, marked as cut short.
    assert result["content"] == f"compiling step 1\n{INTERRUPTED_OUTPUT_NOTE}"
