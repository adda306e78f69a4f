"""Runs one strategy through the scripted session against the simulator and records everything.

The numbers come from the simulator's side of the wire (what was really
sent, how the cache answered), joined with the agent's events (its own
estimate, the tiers that fired, the compactions).
"""

from __future__ import annotations

import shutil
import time
from bisect import bisect_right
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from mini_claude import events as ev
from mini_claude.agent.keep_warm import PING_MAX_TOKENS
from mini_claude.agent.loop import Agent
from mini_claude.bench.peer_prompts import PromptedProvider
from mini_claude.bench.strategies import Strategy
from mini_claude.bench.timing import usage_seconds
from mini_claude.models import SONNET, Price
from mini_claude.permissions.asking import allow_all
from mini_claude.protocol import Usage
from mini_claude.providers import create_provider
from mini_claude.scenario.policy import HISTORY_TOOL, ScriptPolicy
from mini_claude.scenario.script import Script
from mini_claude.scenario.workload import Fact
from mini_claude.session.wiring import Session
from mini_claude.settings import Settings
from mini_claude.simulator import RecordedRequest, SimClock, Simulator
from mini_claude.simulator.latency import NO_LATENCY, Latency
from mini_claude.simulator.summary import REALISTIC, SummaryStyle
from mini_claude.tools.registry import ToolRegistry, default_registry

MODEL = "sim-sonnet"
# Sonnet's prices, with its long-context rates for a prompt over 200K tokens (the 1M window):
# every token of such a request at $6 input and $22.50 output a million, caches alike.
BENCH_PRICE = Price(SONNET.input, SONNET.cache_write, SONNET.cache_read, SONNET.output,
                    200_000, Price(6.00, 7.50, 0.60, 22.50))
