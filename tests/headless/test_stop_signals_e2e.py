"""Every way print mode is ended (SIGHUP, SIGTERM, SIGINT, even right as a command
starts) stops the command it runs and still writes the result line. Both providers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.printing import RESULT

WAIT = 60.0


def processes_with(token: str) -> list[int]:
    """Pids whose command line holds ``token`` (the command the model started)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().split()[2]
        except OSError:
            continue
        if token.encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def start(simulator: Simulator, provider: str, project: Path, output_format: str,
          command: str, answer: str = "Done.") -> subprocess.Popen[str]:
    simulator.policy = ScriptedPolicy(
        [Reply("Waiting.", tool_calls=[ToolCall("run_shell", {"command": command})]),
         Reply(answer)]
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI"))}
    env["MINI_CLAUDE_MODEL"] = "sim-sonnet"
    if provider == "anthropic":
        env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=simulator.anthropic_base_url)
    else:
        env.update(OPENAI_API_KEY="test-key", OPENAI_BASE_URL=simulator.openai_base_url)
    return subprocess.Popen(
        [sys.executable, "-m", "mini_claude.cli", "-p", "wait", "--output-format",
         output_format, "--yes"],
        cwd=project, env=env, stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def wait_until(condition: object, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("sig", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("moment", ["running", "starting"])
def test_a_stop_signal_kills_the_command_and_ends_with_a_result(
    provider: str, sig: signal.Signals, moment: str, project: Path, simulator: Simulator,
) -> None:
    token = str(uuid.uuid4().int)[:9]  # in the shell's command line and in sleep's
    marker = project / f"started-{token}"
    command = f"touch {marker.name}; sleep 30.{token}; true"
    proc = start(simulator, provider, project, "json", command)
    try:
        assert proc.stderr is not None
        if moment == "running":
            wait_until(lambda: marker.exists() and processes_with(token), "the command")
        else:  # as soon as the tool line says it starts: mid-spawn, at the latest
            while "→ run_shell" not in proc.stderr.readline():
                assert proc.poll() is None
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err  # as a shell reports it: SIGTERM 143
    assert "Traceback" not in err
    result = json.loads(out.splitlines()[-1])
    RESULT.validate(result)
    assert result["is_error"] is True and result["errors"] == ["interrupted"]
    wait_until(lambda: not processes_with(token), "the command to be gone")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_reader_that_goes_away_ends_the_run_quietly(
    provider: str, project: Path, simulator: Simulator,
) -> None:
    """`mini-claude -p … --output-format stream-json | head -1`: no BrokenPipe traceback,
    the turn stopped (its command killed) and exit 141, as a tool ended by SIGPIPE."""
    proc = start(simulator, provider, project, "stream-json", "sleep 1; echo done")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first
        proc.stdout.close()
        _, err = proc.communicate(timeout=WAIT)
    finally:
        proc.kill()
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert proc.returncode == 141, err
