"""A rewind killed at any step leaves the old state or the new one, never a mix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mini_claude.permissions.asking import allow_all
from mini_claude.providers import create_provider
from mini_claude.session.wiring import Session
from mini_claude.simulator import Simulator
from mini_claude.transcript import read_records
from tests.support.rewind import TURNS, file_state, make_run, scripted_policy, write_project

KILL_POINTS = [("stage", 1), ("stage", 2), ("place", 1), ("place", 2), ("place", 3),
               ("none", 0)]
REPOSITORY = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("step", "nth"), KILL_POINTS)
def test_a_killed_rewind_is_finished_or_undone(simulator: Simulator, isolated_home: Path,
                                               tmp_path: Path, step: str, nth: int) -> None:
    project = write_project(tmp_path / "project")
    turns = TURNS[:4]  # a, b and c edited, d created
    simulator.policy = scripted_policy(turns)
    run = make_run(simulator, "anthropic", isolated_home, project)
    run.start()
    states = []
    for prompt, _ in turns:
        states.append(file_state(project))
        run.turn(prompt)
    old, new = file_state(project), states[1]  # rewinding to turn 2: b, c back, d gone
    session_id = run.session.session_id
    transcript = run.agent.transcript.path
    run.close()

    finished = subprocess.run(
        [sys.executable, "-m", "tests.support.rewind_kill", str(isolated_home), str(project),
         session_id, "turn 2", step, str(nth)],
        cwd=REPOSITORY, capture_output=True, timeout=120, check=False)
    assert finished.returncode == (0 if step == "none" else -9), finished.stderr

    session = Session(run.settings, project, create_provider(run.settings), allow_all)
    recorded = any(isinstance(r, dict) and r.get("type") == "rewind"
                   for r in read_records(transcript))
    assert file_state(project) == (new if recorded else old)
    assert recorded == (step == "place" or step == "none")
    assert not list(project.glob(".*.tmp"))
    assert not session.checkpoints.journal.exists()
    if step != "none":
        assert any("rewind" in w for w in session.warnings)
