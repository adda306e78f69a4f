"""Nothing a shell command starts outlives the session, however it detaches and however
the session ends: the real CLI in a subprocess, against the simulator, on both wires.

The scripted model starts a background shell and a foreground command whose children
leave the process group (``setsid``), ignore hang-ups (``nohup``) or are orphaned by a
double fork. Each child is a ``sleep`` whose argument is a number unique to the test,
so it is found in ``/proc`` by its command line.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.printing import PROVIDERS

WAIT_SECONDS = 60.0


def marked_pids(marker: str) -> list[int]:
    """Live ``sleep`` processes whose argument holds ``marker`` (not the shells that ran them)."""
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        program, _, argument = cmdline.partition(b"\0")
        if program == b"sleep" and marker.encode() in argument and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def wait_for(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


@pytest.fixture
def marker() -> Iterator[str]:
    """A ``sleep`` duration no other process has: ``1000.<digits>``."""
    digits = f"{random.randrange(10**9):09d}"
    yield f"1000.{digits}"
    for pid in marked_pids(digits):  # whatever a failed test left behind
        os.kill(pid, signal.SIGKILL)


def sleeps(marker: str, tag: int) -> str:
    """``sleep`` with a marked duration: ``1000.<digits><tag>``."""
    return f"sleep {marker}{tag}"


def detaching_children(marker: str, first: int) -> str:
    """A command whose three children each escape the group a different way."""
    return (
        f"setsid {sleeps(marker, first)} > /dev/null 2>&1 & "
        f"nohup {sleeps(marker, first + 1)} > /dev/null 2>&1 & "
        f"( ( {sleeps(marker, first + 2)} > /dev/null 2>&1 & ) & ); "
    )


def start_cli(project: Path, home: Path, sim: Simulator, provider: str) -> subprocess.Popen[str]:
    env = {name: value for name, value in os.environ.items()
           if name not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update({"MINI_CLAUDE_HOME": str(home), "MINI_CLAUDE_MODEL": "sim-sonnet",
                "MINI_CLAUDE_PROVIDER": provider})
    if provider == "anthropic":
        env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": sim.anthropic_base_url})
    else:
        env.update({"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": sim.openai_base_url})
    return subprocess.Popen(
        [sys.executable, "-m", "mini_claude.cli", "-p", "start the servers", "--yes"],
        cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )


def first_turn(marker: str) -> Reply:
    background = detaching_children(marker, 1) + sleeps(marker, 4)
    foreground = detaching_children(marker, 5) + "echo started"
    return Reply("Starting them.", [
        ToolCall("run_shell", {"command": background, "run_in_background": True}),
        ToolCall("run_shell", {"command": foreground}),
    ])


EXPECTED = 7  # three children of each command, and the background shell's own sleep


@pytest.mark.parametrize("provider", PROVIDERS)
def test_detached_children_end_with_a_session_that_ends_normally(
    provider: str, tmp_path: Path, marker: str,
) -> None:
    with Simulator(ScriptedPolicy([first_turn(marker)], final=Reply("All started."))) as sim:
        cli = start_cli(tmp_path, tmp_path / "home", sim, provider)
        out, err = cli.communicate(timeout=WAIT_SECONDS)
    assert cli.returncode == 0, err
    assert "All started." in out
    wait_for(lambda: not marked_pids(marker), "every child to end with the session")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_detached_children_end_when_mini_claude_is_killed(
    provider: str, tmp_path: Path, marker: str,
) -> None:
    """SIGKILL leaves mini-claude no chance to clean up: the children go all the same, the
    foreground command running at that moment included."""
    hanging = Reply("Waiting.", [ToolCall("run_shell", {"command": sleeps(marker, 8)})])
    with Simulator(ScriptedPolicy([first_turn(marker), hanging])) as sim:
        cli = start_cli(tmp_path, tmp_path / "home", sim, provider)
        try:
            wait_for(lambda: len(marked_pids(marker)) == EXPECTED + 1, "every child to start")
            cli.kill()
            cli.wait(timeout=WAIT_SECONDS)
        finally:
            if cli.poll() is None:
                cli.kill()
            cli.communicate()
    wait_for(lambda: not marked_pids(marker), "every child to end after the SIGKILL")