MODEL_SECONDS = 4.0  # simulated time a model reply takes
TOOL_SECONDS = 1.0  # simulated time a tool call takes
CLOCK_START = 1_000_000.0
# Every run names its session alike, so two runs send the same bytes (the id is in saved paths).
SESSION_ID = "20261125-090000-bench0"
PROMPT_TOO_LONG = "prompt is too long"


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the simulator saw it, joined with what the agent knew before sending it."""

    index: int
    turn: int
    prompt_tokens: int
    status: int
    is_summary: bool
    input_tokens: int  # the uncached part
    cache_read_tokens: int
    cache_write_tokens: int
    output_tokens: int
    estimate: int | None  # the agent's estimate just before the call
    tiers: tuple[str, ...]  # tiers (and compaction) that fired since the previous call
    error: str | None = None  # the server's message when it refused the call
    is_notes: bool = False  # a background session-notes update (paid like a summary)
    is_ping: bool = False  # a keep-alive read of the cache while the user was away

    @property
    def answered(self) -> bool:
        return self.status == 200

    @property
    def overflowed(self) -> bool:
        return not self.answered and (self.error or "").startswith(PROMPT_TOO_LONG)

    @property
    def cost(self) -> float:
        if not self.answered:
            return 0.0
        usage = Usage(self.input_tokens, self.cache_read_tokens, self.cache_write_tokens,
                      self.output_tokens)
        return BENCH_PRICE.cost(usage)


@dataclass(frozen=True, slots=True)
class CallMark:
    """What the agent knew when it announced a model call: where, its estimate, recent edits."""

    request_index: int
    estimate: int
    tiers: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CompactionMark:
    request_index: int  # the summary request, or the next request when none was recorded
    reason: str
    tokens_before: int
    tokens_after: int
    from_notes: bool = False  # session notes stood in for the summary
    notes_age_seconds: float | None = None  # simulated time since those notes were asked for
    waited_seconds: float = 0.0  # simulated time it waited for notes still on their way


@dataclass(frozen=True, slots=True)
class NeedCheck:
    turn: int
    fact_id: str
    retained: bool  # in context when the turn's first call was answered
    request_index: int | None  # the request the check was made on
    last_seen: int | None = None  # for a missing fact: the last request that still carried it
    lost_after: tuple[str, ...] = ()  # for a missing fact: what edited history right after that
    recovered: bool = False  # missing, then read back through a pointer later in the turn

    @property
    def lost(self) -> bool:
        return not self.retained and not self.recovered


@dataclass(frozen=True, slots=True)
class RecoveryCost:
    """What reading facts back cost: the calls made, the requests they added, their price."""

    calls: int = 0
    requests: int = 0
    cost: float = 0.0


@dataclass
class RunResult:
    strategy: str
    title: str
    ours: bool
    window: int
    effective_window: int
    ablation: bool = False
    requests: list[RequestRecord] = field(default_factory=list)
    compactions: list[CompactionMark] = field(default_factory=list)
    needs: list[NeedCheck] = field(default_factory=list)
    turn_errors: list[tuple[int, str, str]] = field(default_factory=list)
    compaction_failures: list[tuple[int, str, str]] = field(default_factory=list)
    pipeline_seconds: list[float] = field(default_factory=list)
    tokens_freed: dict[str, int] = field(default_factory=dict)
    tier_events: dict[str, int] = field(default_factory=dict)
    pages_read: int = 0
    recovery: RecoveryCost = field(default_factory=RecoveryCost)
    marks: list[CallMark] = field(default_factory=list, repr=False)
    compaction_attempts: int = 0
    tool_calls: int = 0
    wall_seconds: float = 0.0
    calls_during_notes: int = 0  # the loop's own requests sent while a notes update ran


@dataclass
class _Recorder:
    """Collects what the agent says while a turn runs."""

    sim: Simulator
    clock: SimClock
    result: RunResult
    pending_tiers: list[str] = field(default_factory=list)
    compaction_started_at: int = 0

    def on(self, event: ev.Event, turn: int) -> None:
        if isinstance(event, ev.TierFired):
            tier = event.report.tier
            self.pending_tiers.append(tier)
            self.result.tier_events[tier] = self.result.tier_events.get(tier, 0) + 1
        elif isinstance(event, ev.ModelCallStarted):
            self.result.marks.append(CallMark(len(self.sim.requests), event.status.tokens,
                                              tuple(dict.fromkeys(self.pending_tiers))))
            self.pending_tiers.clear()
        elif isinstance(event, ev.CompactionStarted):
            self.result.compaction_attempts += 1
            self.compaction_started_at = len(self.sim.requests)
            self.pending_tiers.append("compact")
        elif isinstance(event, ev.CompactionFinished):
            self.result.compactions.append(CompactionMark(
                self.compaction_started_at, event.reason, event.tokens_before, event.tokens_after,
                event.from_notes, event.notes_age_seconds, event.waited_seconds))
        elif isinstance(event, ev.AssistantMessage):
            self.clock.advance(MODEL_SECONDS)
        elif isinstance(event, ev.ToolFinished):
            self.result.tool_calls += 1
            self.clock.advance(TOOL_SECONDS)
        elif isinstance(event, ev.CompactionFailed):
            self.result.compaction_failures.append((turn, event.reason, event.error))
        elif isinstance(event, ev.TurnError):
            self.result.turn_errors.append((turn, event.kind, event.message))


def registry_for(strategy: Strategy) -> ToolRegistry:
    """Our tools; the peer rows go without search_history, which their products lack."""
    tools = default_registry()
    if strategy.ours or strategy.ablation:
        return tools
    return ToolRegistry([t for n in tools.names() if n != HISTORY_TOOL and (t := tools.get(n))])


def bench_settings(strategy: Strategy, *, window: int, base_url: str, home: Path,
                   background_notes: bool = False) -> Settings:
    """The strategy's settings against the simulator; ``background_notes`` runs notes updates
    as the product does, beside the loop, instead of waiting for each."""
    base = Settings(
        provider="anthropic",
        model=MODEL,
        api_keys={"anthropic": "bench"},
        base_urls={"anthropic": base_url},
        context_window=window,
        home=home,
        # Unless asked otherwise, notes updates are waited for, so every run sends its
        # requests in one order; their time is counted as background time (bench/timing.py).
        session_memory_background=background_notes,
    )
    return strategy.configure(base)


async def run_strategy(
    strategy: Strategy, script: Script, *, window: int, template: Path, workdir: Path,
    summary_style: SummaryStyle = REALISTIC, latency: Latency | None = None,
) -> RunResult:
    """One row of the table: a fresh copy of the project, a fresh simulator, the whole script.

    With ``latency`` the server answers that late in real time and the agent runs as the
    product runs, notes updates beside the loop: they arrive when the wire says, while the
    loop goes on (the simulated clock still measures cache life and idle gaps)."""
    started = time.perf_counter()
    project = workdir / "project"
    if workdir.exists():
        shutil.rmtree(workdir)
    shutil.copytree(template, project)
    clock = SimClock(start=CLOCK_START)
    policy = ScriptPolicy(script, seed=len(script.turns))
    with Simulator(policy, context_window=window, clock=clock, summary_style=summary_style,
                   latency=latency or NO_LATENCY) as sim:
        settings = bench_settings(strategy, window=window, base_url=sim.anthropic_base_url,
                                  home=workdir / "home", background_notes=latency is not None)
        result = RunResult(strategy.key, strategy.title, strategy.ours, window,
                           settings.effective_window, strategy.ablation)
        provider = create_provider(settings)
        if strategy.summary_prompt is not None:
            provider = PromptedProvider(provider, strategy.summary_prompt)
        try:
            session = Session.open(settings, project, allow_all, provider=provider,
                                   clock=clock.now, wall_clock=clock.now,
                                   registry=registry_for(strategy))
            try:
                agent = session.start_new(SESSION_ID)
                if latency is None:
                    agent.steps.notes_arrive_after(usage_seconds)  # as a real reply would
                turn_starts = await _play(agent, policy, script, _Recorder(sim, clock, result),
                                          notes_in_gaps=latency is not None)
            finally:
                await session.aclose()  # as every front end ends a session
            records = list(sim.requests)
        finally:
            await provider.close()  # also when the session could not open
    result.requests = _join(records, result.marks, turn_starts)
    result.calls_during_notes = calls_during_notes(records)
    checks = _check_needs(script, records, turn_starts)
    checks = _check_recoveries(checks, policy, script, records, turn_starts)
    result.needs = explain_losses(checks, records, result.requests, script)
    result.recovery = recovery_cost(policy, records, result.requests)
    result.pipeline_seconds = list(agent.steps.pipeline_seconds)
    result.tokens_freed = dict(agent.stats()["tokens_freed"])
    result.pages_read = policy.pages_read
    result.wall_seconds = time.perf_counter() - started
    return result


async def _play(agent: Agent, policy: ScriptPolicy, script: Script,
                recorder: _Recorder, notes_in_gaps: bool = False) -> list[int]:
    """Sends every user turn after its idle gap; returns the request index each turn began at.

    An idle gap is simulated time, never slept; with ``notes_in_gaps`` (notes updates in the
    background, answered in real time) a notes update on its way when the user pauses lands
    in the pause, as it would: waited for, in real time, for at most the gap's length."""
    turn_starts: list[int] = []
    for index, turn in enumerate(script.turns):
        if notes_in_gaps and turn.idle_before > 0:
            await agent.steps.memory.arrival(timeout=turn.idle_before)
        back_at = recorder.clock.now() + turn.idle_before
        await agent.keep_cache_warm(recorder.clock.wait_until, end=back_at)
        recorder.clock.advance(max(0.0, back_at - recorder.clock.now()))
        policy.begin_turn(index)
        turn_starts.append(len(recorder.sim.requests))
        async for event in agent.turn(turn.user):
            recorder.on(event, index)
    return turn_starts


