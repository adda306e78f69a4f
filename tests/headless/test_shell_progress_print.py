"""Print mode, both providers: a long command streams tool_progress lines (valid against the
shipped schema), and a background shell the model never stopped ends with the run."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from mini_claude.cli import main
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.printing import PROVIDERS, parse_lines, point_at
from tests.support.tools import process_alive

SLOW = "for i in 1 2 3 4 5 6 7; do echo building step $i; sleep 0.4; done"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_progress_lines_while_a_command_runs_and_no_shell_outlives_the_run(
    provider: str, project: Path, simulator: Simulator, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Starting a watcher.", [ToolCall("run_shell", {
            "command": "echo watching; exec sleep 300", "run_in_background": True})]),
        Reply("Building.", [ToolCall("run_shell", {"command": SLOW})]),
        Reply("Built."),
    ])
    point_at(simulator, provider, monkeypatch)
    code = main(["-p", "build it", "--yes", "--output-format", "stream-json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = parse_lines(out)  # every line, tool_progress included, fits the schema
    progress = [line for line in lines if line.get("subtype") == "tool_progress"]
    assert progress, "no progress line for a 3-second command"
    assert all(line["tool_name"] == "run_shell" for line in progress)
    assert progress[-1]["last_lines"][-1].startswith("building step ")
    assert progress[-1]["elapsed_ms"] >= 1000
    started = next(line for line in lines if line["type"] == "user"
                   and "Started background shell" in str(line))
    pid = int(re.search(r"pid (\d+)", str(started)).group(1))  # type: ignore[union-attr]
    deadline = time.monotonic() + 10
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(pid), "the background shell outlived print mode"
