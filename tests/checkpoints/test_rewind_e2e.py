"""Rewind end to end: real SDK clients over HTTP against the simulator, both providers."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mini_claude.checkpoints.timeline import Point
from mini_claude.conversation import SummaryBlock, message_to_dict
from mini_claude.permissions.asking import allow_all
from mini_claude.session.wiring import Session
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.simulator.policies import user_contains
from mini_claude.transcript import load_session
from tests.support.agent import PROVIDERS, Run
from tests.support.repl import running_repl, sim_settings
from tests.support.rewind import (
    TURNS,
    edit,
    file_state,
    history_sent,
    make_run,
    point_for,
    rewinder,
    scripted_policy,
    write_project,
)
from tests.support.subagent import route, task_call

COMPACTED = "[This session was compacted"  # how a summary opens in the history


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write_project(tmp_path / "project")


def play_five_turns(run: Run) -> tuple[list[dict[str, tuple[bytes, int] | None]], list[int]]:
    """The five turns with a compaction after turns 3 and 5; files and request counts before
    each turn."""
    states, requests = [], []
    run.start()
    for number, (prompt, _) in enumerate(TURNS, 1):
        states.append(file_state(run.project))
        requests.append(len(run.model_requests()))
        run.turn(prompt)
        if number in (3, 5):
            run.compact()
    return states, requests


def test_rewind_to_turn_two_and_redo(simulator: Simulator, isolated_home: Path, project: Path,
                                     provider: str) -> None:
    simulator.policy = scripted_policy(TURNS)
    run = make_run(simulator, provider, isolated_home, project)
    try:
        states, requests = play_five_turns(run)
        assert len(run.summary_requests()) == 2
        assert any(isinstance(b, SummaryBlock) for m in run.agent.conversation.messages
                   for b in m.blocks)
        turn_five_files = file_state(project)
        turn_five_history = [message_to_dict(m) for m in run.agent.conversation.messages]
        assert turn_five_files["d.txt"] is not None

        point = point_for(run, "turn 2")
        assert rewinder(run).changed_since(point) == sorted(
            str(project / n) for n in ("a.txt", "b.txt", "c.sh", "d.txt"))
        outcome = rewinder(run).rewind(point, code=True, conversation=True)

        assert file_state(project) == states[1]  # bytes and modes as before turn 2
        assert not (project / "d.txt").exists()
        assert outcome.prompt == "turn 2: make b two"
        assert sorted(p.name for p in outcome.removed) == ["d.txt"]

        run.turn("turn 2, asked again")
        turn_two_request = run.model_requests()[requests[1]]
        after_rewind = run.model_requests()[-1]
        assert history_sent(after_rewind) == history_sent(turn_two_request)
        assert "turn 2, asked again" in str(after_rewind.body["messages"][-1])
        assert COMPACTED in str(run.model_requests()[-2].body["messages"])
        assert COMPACTED not in str(after_rewind.body["messages"])

        resumed = load_session(run.agent.transcript.path)  # -c follows the same branch
        assert [message_to_dict(m) for m in resumed.conversation.messages] == [
            message_to_dict(m) for m in run.agent.conversation.messages]

        redo = _rewind_point(run)
        rewinder(run).rewind(redo, code=True, conversation=True)
        assert file_state(project) == turn_five_files
        assert [message_to_dict(m) for m in run.agent.conversation.messages] == turn_five_history
    finally:
        run.close()


def _rewind_point(run: Run) -> Point:
    points = [p for p in rewinder(run).points() if p.kind == "rewind"]
    assert len(points) == 1
    return points[0]


def test_a_file_changed_by_the_user_is_shown_and_kept(simulator: Simulator, isolated_home: Path,
                                                      project: Path, provider: str) -> None:
    turns = TURNS[:2]
    simulator.policy = scripted_policy(turns)
    run = make_run(simulator, provider, isolated_home, project)
    try:
        run.start()
        for prompt, _ in turns:
            run.turn(prompt)
        (project / "b.txt").write_text("beta, as the user wrote it\n")
        point = point_for(run, "turn 1")
        plan = rewinder(run).plan(point)
        assert [f.path.name for f in plan.conflicts] == ["b.txt"]

        rewinder(run).rewind(point, code=True, conversation=False, plan=plan,
                             keep=frozenset({project / "b.txt"}))
        assert (project / "b.txt").read_text() == "beta, as the user wrote it\n"
        assert (project / "a.txt").read_text() == "alpha one\n"

        plan = rewinder(run).plan(point)  # now overwrite it: the user's version is kept first
        assert [f.path.name for f in plan.conflicts] == ["b.txt"]
        rewinder(run).rewind(point, code=True, conversation=False, plan=plan)
        assert (project / "b.txt").read_text() == "beta one\n"
        undo = next(p for p in rewinder(run).points() if p.kind == "rewind")
        rewinder(run).rewind(undo, code=True, conversation=False)
        assert (project / "b.txt").read_text() == "beta, as the user wrote it\n"
    finally:
        run.close()


def test_fork_leaves_the_original_byte_identical(simulator: Simulator, isolated_home: Path,
                                                  project: Path, provider: str) -> None:
    simulator.policy = scripted_policy(TURNS[:2])
    run = make_run(simulator, provider, isolated_home, project)
    try:
        run.start()
        run.turn(TURNS[0][0])
        origin = run.agent.transcript.path
        origin_id = run.session.session_id
        run.agent.transcript.close()
        before = origin.read_bytes()
        session = Session(run.settings, project, run.session.provider, allow_all)
        run.session = session
        session.resume(origin_id, fork=True)
        assert session.session_id != origin_id
        run.turn(TURNS[1][0])
        point = point_for(run, "turn 1")  # the fork rewinds into the history it copied
        rewinder(run).rewind(point, code=True, conversation=True)
        assert (project / "a.txt").read_text() == "alpha one\n"
        assert origin.read_bytes() == before
        forked = load_session(run.agent.transcript.path)
        assert forked.meta["forked_from"] == origin_id
    finally:
        run.close()


def test_context_and_cost_show_the_store_size(simulator: Simulator, isolated_home: Path,
                                              project: Path) -> None:
    simulator.policy = scripted_policy(TURNS[:1])

    async def scenario() -> None:
        settings = sim_settings(simulator, isolated_home)
        async with running_repl(settings, project, approver=allow_all) as repl:
            mark = await repl.submit(TURNS[0][0])
            await repl.wait_for("Turn 1 is done.", after=mark)
            for command in ("/context", "/cost"):
                mark = await repl.submit(command)
                await repl.wait_for("checkpoints (for /rewind): ", after=mark)
                assert "in 1 file version for 1 session (limit 1.0 GB" in repl.text[mark:]
            await repl.exit()

    asyncio.run(scenario())


def test_a_sub_agents_edit_is_checkpointed_under_the_parents_message(
        simulator: Simulator, isolated_home: Path, project: Path, provider: str) -> None:
    child = ScriptedPolicy([Reply("Editing.", [edit("a.txt", "alpha one", "alpha by child")])],
                           final=Reply("The child edited a.txt."))
    route(simulator, [Reply("Delegating.", [task_call("EDIT-JOB: change a", "edit a",
                                                      agent_type="general")])],
          [(user_contains("EDIT-JOB"), child)])
    run = make_run(simulator, provider, isolated_home, project)
    try:
        run.start()
        run.turn("have a helper change a")
        assert (project / "a.txt").read_text() == "alpha by child\n"
        point = point_for(run, "have a helper")
        assert rewinder(run).changed_since(point) == [str(project / "a.txt")]
        rewinder(run).rewind(point, code=True, conversation=False)
        assert (project / "a.txt").read_text() == "alpha one\n"
    finally:
        run.close()


def test_a_users_version_too_large_to_keep_is_not_overwritten(
        simulator: Simulator, isolated_home: Path, project: Path, provider: str) -> None:
    simulator.policy = scripted_policy(TURNS[:1])
    run = Run(simulator, provider, isolated_home, project, checkpoint_max_file_bytes=1_000)
    try:
        run.start()
        run.turn(TURNS[0][0])
        users = "a line the user wrote\n" * 100  # over the 1,000-byte limit
        (project / "a.txt").write_text(users)
        point = point_for(run, "turn 1")
        plan = rewinder(run).plan(point)
        assert [f.path.name for f in plan.conflicts] == ["a.txt"]
        outcome = rewinder(run).rewind(point, code=True, conversation=False, plan=plan)
        assert outcome.unsaved == [project / "a.txt"] and outcome.restored == []
        assert (project / "a.txt").read_text() == users
    finally:
        run.close()


def test_several_edits_in_one_call_rewind_with_the_file(
    simulator: Simulator, isolated_home: Path, project: Path, provider: str
) -> None:
    """edit_file's list of edits and replace_all write once each: the checkpoint taken
    before that write is what /rewind puts back."""
    several = ToolCall("edit_file", {"path": "a.txt", "edits": [
        {"old": "alpha", "new": "ALPHA"}, {"old": "one", "new": "uno"}]})
    every = ToolCall("edit_file", {"path": "b.txt", "old": "e", "new": "E", "replace_all": True})
    turns = [("turn 1: several edits", [several, every])]
    simulator.policy = scripted_policy(turns)
    run = make_run(simulator, provider, isolated_home, project)
    try:
        run.start()
        before = file_state(project)
        run.turn(turns[0][0])
        assert (project / "a.txt").read_text() == "ALPHA uno\n"
        assert (project / "b.txt").read_text() == "bEta onE\n"
        point = point_for(run, "turn 1")
        assert rewinder(run).changed_since(point) == sorted(
            str(project / n) for n in ("a.txt", "b.txt"))
        rewinder(run).rewind(point, code=True, conversation=False)
        assert file_state(project) == before
    finally:
        run.close()
