"""How long the main loop stands still at each compaction, measured on the wire.

One long turn against a simulator whose summary and notes requests are answered late
(``side_s``) and whose main-loop requests are answered late too (``main_s``), on a clock
that follows real time. Every event is stamped as it arrives; a step is the time from one
model call's start to the next, and a compaction's stall is how much longer the step that
holds it took than a normal (median) step.

``python -m tests.support.stall`` runs the full measurement (side 20 s, main 1 s, 150 calls,
40K and 200K, both wires) and prints one line per run; ``make wait-bench`` calls it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from mini_claude import events as ev
from mini_claude.context.notes import SessionNotes
from mini_claude.simulator import SimClock, Simulator
from mini_claude.simulator.latency import Latency
from tests.support.long_session import LongSessionPolicy, build_agent, make_project

WINDOWS = (40_000, 200_000)
ARRIVAL_SPARE_S = 5.0  # beyond the side latency, for an update to land after the turn
PROVIDERS = ("anthropic", "openai")

EventT = TypeVar("EventT", bound=ev.Event)


@dataclass
class StallRun:
    """One measured turn: its events with their times, and what the server saw."""

    provider: str
    window: int
    latency: Latency
    timeline: list[tuple[float, ev.Event]] = field(default_factory=list)
    notes_requests: int = 0
    notes_in_flight_at_end: int = 0  # not yet answered when the measured turn ended
    # Landed after the turn, while the user reads its answer, and then the notes the next
    # compaction takes (0 or 1: only the newest is).
    notes_held: int = 0
    summary_requests: int = 0
    # (sent, answered) of each notes request on the same clock as the timeline; answered is
    # None when the reply never came
    notes_flights: list[tuple[float, float | None]] = field(default_factory=list)
    peak_prompt_tokens: int = 0
    statuses: set[int] = field(default_factory=set)
    seconds: float = 0.0

    def of(self, kind: type[EventT]) -> list[EventT]:
        return [e for _, e in self.timeline if isinstance(e, kind)]

    def of_turn_finished(self) -> bool:
        return bool(self.of(ev.TurnFinished))

    def step_times(self) -> list[float]:
        return [t for t, e in self.timeline if isinstance(e, ev.ModelCallStarted)]

    def normal_step(self) -> float:
        starts = self.step_times()
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        return statistics.median(gaps) if gaps else 0.0

    def stalls(self) -> list[float]:
        """Seconds beyond a normal step that the step holding each compaction took."""
        return [stall for stall, _ in self.stalls_with_kind()]

    def stalls_with_kind(self) -> list[tuple[float, bool]]:
        """Each compaction's stall, and whether the compaction was a summary call (not notes
        that had arrived, not the cheap tiers)."""
        starts, normal = self.step_times(), self.normal_step()
        found = []
        for end, event in self.timeline:
            if not isinstance(event, (ev.CompactionFinished, ev.CompactionFailed)):
                continue
            before = max((s for s in starts if s <= end), default=None)
            after = min((s for s in starts if s > end), default=None)
            if before is None or after is None:
                continue  # at the turn's very start or end: no step to compare with
            summary = isinstance(event, ev.CompactionFinished) and not event.from_notes
            found.append((max(0.0, after - before - normal), summary))
        return found

    def worst_step_excess(self) -> float:
        """The longest any step stood still beyond normal, compaction or not."""
        starts, normal = self.step_times(), self.normal_step()
        gaps = [b - a for a, b in itertools.pairwise(starts)]
        return max((g - normal for g in gaps), default=0.0)

    def compactions(self) -> list[ev.CompactionFinished]:
        return [e for e in self.of(ev.CompactionFinished) if isinstance(e, ev.CompactionFinished)]

    def used_notes(self) -> set[str]:
        """The notes that replaced the history at a compaction."""
        return {e.summary for e in self.compactions() if e.from_notes}

    def notes_used(self) -> int:
        """Notes requests whose notes replaced the history at a compaction."""
        return len(self.used_notes())

    def notes_used_share(self) -> float:
        return self.notes_used() / self.notes_requests if self.notes_requests else 1.0

    def notes_thrown_away(self) -> int:
        """Notes requests neither used at a compaction nor held for the next one."""
        return self.notes_requests - self.notes_used() - self.notes_held

    def notes_overtaken(self) -> int:
        """Notes requests still on their way when a compaction began that then fell back to
        a summary call: the summary replaced the history they describe, so they could never
        be used."""
        starts, began = [], 0.0
        for t, e in self.timeline:
            if isinstance(e, ev.CompactionStarted):
                began = t
            elif isinstance(e, ev.CompactionFinished) and not e.from_notes:
                starts.append(began)
        return sum(1 for sent, answered in self.notes_flights
                   if any(sent < t and (answered is None or answered > t) for t in starts))

    def line(self) -> str:
        stalls = self.stalls()
        p95 = _p95(stalls)
        kinds = "".join("n" if e.from_notes else "s" for e in self.compactions())
        return (
            f"{self.provider:9} {self.window // 1000:>3}K side {self.latency.side_s:g}s "
            f"main {self.latency.main_s:g}s: {len(stalls)} compactions ({kinds}), stalls "
            f"{', '.join(f'{s:.1f}' for s in stalls) or '-'} s, p95 {p95:.1f} s, "
            f"normal step {self.normal_step():.2f} s, "
            f"worst step +{self.worst_step_excess():.1f} s, "
            f"notes used {self.notes_used_share():.0%} of {self.notes_requests} "
            f"({self.notes_in_flight_at_end} on its way at the end, {self.notes_held} held "
            f"for the next compaction after it, {self.notes_thrown_away()} thrown away), "
            f"summaries {self.summary_requests}, peak {self.peak_prompt_tokens} tokens, "
            f"{self.seconds:.0f} s"
        )


def _held(usable: list[SessionNotes], run: StallRun) -> int:
    """1 when the notes the next compaction would take are not ones a compaction used."""
    return int(bool(usable) and usable[0].text not in run.used_notes())


def _p95(values: list[float]) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


async def _turn(agent: object, text: str, run: StallRun) -> None:
    async for event in agent.turn(text):  # type: ignore[attr-defined]
        run.timeline.append((time.monotonic(), event))


def measure(
    provider: str, window: int, latency: Latency, calls: int, folder: Path, **overrides: object
) -> StallRun:
    """One turn of ``calls`` tool calls against a server with ``latency``; the events timed."""
    root = folder / "proj"
    files = make_project(root)
    clock = SimClock()  # real time: the notes' arrival is what the wire says it is
    run = StallRun(provider, window, latency)
    policy = LongSessionPolicy(files, calls_per_turn=calls)
    started = time.monotonic()
    with Simulator(policy, context_window=window, clock=clock, latency=latency) as sim:
        session, agent = build_agent(sim, provider, root, folder / "home", window, clock,
                                     **overrides)

        async def play() -> None:
            try:
                await _turn(agent, "review every file in src and the logs", run)
                # the user reads the answer: an update on its way lands meanwhile
                await agent.steps.memory.arrival(latency.side_s + ARRIVAL_SPARE_S)
                run.notes_held = _held(agent.steps.memory.usable(agent.conversation), run)
            finally:
                await agent.steps.memory.cancel()
                await session.provider.close()

        asyncio.run(play())
        requests = list(sim.requests)
    run.seconds = time.monotonic() - started
    run.notes_requests = sum(1 for r in requests if r.is_notes_request)
    run.notes_flights = [(r.received_at, r.answered_at) for r in requests if r.is_notes_request]
    ended = max((t for t, e in run.timeline if isinstance(e, ev.TurnFinished)), default=None)
    run.notes_in_flight_at_end = sum(
        1 for r in requests if r.is_notes_request and ended is not None
        and (r.answered_at is None or r.answered_at > ended))
    run.summary_requests = sum(1 for r in requests if r.is_summary_request)
    run.peak_prompt_tokens = max((r.prompt_tokens for r in requests), default=0)
    run.statuses = {r.status for r in requests}
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=float, default=20.0, help="seconds per side request")
    parser.add_argument("--main", type=float, default=1.0, help="seconds per main-loop request")
    parser.add_argument("--calls", type=int, default=150)
    parser.add_argument("--window", type=int, action="append", help="repeatable; 40K and 200K")
    parser.add_argument("--provider", action="append", choices=PROVIDERS)
    args = parser.parse_args()
    latency = Latency(args.side, args.main)
    for provider in args.provider or PROVIDERS:
        for window in args.window or WINDOWS:
            with tempfile.TemporaryDirectory(prefix="mini-claude-stall-") as folder:
                run = measure(provider, window, latency, args.calls, Path(folder))
            print(run.line(), flush=True)


if __name__ == "__main__":
    main()
