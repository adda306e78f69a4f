"""Keep-alive pings: the last request read again while the user is away, over real HTTP."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.agent.loop import Agent
from mini_claude.pricing import CostTracker
from mini_claude.simulator import Fault, SimClock, Simulator
from mini_claude.simulator.types import RecordedRequest
from mini_claude.transcript import load_session
from tests.support.long_session import (
    LongSessionPolicy,
    RunRecord,
    build_agent,
    keepalive_pings,
    make_project,
    run_turn,
)

WINDOW = 60_000
GAP = 20 * 60  # longer than the cache's five minutes, shorter than the pings' hour


AfterFirstTurn = Callable[[Agent, SimClock, RunRecord], Awaitable[None]]


def _session(tmp_path: Path, then: AfterFirstTurn, *, provider: str = "anthropic",
             calls_per_turn: int = 4, fault: Fault | None = None,
             **overrides: Any) -> tuple[Simulator, Agent, RunRecord]:
    """One turn on a simulated clock, then ``then``: what the server saw and the agent said."""
    root = tmp_path / "proj"
    files = make_project(root)
    clock = SimClock(start=1_000.0)
    record = RunRecord()
    with Simulator(LongSessionPolicy(files, calls_per_turn=calls_per_turn),
                   context_window=WINDOW, clock=clock) as sim:
        _, agent = build_agent(sim, provider, root, tmp_path / "home", WINDOW, clock, **overrides)
        if fault is not None:
            sim.inject(fault)

        async def run() -> None:
            await run_turn(agent, "turn 0: review the code", record)
            await then(agent, clock, record)
            await agent.provider.close()

        asyncio.run(run())
    return sim, agent, record


def _play(tmp_path: Path, provider: str = "anthropic", *, fault: Fault | None = None,
          **overrides: Any) -> tuple[Simulator, Agent, RunRecord]:
    """One turn, twenty minutes away (pinging as the REPL does), and a second turn."""
    async def away_and_back(agent: Agent, clock: SimClock, record: RunRecord) -> None:
        back = clock.now() + GAP
        await agent.keep_cache_warm(clock.wait_until, end=back)
        clock.advance(back - clock.now())
        await run_turn(agent, "turn 1: go on", record)

    return _session(tmp_path, away_and_back, provider=provider, fault=fault, **overrides)


def _first_of_second_turn(sim: Simulator) -> RecordedRequest:
    return next(r for r in sim.requests if "turn 1: go on" in str(r.body))


def test_pings_keep_the_cache_warm_through_a_long_gap(tmp_path: Path) -> None:
    sim, agent, record = _play(tmp_path)
    pings = keepalive_pings(sim)
    # every 270 s after the last call: 270, 540, 810, 1080 of a 1,200 s gap
    assert len(pings) == 4
    assert all(p.status == 200 and p.cache_write_tokens == 0 for p in pings)
    assert all(p.cache_read_tokens == p.prompt_tokens for p in pings)
    resumed = _first_of_second_turn(sim)
    assert resumed.cache_read_tokens >= pings[-1].prompt_tokens
    # the cache was warm, so nothing was cleared for being cold
    assert not [e for e in record.of(ev.TierFired) if "cache expired" in e.report.detail]
    assert agent.costs.pings.requests == 4
    assert agent.costs.pings.usage.cache_read_tokens == sum(p.cache_read_tokens for p in pings)


def test_without_pings_the_next_turn_writes_the_cache_again(tmp_path: Path) -> None:
    sim, agent, record = _play(tmp_path, cache_keepalive_pings=0)
    assert keepalive_pings(sim) == []
    assert agent.costs.pings.requests == 0
    resumed = _first_of_second_turn(sim)
    assert resumed.cache_read_tokens == 0
    # the pipeline knew, and cleared old results before paying to write them again
    assert [e for e in record.of(ev.TierFired) if "cache expired" in e.report.detail]


def test_pings_stop_after_their_number(tmp_path: Path) -> None:
    async def never_back(agent: Agent, clock: SimClock, record: RunRecord) -> None:
        await agent.keep_cache_warm(clock.wait_until)

    sim, _, _ = _session(tmp_path, never_back, calls_per_turn=2, cache_keepalive_pings=3)
    assert len(keepalive_pings(sim)) == 3


def test_a_ping_is_recorded_for_resume_and_priced_like_any_call(tmp_path: Path) -> None:
    _, agent, _ = _play(tmp_path)
    loaded = load_session(agent.transcript.path)
    replayed = CostTracker()
    replayed.replay(loaded.usage, "sim-sonnet")
    assert replayed.pings.requests == 4
    assert replayed.requests == agent.costs.requests
    assert replayed.dollars == pytest.approx(agent.costs.dollars)


def test_a_failed_ping_ends_the_pings_and_the_session_goes_on(tmp_path: Path) -> None:
    fault = Fault("model_not_found", when=lambda conv: conv.max_tokens == 1)
    sim, agent, record = _play(tmp_path, fault=fault)
    assert len(keepalive_pings(sim)) == 1 and keepalive_pings(sim)[0].status == 404
    assert agent.costs.pings.requests == 0
    assert not record.of(ev.TurnError)
    assert len(record.of(ev.TurnFinished)) == 2


@pytest.mark.parametrize("overrides", [{"provider": "openai"}, {"thinking_tokens": 2_048}],
                         ids=["openai", "thinking"])
def test_no_pings_where_one_token_cannot_keep_a_stated_cache(
    overrides: dict[str, Any], tmp_path: Path
) -> None:
    provider = str(overrides.pop("provider", "anthropic"))
    sim, agent, _ = _play(tmp_path, provider, **overrides)
    assert keepalive_pings(sim) == [] and agent.costs.pings.requests == 0


def test_a_summary_since_the_last_call_leaves_nothing_to_keep(tmp_path: Path) -> None:
    async def compact_then_leave(agent: Agent, clock: SimClock, record: RunRecord) -> None:
        async for _ in agent.compact():
            pass
        await agent.keep_cache_warm(clock.wait_until, end=clock.now() + GAP)

    sim, _, _ = _session(tmp_path, compact_then_leave, calls_per_turn=3)
    assert keepalive_pings(sim) == []


def test_the_simulated_model_answers_one_token_without_moving_its_script(
    tmp_path: Path
) -> None:
    sim, _, record = _play(tmp_path)
    for ping in keepalive_pings(sim):
        assert ping.reply is not None and ping.reply.stop_reason == "max_tokens"
        assert not ping.reply.tool_calls
    # the second turn ran its four scripted calls and its answer as if no ping had come between
    start = sim.requests.index(_first_of_second_turn(sim))
    second = [r for r in sim.requests[start:] if not r.is_side_request]
    assert len(second) == 5
    assert len(record.of(ev.TurnFinished)) == 2


def test_a_history_with_no_room_for_a_page_is_let_go_cold(tmp_path: Path) -> None:
    # pages of 90% of the window: a 13K history leaves no room for one, so the next turn is
    # better started from a summary or cleared results than from a warm, full prompt
    sim, agent, record = _play(tmp_path, read_page_window_share=0.9)
    assert keepalive_pings(sim) == [] and agent.costs.pings.requests == 0
    assert _first_of_second_turn(sim).cache_read_tokens < 3_000  # only the tools and system
    cold = [e for e in record.of(ev.TierFired) if "cache expired" in e.report.detail]
    summaries = [e for e in record.of(ev.CompactionFinished) if e.reason == "idle"]
    assert cold or summaries
