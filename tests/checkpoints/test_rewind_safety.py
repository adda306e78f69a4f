"""What /rewind writes and reads is the project's own, checked when it happens: a folder
swapped for a link leads nowhere outside, a named pipe never hangs it, and the user's own
version of a file is stored even when it is kept (over HTTP against the simulator)."""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from mini_claude.checkpoints.store import content_id
from mini_claude.simulator import Simulator
from mini_claude.transcript import read_records
from tests.support.agent import PROVIDERS, Run
from tests.support.rewind import edit, make_run, point_for, rewinder, scripted_policy, write

SUB_TURNS = [
    ("turn 1: edit sub/x", [edit("sub/x.txt", "x one", "x two")]),
    ("turn 2: add sub/new", [write("sub/new.txt", "new\n")]),
]


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "x.txt").write_text("x one\n")
    (root / "a.txt").write_text("alpha one\n")
    return root


def _played(simulator: Simulator, provider: str, home: Path, project: Path,
            turns: list[tuple[str, list[object]]]) -> Run:
    simulator.policy = scripted_policy(turns)  # type: ignore[arg-type]
    run = make_run(simulator, provider, home, project)
    run.start()
    for prompt, _ in turns:
        run.turn(prompt)
    return run


def _swap_for_a_link(folder: Path, outside: Path) -> None:
    """The user's own files outside, and the project's folder now a link to them."""
    outside.mkdir()
    (outside / "x.txt").write_text("the user's x, outside\n")
    (outside / "new.txt").write_text("the user's new, outside\n")
    shutil.rmtree(folder)
    folder.symlink_to(outside, target_is_directory=True)


@pytest.mark.parametrize("swap_after_plan", [False, True])
def test_a_folder_swapped_for_a_link_is_not_written_through(
        simulator: Simulator, isolated_home: Path, project: Path, tmp_path: Path,
        provider: str, swap_after_plan: bool) -> None:
    run = _played(simulator, provider, isolated_home, project, SUB_TURNS)  # type: ignore[arg-type]
    try:
        point = point_for(run, "turn 1")
        outside = tmp_path / "outside"
        plan = None
        if swap_after_plan:  # the swap lands between the question and the write
            plan = rewinder(run).plan(point)
            assert not plan.problems
        _swap_for_a_link(project / "sub", outside)
        outcome = rewinder(run).rewind(point, code=True, conversation=False, plan=plan)
        assert (outside / "x.txt").read_text() == "the user's x, outside\n"
        assert (outside / "new.txt").read_text() == "the user's new, outside\n"
        assert sorted(os.listdir(outside)) == ["new.txt", "x.txt"]  # no stray temporary
        if swap_after_plan:
            assert sorted(r.path.name for r in outcome.refused) == ["new.txt", "x.txt"]
            assert all("outside the project" in r.reason for r in outcome.refused)
            assert outcome.restored == [] and outcome.removed == []
        else:
            problems = rewinder(run).plan(point).problems
            assert sorted(p.path.name for p in problems) == ["new.txt", "x.txt"]
            assert all("outside the project" in p.problem for p in problems)
    finally:
        run.close()


def test_a_named_pipe_in_place_of_a_file_does_not_hang_the_rewind(
        simulator: Simulator, isolated_home: Path, project: Path, provider: str) -> None:
    turns = [("turn 1: edit a", [edit("a.txt", "alpha one", "alpha two")])]
    run = _played(simulator, provider, isolated_home, project, turns)  # type: ignore[arg-type]
    pipe = project / "a.txt"
    try:
        pipe.unlink()
        os.mkfifo(pipe)
        point = point_for(run, "turn 1")
        done: list[object] = []
        worker = threading.Thread(target=lambda: done.append(
            rewinder(run).rewind(point, code=True, conversation=True)), daemon=True)
        worker.start()
        worker.join(60)
        if worker.is_alive():  # release the hung reader so the test process can end
            os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))
            worker.join(10)
            pytest.fail("the rewind waited on a named pipe")
        plan = rewinder(run).plan(point)
        assert [p.problem for p in plan.problems] == ["it is a named pipe (FIFO) now, "
                                                      "not a regular file"]
        assert len(run.agent.conversation) == 0
    finally:
        run.close()


def test_the_users_kept_version_is_stored(
        simulator: Simulator, isolated_home: Path, project: Path, provider: str) -> None:
    turns = [("turn 1: edit a", [edit("a.txt", "alpha one", "alpha two")])]
    run = _played(simulator, provider, isolated_home, project, turns)  # type: ignore[arg-type]
    try:
        mine = b"alpha, as the user wrote it\n"
        (project / "a.txt").write_bytes(mine)
        point = point_for(run, "turn 1")
        plan = rewinder(run).plan(point)
        assert [f.path.name for f in plan.conflicts] == ["a.txt"]
        outcome = rewinder(run).rewind(point, code=True, conversation=False, plan=plan,
                                       keep=frozenset({project / "a.txt"}))
        assert outcome.kept == [project / "a.txt"]
        assert (project / "a.txt").read_bytes() == mine
        assert run.session.checkpoints.get(content_id(mine)) == mine
        [record] = [r for r in read_records(run.agent.transcript.path)
                    if isinstance(r, dict) and r.get("type") == "rewind"]
        assert json.loads(json.dumps(record["kept"])) == [
            {"path": str(project / "a.txt"),
             "state": {"state": "content", "content": content_id(mine), "mode": 0o644}}]
    finally:
        run.close()
