"""Done-when for thinking: a long tool-using session with thinking on runs through tier
edits, summaries inside and between turns, interruptions and a kill-and-continue, and the
server (as strict as the API about thinking blocks) rejects none of its requests."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

from mini_claude import events as ev
from mini_claude.agent.loop import Agent
from mini_claude.conversation import ThinkingBlock, validate
from mini_claude.permissions.asking import allow_all
from mini_claude.providers import create_provider
from mini_claude.session.wiring import Session
from mini_claude.simulator import SimClock, Simulator
from tests.support.long_session import (
    LongSessionPolicy,
    RunRecord,
    build_agent,
    make_project,
    run_turn,
)

WINDOW = 60_000


async def _interrupt_after(agent: Agent, text: str, record: RunRecord, kind: type) -> None:
    """The user presses Esc as soon as an event of ``kind`` arrives: as in the REPL, the
    task running the turn is cancelled wherever the agent is waiting."""
    seen = asyncio.Event()

    async def pump() -> None:
        async for event in agent.turn(text):
            record.events.append(event)
            if isinstance(event, kind):
                seen.set()

    task = asyncio.create_task(pump())
    waiter = asyncio.create_task(seen.wait())
    await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    waiter.cancel()
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        record.events.append(ev.TurnError("interrupted", "interrupted"))


async def _kill_during_tools(agent: Agent, text: str, record: RunRecord, snapshot: Path) -> None:
    """The process dies while a tool runs: the transcript as it stood then is all that is left."""
    async for event in agent.turn(text):
        record.events.append(event)
        running = agent.conversation.messages[-1].role == "assistant"
        if isinstance(event, ev.ToolStarted) and running:
            shutil.copy(agent.transcript.path, snapshot)
            break


def test_long_session_with_thinking_is_never_refused(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    home = tmp_path / "home"
    files = make_project(root)
    clock = SimClock(start=1_000.0)
    policy = LongSessionPolicy(files, calls_per_turn=6)
    record = RunRecord()
    snapshot = home / "transcripts" / "killed.jsonl"
    with Simulator(policy, context_window=WINDOW, clock=clock) as sim:
        # Notes early in each history, so that idle gaps find some to summarize from; each
        # update waited for, so compactions fall at the same points on every run (in the
        # background, whether a gap finds notes in depends on the machine's speed). The
        # threshold at its share of the window, so the turns before a gap leave a history
        # worth summarizing when it comes.
        session, agent = build_agent(sim, "anthropic", root, home, WINDOW, clock,
                                     thinking_tokens=2048, session_memory_start_pct=0.6,
                                     session_memory_background=False,
                                     autocompact_max_tokens=WINDOW)

        async def first_run() -> None:
            for number in range(14):
                # Turn 0 is short, so the idle gap after it finds a history too small to
                # summarize: the cold cache clears the finished turn's thinking instead.
                # The turns before the later gaps are long enough to leave a history worth
                # summarizing when the gap comes.
                policy.calls_per_turn = 1 if number == 0 else 9 if number % 5 == 3 else 6
                if number == 1 or number % 5 == 4:
                    clock.advance(360)  # idle: the cache is cold, earlier thinking goes
                if number == 3:
                    await _interrupt_after(agent, "turn 3", record, ev.Thinking)
                elif number == 7:
                    await _interrupt_after(agent, "turn 7", record, ev.ToolStarted)
                else:
                    await run_turn(agent, f"turn {number}: keep reviewing", record)
            policy.calls_per_turn = 60  # one long turn: summaries inside the tool loop
            await run_turn(agent, "now a long review", record)
            policy.calls_per_turn = 6
            await _kill_during_tools(agent, "the turn that dies", record, snapshot)
            # A notes update still running finishes before this event loop closes (closing it
            # would cut its request off, which is not what is under test here).
            await agent.steps.memory.settle()

        asyncio.run(first_run())
        agent.transcript.close()

        resumed = Session(session.settings, root, create_provider(session.settings), allow_all,
                          clock=clock.now)
        again = resumed.resume("killed")
        assert again.conversation.messages[-1].tool_results  # the dead call, marked interrupted

        async def second_run() -> None:
            for number in range(3):
                await run_turn(again, f"after the restart {number}", record)
            await again.steps.memory.settle()

        asyncio.run(second_run())

    # A request cut off before its body was sent is the client's doing (the two
    # interruptions, the kill, a notes update cancelled as a run ends: which of them
    # were mid-send depends on timing); every request that arrived whole was accepted.
    aborted = [r for r in sim.requests if not isinstance(r.body, dict)]
    assert len(aborted) <= 4
    refused = [r for r in sim.requests if isinstance(r.body, dict) and r.status != 200]
    assert not refused, [r.error for r in refused]
    whole = [r for r in sim.requests if isinstance(r.body, dict)]
    thinking_requests = [r for r in whole if r.body.get("thinking")]
    assert len(thinking_requests) > 100
    summaries = [r for r in whole if r.is_side_request]  # summaries and session notes
    assert summaries and any(r.body.get("thinking") for r in summaries)  # same params, warm cache
    looped = [r for r in thinking_requests
              if any(b.get("type") == "thinking" for m in r.body["messages"]
                     if m["role"] == "assistant" for b in m["content"])]
    assert len(looped) > 50, "thinking blocks were not sent back"
    reasons = {e.reason for e in record.of(ev.CompactionFinished)}
    assert {"mid-turn", "idle"} <= reasons, reasons
    tiers = {e.report.tier for e in record.of(ev.TierFired)}
    assert "clear_thinking" in tiers, tiers
    assert record.of(ev.Thinking)
    assert len(record.of(ev.TurnFinished)) >= 15
    assert [e for e in record.of(ev.TurnError) if e.kind == "interrupted"]
    assert validate(again.conversation.messages) == []
    last_answer = [m for m in again.conversation.messages if m.role == "assistant"][-1]
    assert isinstance(last_answer.blocks[0], ThinkingBlock)
