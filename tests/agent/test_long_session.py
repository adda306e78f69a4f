"""Long sessions through the simulator on a small window: nothing over the window, nothing lost."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.conversation import validate
from mini_claude.simulator import FunctionPolicy, RecordedRequest, Reply, SimClock, Simulator
from mini_claude.transcript import load_session
from tests.support.long_session import (
    LongSessionPolicy,
    RunRecord,
    build_agent,
    make_project,
    run_turn,
)

WINDOW = 24_000


def model_requests(sim: Simulator) -> list[RecordedRequest]:
    return [r for r in sim.requests if not r.is_side_request]


def estimate_errors(record: RunRecord, sim: Simulator) -> list[float]:
    """Relative error of the agent's estimate against the tokenizer, request by request.

    The first request and the first after a fold have no server count to start from
    (the history was rebuilt): they are weighed whole, and held to a looser bound here.
    A prompt under half the window is measured against half the window: what the meter is
    for is the threshold and the window, and right after an idle clearing a few hundred
    tokens of placeholders weighed at the old text's ratio are a tenth of a 5K prompt.
    """
    estimates: list[int] = []
    unanchored: list[int] = [0]
    for event in record.events:
        if isinstance(event, ev.TierFired) and event.report.tier == "fold":
            unanchored.append(len(estimates))
        elif isinstance(event, ev.ModelCallStarted):
            estimates.append(event.status.tokens)
    actual = [r.prompt_tokens for r in model_requests(sim)]
    assert len(estimates) == len(actual)
    errors = [abs(e - a) / max(a, WINDOW // 2) for e, a in zip(estimates, actual, strict=True)]
    assert max(errors[i] for i in unanchored) < 0.15
    return [error for i, error in enumerate(errors) if i not in unanchored]


def full_text(content: str) -> str:
    """A result's text, or the spilled file it names when the output outgrew memory."""
    match = re.search(r"the full output is saved at (\S+?\.txt)", content)
    return Path(match.group(1)).read_text() if match else content


def assert_nothing_lost(agent_transcript: Path, root: Path) -> None:
    """Every original tool result is in the transcript in full (big log and data file included)."""
    loaded = load_session(agent_transcript)
    big_log = (root / "logs" / "big.log").read_text()
    originals = [r for m in loaded.original_messages for r in m.tool_results]
    shell = [r for r in originals if r.tool_name == "run_shell"]
    assert shell and all(big_log.strip() in full_text(r.content) for r in shell)
    assert validate(loaded.conversation.messages) == []


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_single_turn_of_300_tool_calls(provider: str, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    files = make_project(root)
    clock = SimClock(start=1_000.0)
    policy = LongSessionPolicy(files, calls_per_turn=300)
    with Simulator(policy, context_window=WINDOW, clock=clock) as sim:
        _, agent = build_agent(sim, provider, root, tmp_path / "home", WINDOW, clock)
        record = RunRecord()
        asyncio.run(run_turn(agent, "review every file in src and the logs", record))
    finished = record.of(ev.TurnFinished)
    assert finished, [e for e in record.events if isinstance(e, ev.TurnError)]
    assert len(record.of(ev.ToolFinished)) == 300
    assert all(r.status == 200 for r in sim.requests), {r.error for r in sim.requests if r.error}
    assert max(r.prompt_tokens for r in sim.requests) <= WINDOW
    compactions = record.of(ev.CompactionFinished)
    assert compactions, "the mid-turn safety net never fired"
    assert len(compactions) <= 10, f"{len(compactions)} compactions: too many"
    tiers = {e.report.tier for e in record.of(ev.TierFired)}
    assert {"persist", "microcompact", "fold"} <= tiers, tiers
    assert_nothing_lost(agent.transcript.path, root)
    errors = estimate_errors(record, sim)
    # Large batched edits (15% of the window at once) weighed before the meter has learnt
    # this text's shape land within ~8%; the output reserve is a quarter of this window.
    assert max(errors) < 0.10, f"worst estimate error {max(errors):.1%}"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_many_turns_with_idle_gaps(provider: str, tmp_path: Path) -> None:
    root = tmp_path / "proj"
    files = make_project(root)
    clock = SimClock(start=1_000.0)
    policy = LongSessionPolicy(files, calls_per_turn=4)
    with Simulator(policy, context_window=WINDOW, clock=clock) as sim:
        _, agent = build_agent(sim, provider, root, tmp_path / "home", WINDOW, clock)
        record = RunRecord()

        async def session_run() -> None:
            for turn in range(40):
                if turn % 7 == 6:
                    clock.advance(360)  # the user went for coffee: the prompt cache is cold
                await run_turn(agent, f"turn {turn}: keep reviewing", record)

        asyncio.run(session_run())
    assert len(record.of(ev.TurnFinished)) == 40
    assert not record.of(ev.TurnError)
    assert all(r.status == 200 for r in sim.requests), {r.error for r in sim.requests if r.error}
    assert max(r.prompt_tokens for r in sim.requests) <= WINDOW
    tiers = {e.report.tier for e in record.of(ev.TierFired)}
    # snip waits until it can free 15% of the window at once; its own tests cover it
    assert {"persist", "budget", "microcompact"} <= tiers, tiers
    reasons = [e.reason for e in record.of(ev.CompactionFinished)]
    assert {"mid-turn", "idle"} <= set(reasons), reasons
    assert len(reasons) <= 40 * 5 // 10, (
        f"{len(reasons)} compactions in {len(sim.requests)} requests"
    )
    assert_nothing_lost(agent.transcript.path, root)
    errors = estimate_errors(record, sim)
    # Large batched edits (15% of the window at once) weighed before the meter has learnt
    # this text's shape land within ~8%; the output reserve is a quarter of this window.
    assert max(errors) < 0.10, f"worst estimate error {max(errors):.1%}"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_auto_compact_fires_at_a_turn_boundary_and_keeps_the_gist(
    provider: str, tmp_path: Path
) -> None:
    """A talkative session without tools: the summary happens between turns, never mid-reply."""
    root = tmp_path / "proj"
    root.mkdir()
    clock = SimClock(start=1_000.0)

    def chatty(conv: object) -> Reply:
        return Reply(text="Here is a long design discussion. " * 90)

    with Simulator(FunctionPolicy(chatty), context_window=WINDOW, clock=clock) as sim:
        _, agent = build_agent(sim, provider, root, tmp_path / "home", WINDOW, clock)
        record = RunRecord()

        async def talk() -> None:
            await run_turn(
                agent, "Remember FACT-boundary-42: the API is versioned by date.", record
            )
            for turn in range(24):
                await run_turn(agent, f"turn {turn}: and what about caching?", record)

        asyncio.run(talk())
    reasons = [e.reason for e in record.of(ev.CompactionFinished)]
    assert "auto" in reasons
    assert all(r.status == 200 for r in sim.requests)
    assert max(r.prompt_tokens for r in sim.requests) <= WINDOW
    last_body = str(sim.requests[-1].body)
    assert "FACT-boundary-42" in last_body  # the user's own words survive compaction