def calls_during_notes(records: list[RecordedRequest]) -> int:
    """The loop's own requests that reached the server while a notes update was on its way
    (after it arrived, before its answer began): none when the loop waits for each update."""
    flights = [(r.received_at, r.answered_at if r.answered_at is not None else float("inf"))
               for r in records if r.is_notes_request]
    return sum(1 for r in records if not r.is_side_request
               and any(start < r.received_at < end for start, end in flights))


def _turn_of(index: int, turn_starts: list[int]) -> int:
    return max(0, bisect_right(turn_starts, index) - 1)


def _join(records: list[RecordedRequest], marks: list[CallMark],
          turn_starts: list[int]) -> list[RequestRecord]:
    by_index = _marks_by_request(records, marks)
    joined = []
    for index, record in enumerate(records):
        mark = by_index.get(index)
        usage = record.usage or {}
        joined.append(RequestRecord(
            index=index,
            turn=_turn_of(index, turn_starts),
            prompt_tokens=record.prompt_tokens,
            status=record.status,
            is_summary=record.is_summary_request,
            is_notes=record.is_notes_request,
            is_ping=is_ping(record),
            input_tokens=int(usage.get("input_tokens") or 0),
            cache_read_tokens=record.cache_read_tokens,
            cache_write_tokens=record.cache_write_tokens,
            output_tokens=int(usage.get("output_tokens") or 0),
            estimate=mark.estimate if mark is not None else None,
            tiers=mark.tiers if mark is not None else (),
            error=record.error if record.status != 200 else None,
        ))
    return joined


def is_ping(record: RecordedRequest) -> bool:
    """A keep-alive ping: the one request that asks for a single output token."""
    body = record.body
    return isinstance(body, dict) and body.get("max_tokens") == PING_MAX_TOKENS


