"""The todo plan and loaded skills end to end over HTTP, both providers: they survive every
compaction verbatim, the plan is validated, reminded, published, and restored on resume."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.context.attachments import PLAN_TITLE
from mini_claude.context.reattach import HEADER
from mini_claude.plan import REMINDER_TAG
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import (
    PROVIDERS,
    first_message_text,
    last_results,
    request_text,
    run_factory,
)

SKILL_BODY = (
    "# Release notes\n\n"
    "1. SKILL-RULE-A: list user-visible changes first, one line each.\n"
    "2. SKILL-RULE-B: name the migration steps in a section of their own.\n"
    "3. Use the wording in template.md."
)
SKILL_MD = (
    "---\nname: release-notes\ndescription: Write release notes for this project in its "
    f"house style.\n---\n{SKILL_BODY}\n"
)


def todos(*pairs: tuple[str, str]) -> ToolCall:
    return ToolCall("todo_write", {"todos": [{"content": c, "status": s} for c, s in pairs]})


def read(path: str) -> Reply:
    return Reply(f"Reading {path}.", [ToolCall("read_file", {"path": path})])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    skill = root / ".mini-claude" / "skills" / "release-notes"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL_MD)
    (skill / "template.md").write_text("## Changes\n")
    for i in range(12):
        lines = "".join(f"BIGFILE-{i} row {n}: value {n * 7 % 101}\n" for n in range(220))
        (root / f"data_{i}.txt").write_text(lines)
    return root


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def make_run(simulator: Simulator, isolated_home: Path, project: Path
             ) -> Iterator[Any]:
    with run_factory(simulator, isolated_home, project) as make:
        yield make


def reattached(text: str, title: str, body: str) -> str:
    return f"{HEADER.format(title=title)}\n{body}"


def test_plan_and_a_loaded_skill_survive_three_compactions_verbatim(
    provider: str, make_run: Any, simulator: Simulator
) -> None:
    plan_one = (("Read the data files", "in_progress"), ("Write the notes", "pending"))
    plan_two = (("Read the data files", "completed"), ("Write the notes", "in_progress"))
    simulator.policy = ScriptedPolicy([
        Reply("Planning.", [todos(*plan_one)]),
        Reply("Loading the skill.", [ToolCall("skill", {"name": "release-notes"})]),
        read("data_0.txt"), read("data_1.txt"), read("data_2.txt"),
        Reply("Compacting.", [ToolCall("compact", {})]),
        Reply("First part done."),
        # manual /compact in between
        read("data_3.txt"), read("data_4.txt"),
        Reply("Progress.", [todos(*plan_two)]),
        read("data_5.txt"),
        Reply("Compacting again.", [ToolCall("compact", {})]),
        Reply("All done."),
    ])
    run = make_run(provider, context_window=40_000)
    run.start()
    run.turn("write release notes from the data files")
    run.compact()
    run.turn("continue")
    summaries = run.summary_requests()
    assert len(summaries) == 3
    plan_v1 = "[~] Read the data files\n[ ] Write the notes"
    plan_v2 = "[x] Read the data files\n[~] Write the notes"
    skill_block = reattached("", "skill 'release-notes', which you loaded", SKILL_BODY)
    # The request after each compaction starts with the boundary: summary + re-attachments.
    after = [next(r for r in run.sim.requests[run.sim.requests.index(s) + 1:]
                  if not r.is_side_request) for s in summaries]
    expected_plans = [plan_v1, plan_v1, plan_v2]
    compactions = [e for e in run.events if isinstance(e, ev.CompactionFinished)]
    assert [c.reason for c in compactions] == ["tool", "manual", "tool"]
    for request, plan, compaction in zip(after, expected_plans, compactions, strict=True):
        boundary = first_message_text(request)
        assert boundary.count(reattached("", PLAN_TITLE, plan)) == 1  # replaced, never nested
        assert boundary.count(skill_block) == 1
        assert "BIGFILE-0 row 100" not in request_text(request)  # the rest was summarized
        assert compaction.summary.splitlines()[0] in boundary  # ... into the summary


def test_an_invalid_list_is_refused_with_a_reason_the_model_reads(
    provider: str, make_run: Any, simulator: Simulator
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Planning.", [todos(("one", "in_progress"), ("two", "in_progress"))]),
        Reply("Again.", [ToolCall("todo_write", {"todos": [{"content": "x", "status": "done"}]})]),
        Reply("Fixed.", [todos(("one", "in_progress"), ("two", "pending"))]),
        Reply("Planned."),
    ])
    run = make_run(provider)
    run.start()
    events = run.turn("do two things")
    requests = run.model_requests()
    first, second = last_results(requests[1]), last_results(requests[2])
    assert "only one item may be in_progress" in first[0] and "items 1, 2" in first[0]
    assert "status 'done'" in second[0] and "pending, in_progress, completed" in second[0]
    updates = [e for e in events if isinstance(e, ev.PlanUpdated)]
    assert len(updates) == 1  # refused lists are not published
    assert [i.status for i in run.agent.tool_context.plan.items] == ["in_progress", "pending"]


def test_an_unfinished_untouched_plan_earns_one_reminder_in_the_newest_message(
    provider: str, make_run: Any, simulator: Simulator
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Planning.", [todos(("Read files", "in_progress"), ("Report", "pending"))]),
        read("data_0.txt"), read("data_1.txt"), read("data_2.txt"),
        Reply("Done reading."),
    ])
    run = make_run(provider, todo_reminder_calls=2)
    run.start()
    run.turn("read three files")
    requests = run.model_requests()
    # calls: 1 todo_write, 2 read (1 since touch), 3 read (2: reminder), 4 read, 5 answer
    reminded = [i for i, r in enumerate(requests)
                if any(f"<{REMINDER_TAG}>" in c for c in last_results(r))]
    assert reminded == [3]
    reminder = next(c for c in last_results(requests[3]) if REMINDER_TAG in c)
    assert "[~] Read files\n[ ] Report" in reminder and "0/2 done" in reminder
    # It rides on the newest message: the earlier part of the request is unchanged.
    assert requests[4].conversation is not None and requests[3].conversation is not None
    assert requests[4].conversation.messages[:-2] == requests[3].conversation.messages
    run.turn("and now?")  # the count goes on across turns: the user's message carries the next
    last = run.model_requests()[-1]
    assert last.conversation is not None
    assert REMINDER_TAG in last.conversation.messages[-1].text


def test_resume_restores_the_plan_and_the_loaded_skills(
    provider: str, make_run: Any, simulator: Simulator, isolated_home: Path, project: Path
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Planning.", [todos(("Step one", "completed"), ("Step two", "in_progress"))]),
        Reply("Skill.", [ToolCall("skill", {"name": "release-notes"})]),
        Reply("Paused."),
    ])
    first = make_run(provider)
    first.start()
    first.turn("plan it")
    session_id = first.session.session_id
    first.close()
    second = make_run(provider)
    agent = second.session.resume(session_id)
    assert agent.tool_context.plan.checklist() == "[x] Step one\n[~] Step two"
    assert agent.tool_context.loaded_skills.newest_first() == ["release-notes"]
    simulator.policy = ScriptedPolicy([read("data_0.txt"), Reply("ok")])
    second.turn("go on")
    second.compact()
    second.turn("next")
    boundary = first_message_text(second.model_requests()[-1])
    assert reattached("", PLAN_TITLE, "[x] Step one\n[~] Step two") in boundary
    assert "SKILL-RULE-B" in boundary


def test_the_system_prompt_lists_skills_but_not_their_bodies(
    provider: str, make_run: Any, simulator: Simulator
) -> None:
    simulator.policy = ScriptedPolicy([
        Reply("Skill.", [ToolCall("skill", {"name": "release-notes"})]),
        Reply("Unknown.", [ToolCall("skill", {"name": "nope"})]),
        Reply("ok"),
    ])
    run = make_run(provider)
    run.start()
    run.turn("notes please")
    requests = run.model_requests()
    system = requests[0].conversation.system if requests[0].conversation else ""
    assert "- release-notes: Write release notes for this project in its house style." in system
    assert "SKILL-RULE-A" not in system and "todo_write" in system
    loaded = last_results(requests[1])[0]
    assert SKILL_BODY in loaded
    assert ".mini-claude/skills/release-notes/template.md" in loaded
    assert "no skill named 'nope'; available skills: release-notes" in last_results(requests[2])[0]


def test_automatic_compactions_reattach_the_plan_too(
    provider: str, make_run: Any, simulator: Simulator
) -> None:
    simulator.policy = ScriptedPolicy(
        [Reply("Planning.", [todos(("Read every data file", "in_progress"))])]
        + [read(f"data_{i}.txt") for i in range(12)]
        + [Reply("Read them all.")]
    )
    run = make_run(provider, context_window=16_000, summary_min_work=1, reattach_max_files=1)
    run.start()
    run.turn("read all the data files")
    automatic = [e for e in run.events
                 if isinstance(e, ev.CompactionFinished) and e.reason in ("auto", "mid-turn")]
    assert automatic
    block = reattached("", PLAN_TITLE, "[~] Read every data file")
    for summary in run.summary_requests():
        following = next(r for r in run.sim.requests[run.sim.requests.index(summary) + 1:]
                         if not r.is_side_request)
        assert first_message_text(following).count(block) == 1
