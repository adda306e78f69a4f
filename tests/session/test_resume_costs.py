"""A resumed session's costs go on from the transcript's recorded usage, summaries included,
and its context meter from the server's count of its last request."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from mini_claude.models import SONNET
from mini_claude.pricing import CostTracker
from mini_claude.protocol import Usage
from mini_claude.simulator import Reply, ScriptedPolicy, Simulator, ToolCall
from mini_claude.ui.statusbar import cost_label, status_text
from tests.support.repl import running_repl, sim_settings


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    folder.mkdir()
    return folder


def test_resume_rebuilds_the_costs_that_status_bar_and_cost_show(
        simulator: Simulator, isolated_home: Path, project: Path) -> None:
    settings = sim_settings(simulator, isolated_home)

    async def first_session() -> tuple[str, CostTracker]:
        async with running_repl(settings, project) as repl:
            mark = await repl.submit("tell me about the project")
            await repl.at_prompt()
            mark = await repl.submit("/compact")
            await repl.wait_for("compacted", after=mark)
            await repl.at_prompt()
            costs = repl.repl.agent.costs
            session_id = repl.session.session_id
            assert await repl.exit() == 0
        return session_id, costs

    async def resumed(session_id: str) -> tuple[CostTracker, str, str]:
        async with running_repl(settings, project, resume=session_id) as repl:
            agent = repl.repl.agent
            bar = status_text(agent.status(), agent.costs, settings.model, None)
            mark = await repl.submit("/cost")
            await repl.wait_for("wall time", after=mark)
            shown = repl.text[mark:]
            assert await repl.exit() == 0
        return agent.costs, bar, shown

    session_id, before = asyncio.run(first_session())
    assert before.requests >= 2 and before.summaries.requests == 1 and before.dollars > 0

    after, bar, shown = asyncio.run(resumed(session_id))
    assert after.usage == before.usage
    assert after.requests == before.requests
    assert after.dollars == pytest.approx(before.dollars)
    assert after.summaries.requests == 1
    assert after.summaries.usage == before.summaries.usage
    assert cost_label(after) in bar and cost_label(after) in shown


def test_usage_recorded_before_the_model_was_noted_is_priced_at_the_session_model() -> None:
    costs = CostTracker()
    costs.replay([
        {"type": "event", "kind": "usage", "input_tokens": 1_000_000, "output_tokens": 0},
        {"kind": "usage", "model": "gpt-4o-mini", "input_tokens": 1_000_000},
        {"kind": "usage", "model": "claude-sonnet-4-5", "output_tokens": 1_000_000,
         "summary": True},
    ], default_model="claude-sonnet-4-5")
    assert costs.requests == 3
    assert costs.usage == Usage(input_tokens=2_000_000, output_tokens=1_000_000)
    assert costs.dollars == pytest.approx(SONNET.input + 0.15 + SONNET.output)
    assert costs.summaries.requests == 1
    assert costs.summaries.dollars == pytest.approx(SONNET.output)


def test_the_transcript_notes_each_calls_model_and_marks_summaries(
        simulator: Simulator, isolated_home: Path, project: Path) -> None:
    settings = sim_settings(simulator, isolated_home)

    async def session() -> Path:
        async with running_repl(settings, project) as repl:
            await repl.submit("hello")
            await repl.at_prompt()
            mark = await repl.submit("/compact")
            await repl.wait_for("compacted", after=mark)
            path = repl.repl.agent.transcript.path
            assert await repl.exit() == 0
        return path

    records = [json.loads(line) for line in asyncio.run(session()).read_text().splitlines()]
    usage = [r for r in records if r.get("kind") == "usage"]
    assert [r.get("summary", False) for r in usage] == [False, True]
    assert {r["model"] for r in usage} == {settings.model}


def _reading_session(simulator: Simulator, project: Path) -> None:
    for i in range(3):
        (project / f"part{i}.txt").write_text(
            "".join(f"part {i} line {j}: words about the project\n" for j in range(120)))
    simulator.policy = ScriptedPolicy([
        *[Reply(text=f"Reading part {i}.",
                tool_calls=[ToolCall("read_file", {"path": f"part{i}.txt"})]) for i in range(3)],
        Reply(text="All three parts read."),
    ])


def test_resume_shows_the_context_the_session_ended_with(
        simulator: Simulator, isolated_home: Path, project: Path) -> None:
    """The bar after -c reads what it read at exit: the meter starts from the server's count
    of the last request, not from an estimate of the whole history."""
    _reading_session(simulator, project)
    settings = sim_settings(simulator, isolated_home)

    async def first_session() -> tuple[str, int, int]:
        async with running_repl(settings, project) as repl:
            mark = await repl.submit("read the parts")
            await repl.wait_for("All three parts read.", after=mark)
            await repl.at_prompt()
            shown = repl.repl.agent.status().tokens
            session_id = repl.session.session_id
            assert await repl.exit() == 0
        return session_id, shown, simulator.requests[-1].prompt_tokens

    async def resumed(session_id: str) -> tuple[int, int]:
        async with running_repl(settings, project, resume=session_id) as repl:
            agent = repl.repl.agent
            tokens = agent.status().tokens
            whole = agent.steps.meter.estimate_messages(agent.conversation.messages)
            assert await repl.exit() == 0
        return tokens, whole

    session_id, at_exit, last_prompt = asyncio.run(first_session())
    assert at_exit > last_prompt  # the last reply is in the history, not in that prompt
    after, estimated_whole = asyncio.run(resumed(session_id))
    assert abs(after - at_exit) <= max(20, at_exit // 200), (after, at_exit)
    assert abs(estimated_whole - at_exit) > abs(after - at_exit)  # what it read before