def _marks_by_request(records: list[RecordedRequest],
                      marks: list[CallMark]) -> dict[int, CallMark]:
    """Each call's mark on the request it announced: the first of the loop's own requests
    from where the server's count stood (a notes update running beside the loop may arrive
    in between); of two marks on one request, the later."""
    found: dict[int, CallMark] = {}
    for mark in marks:
        index = mark.request_index
        while index < len(records) and records[index].is_side_request:
            index += 1
        if index < len(records):
            found[index] = mark
    return found


def body_strings(value: Any) -> Iterator[str]:
    """Every string in a request body: system, messages, tool results, summaries."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from body_strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from body_strings(item)


def _first_answered(records: list[RecordedRequest], start: int, end: int) -> int | None:
    for index in range(start, end):
        record = records[index]
        if record.status == 200 and not record.is_side_request:
            return index
    return None


def _check_needs(script: Script, records: list[RecordedRequest],
                 turn_starts: list[int]) -> list[NeedCheck]:
    """Was each needed fact in the first request the model answered in the turn that needs it?"""
    checks: list[NeedCheck] = []
    ends = [*turn_starts[1:], len(records)]
    for turn_index, turn in enumerate(script.turns):
        if not turn.needs:
            continue
        found = _first_answered(records, turn_starts[turn_index], ends[turn_index])
        text = "\n".join(body_strings(records[found].body)) if found is not None else ""
        for fact_id in turn.needs:
            checks.append(NeedCheck(turn_index, fact_id, script.facts[fact_id].seen_in(text),
                                    found))
    return checks


def _check_recoveries(checks: list[NeedCheck], policy: ScriptPolicy, script: Script,
                      records: list[RecordedRequest], turn_starts: list[int]) -> list[NeedCheck]:
    """A missing fact the model went to read back counts as recovered once a later call of the
    same turn carries it."""
    attempted = {(r.turn, f) for r in policy.recoveries for f in r.fact_ids}
    ends = [*turn_starts[1:], len(records)]
    out = []
    for check in checks:
        if check.retained or (check.turn, check.fact_id) not in attempted:
            out.append(check)
            continue
        fact = script.facts[check.fact_id]
        later = range((check.request_index or turn_starts[check.turn]) + 1, ends[check.turn])
        found = any(records[i].status == 200 and not records[i].is_side_request
                    and fact.seen_in("\n".join(body_strings(records[i].body))) for i in later)
        out.append(replace(check, recovered=found))
    return out


def recovery_cost(policy: ScriptPolicy, records: list[RecordedRequest],
                  joined: list[RequestRecord]) -> RecoveryCost:
    """The requests that only carried recovery results back are the extra ones; so is their $."""
    extra = []
    for index, record in enumerate(records):
        conv = record.conversation
        if conv is None or record.is_side_request:
            continue
        ids = {r.tool_use_id for r in conv.last_tool_results()}
        if ids and ids <= policy.recovery_ids:
            extra.append(index)
    return RecoveryCost(calls=len(policy.recovery_ids), requests=len(extra),
                        cost=sum(joined[i].cost for i in extra))


def _facts_carried(body: Any, facts: Mapping[str, Fact]) -> frozenset[str]:
    """Ids of the facts (id with value) that appear somewhere in a request body."""
    found: set[str] = set()
    for text in body_strings(body):
        if "FACT-" not in text:
            continue
        found.update(fact_id for fact_id, fact in facts.items() if fact.seen_in(text))
    return frozenset(found)


def explain_losses(checks: list[NeedCheck], records: list[RecordedRequest],
                   joined: list[RequestRecord], script: Script) -> list[NeedCheck]:
    """For each fact that was missing when needed: when it left, and what edit removed it.

    Walks the answered model calls (not summary calls, whose bodies hold the
    whole history by design) and finds the last one that carried the fact;
    the edits recorded on the next call are what took it out.
    """
    if all(check.retained for check in checks):
        return checks
    calls = [i for i, r in enumerate(records) if r.status == 200 and not r.is_side_request]
    carried = {i: _facts_carried(records[i].body, script.facts) for i in calls}
    explained = []
    for check in checks:
        if check.retained or check.request_index is None:
            explained.append(check)
            continue
        before = [i for i in calls if i < check.request_index]
        seen = [i for i in before if check.fact_id in carried[i]]
        if not seen:
            explained.append(check)
            continue
        after = [i for i in before if i > seen[-1]] + [check.request_index]
        explained.append(replace(check, last_seen=seen[-1], lost_after=joined[after[0]].tiers))
    return explained
