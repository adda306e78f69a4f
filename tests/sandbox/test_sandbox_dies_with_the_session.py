"""A sandboxed command and all it starts end with the session, however they detach and
however the session ends (SIGKILL of mini-claude included): the real CLI in a subprocess with
the sandbox on, against the simulator, on both wires."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.sandbox.support import needs_bwrap
from tests.support.printing import PROVIDERS
from tests.tools.test_shells_die_with_the_session import (
    WAIT_SECONDS,
    detaching_children,
    marked_pids,
    marker,
    sleeps,
    wait_for,
)

pytestmark = needs_bwrap
__all__ = ["marker"]  # the fixture, used by name


def start_cli(project: Path, home: Path, sim: Simulator, provider: str) -> subprocess.Popen[str]:
    env = {name: value for name, value in os.environ.items()
           if name not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update({"MINI_CLAUDE_HOME": str(home), "MINI_CLAUDE_MODEL": "sim-sonnet",
                "MINI_CLAUDE_PROVIDER": provider, "MINI_CLAUDE_SANDBOX": "1"})
    if provider == "anthropic":
        env.update({"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": sim.anthropic_base_url})
    else:
        env.update({"OPENAI_API_KEY": "test-key", "OPENAI_BASE_URL": sim.openai_base_url})
    return subprocess.Popen(
        [sys.executable, "-m", "mini_claude.cli", "-p", "start the servers"],
        cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.parametrize("provider", PROVIDERS)
def test_sandboxed_children_end_when_mini_claude_is_killed(
    provider: str, tmp_path: Path, marker: str,
) -> None:
    """No --yes: the commands run because they are sandboxed. A foreground command's
    detached children end with it (the sandbox's PID namespace ends with its first process);
    the background shell's and the running command's end with the SIGKILLed session."""
    project = tmp_path / "project"
    project.mkdir()
    background = detaching_children(marker, 1) + sleeps(marker, 4)
    foreground = detaching_children(marker, 5) + "echo started"
    first = Reply("Starting them.", [
        ToolCall("run_shell", {"command": background, "run_in_background": True}),
        ToolCall("run_shell", {"command": foreground}),
    ])
    hanging = Reply("Waiting.", [ToolCall("run_shell", {"command": sleeps(marker, 8)})])
    with Simulator(ScriptedPolicy([first, hanging])) as sim:
        cli = start_cli(project, tmp_path / "home", sim, provider)
        try:
            wait_for(lambda: len(marked_pids(marker)) == 5, "the background four and the hang")
            wait_for(lambda: not any(marked_pids(f"{marker}{tag}") for tag in (5, 6, 7)),
                     "the foreground command's detached children to end with it")
            cli.kill()
            cli.wait(timeout=WAIT_SECONDS)
        finally:
            if cli.poll() is None:
                cli.kill()
            cli.communicate()
    wait_for(lambda: not marked_pids(marker), "every sandboxed child to end after the SIGKILL")
