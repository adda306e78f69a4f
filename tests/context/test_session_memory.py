"""Session memory: when notes are updated, when they stand in for a summary, and what resumes.

The schedule and the stand-in are tested without HTTP; the whole path (background updates
over the real SDKs, compaction from the notes, the transcript, resume, thinking) against the
simulator for both providers.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from mini_claude import events as ev
from mini_claude.context.compact import Compactor, SummaryContext
from mini_claude.context.meter import TokenMeter
from mini_claude.context.notes import SessionNotes, anchor_of
from mini_claude.context.session_memory import SessionMemory
from mini_claude.context.store import DiskResultStore
from mini_claude.conversation import Conversation, Message, SummaryBlock
from mini_claude.prompts import NOTES_ADDITIONS, NOTES_IN_FULL
from mini_claude.protocol import ModelRequest, StreamEvent
from mini_claude.settings import Settings
from mini_claude.simulator import Fault, Reply, ScriptedPolicy, Simulator, ToolCall
from tests.support.agent import PROVIDERS, Run
from tests.support.compact import read, reply, user, words

# ---- the schedule, without HTTP ---------------------------------------------------------


@pytest.fixture
def memory_settings(tmp_path: Path) -> Settings:
    return Settings(home=tmp_path / "home", context_window=100_000, output_reserve=20_000)


def covered(memory: SessionMemory, conversation: Conversation) -> int | None:
    """How many messages the notes in hand describe, or None when none fit."""
    notes = memory.current(conversation)
    return notes.covered if notes else None


def grow(conversation: Conversation, meter: TokenMeter, tokens: int) -> None:
    """Finished exchanges until the history holds at least ``tokens`` estimated tokens."""
    n = 0
    while meter.estimate(conversation) < tokens:
        conversation.append(user(f"question {n}"))
        conversation.append(reply(words(400)))
        n += 1


def notes_now(memory: SessionMemory, conversation: Conversation) -> SessionNotes:
    tokens = memory.meter.estimate(conversation)
    covered = len(conversation)
    return SessionNotes("## Notes\n- all so far", anchor_of(conversation.messages, covered),
                        covered, tokens)


def test_no_update_before_the_history_reaches_the_start_share(memory_settings: Settings) -> None:
    meter = TokenMeter(memory_settings, fixed_chars=0)
    memory = SessionMemory(memory_settings, meter)
    conversation = Conversation()
    threshold = memory_settings.autocompact_tokens
    grow(conversation, meter, int(threshold * 0.4))
    assert not memory.due(conversation)
    grow(conversation, meter, int(threshold * memory_settings.session_memory_start_pct) + 10)
    assert memory.due(conversation)


def test_the_first_update_comes_early_enough_to_arrive_below_the_hard_limit(
    tmp_path: Path,
) -> None:
    """Near the threshold on a large window (far below the hard limit); on a small one, where
    the threshold is close to the hard limit, early enough for the history to grow by the
    lead share of the window while the update runs."""
    large = Settings(home=tmp_path, context_window=200_000)
    memory = SessionMemory(large, TokenMeter(large, fixed_chars=0))
    assert memory.first_update_tokens() == int(
        large.autocompact_tokens * large.session_memory_start_pct)
    small = Settings(home=tmp_path, context_window=32_000)
    memory = SessionMemory(small, TokenMeter(small, fixed_chars=0))
    hard_limit = small.effective_window * (1 - small.session_memory_defer_margin_pct)
    first = memory.first_update_tokens()
    assert first < small.autocompact_tokens * small.session_memory_start_pct
    assert first == pytest.approx(
        hard_limit - small.effective_window * small.session_memory_lead_pct, abs=1)


def test_notes_that_stand_in_are_not_replaced_before_the_compaction(
    memory_settings: Settings,
) -> None:
    """One update per history between compactions: however much the history grows after
    it, notes that would stand in are what the threshold takes, and an update sent now
    would be replaced or land unread. Only notes that could not stand in are renewed, and
    only by an update that lands before the threshold."""
    meter = TokenMeter(memory_settings, fixed_chars=0)
    memory = SessionMemory(memory_settings, meter)
    fit = [True]
    memory.stands_in = lambda conversation, notes: fit[0]
    conversation = Conversation()
    threshold = memory_settings.autocompact_tokens
    grow(conversation, meter, int(threshold * memory_settings.session_memory_start_pct) + 10)
    assert memory.due(conversation)
    memory.notes = notes_now(memory, conversation)
    grow(conversation, meter, int(threshold * 0.97))
    assert not memory.due(conversation)
    fit[0] = False
    assert memory.due(conversation)
    memory.growth_per_step, memory.flight_steps = threshold * 0.01, 4.0  # lands past it
    assert not memory.due(conversation)


def test_an_update_starts_its_measured_flight_before_the_threshold(
    memory_settings: Settings,
) -> None:
    """Measured: replies an update takes times the growth per reply (and a spare step or two
    where a late one would be unused); an update starts no earlier, so it covers as much as
    it can and still arrives in time."""
    meter = TokenMeter(memory_settings, fixed_chars=0)
    memory = SessionMemory(memory_settings, meter)
    threshold = memory_settings.autocompact_tokens
    memory.growth_per_step, memory.flight_steps = 1_000.0, 3.0
    lead = 1_000 * (3 + memory.spare_steps())
    conversation = Conversation()
    grow(conversation, meter, threshold - lead - 1_500)
    assert not memory.due(conversation)
    grow(conversation, meter, threshold - lead)
    assert memory.due(conversation)


def test_a_summary_is_held_back_while_the_next_steps_still_fit_the_window(
    tmp_path: Path,
) -> None:
    """At 32K with a 20% margin the threshold is above the window less the fixed margin:
    measured growth per reply sets the room instead, so a threshold that comes with notes on
    their way is passed while the next steps fit; without a measurement, or with steps larger
    than the margin, the fixed margin stays the limit."""
    small = Settings(home=tmp_path, context_window=32_000, session_memory_defer_margin_pct=0.20)
    memory = SessionMemory(small, TokenMeter(small, fixed_chars=0))
    fixed = small.effective_window * (1 - small.session_memory_defer_margin_pct)
    assert small.autocompact_tokens > fixed
    assert memory.deferral_limit() == fixed
    memory.growth_per_step = 800.0
    assert memory.deferral_limit() == small.effective_window - 2 * 800.0
    assert memory.deferral_limit() > small.autocompact_tokens
    assert memory.spare_steps() == 0  # a late update is still used: the summary waits for it
    memory.growth_per_step = small.effective_window / 2
    assert memory.deferral_limit() == fixed
    off = Settings(home=tmp_path, context_window=32_000, session_memory_defer_margin_pct=1.0)
    memory = SessionMemory(off, TokenMeter(off, fixed_chars=0))
    memory.growth_per_step = 800.0
    assert memory.deferral_limit() == 0  # nothing is held back


def test_on_small_windows_the_default_margin_holds_a_summary_back_from_the_first_step(
    tmp_path: Path,
) -> None:
    """At 32K and 40K the threshold (20.4K, 24K) is within a fifth of the effective window of
    the hard limit: the default margin still leaves room above it for requests sent while an
    update runs, before any growth is measured, so the update is not started early."""
    for window in (32_000, 40_000):
        small = Settings(home=tmp_path, context_window=window)
        memory = SessionMemory(small, TokenMeter(small, fixed_chars=0))
        assert small.autocompact_tokens >= small.effective_window * 0.8
        assert memory.deferral_limit() > small.autocompact_tokens
        assert memory.spare_steps() == 0


def test_no_update_while_off_or_while_a_thinking_tool_loop_is_open(
    memory_settings: Settings,
) -> None:
    from mini_claude.conversation import ThinkingBlock, ToolUseBlock

    meter = TokenMeter(memory_settings, fixed_chars=0)
    conversation = Conversation()
    grow(conversation, meter, memory_settings.autocompact_tokens)
    assert not SessionMemory(memory_settings.with_overrides(session_memory=False), meter).due(
        conversation)
    assert not SessionMemory(memory_settings.with_overrides(auto_compact=False), meter).due(
        conversation)
    conversation.append(user("go on"))
    conversation.append(Message("assistant", [
        ThinkingBlock("let me look", "sig"), ToolUseBlock("toolu_x", "read_file", {"path": "a"})]))
    assert not SessionMemory(memory_settings, meter).due(conversation)


def test_notes_follow_a_fold_and_their_anchor_after_a_summary(
    memory_settings: Settings,
) -> None:
    """A fold maps the messages it took out to the one holding their lines; a rebuilt
    history keeps notes whose anchor is still in it and voids the rest."""
    meter = TokenMeter(memory_settings, fixed_chars=0)
    memory = SessionMemory(memory_settings, meter)
    conversation = Conversation()
    grow(conversation, meter, 5_000)
    before = list(conversation.messages)
    memory.notes = SessionNotes("n", anchor_of(before, 6), 6, 100)
    after = [m for i, m in enumerate(before) if i not in (3, 4, 5)]  # 5, the anchor, folded
    conversation.replace_all(after)
    memory.note_fold(before, after, [3, 4, 5])
    assert covered(memory, conversation) == 3  # up to the message before the run
    conversation.replace_all(after[2:])  # a rebuild that kept the anchor's message
    assert covered(memory, conversation) == 1
    conversation.replace_all(after[3:])  # one that summarized it away
    assert memory.current(conversation) is None


def test_notes_on_their_way_are_rebased_on_the_history_they_land_in(
    memory_settings: Settings,
) -> None:
    """Rewritten history, an update still out: when it lands it describes the history up to
    its anchor wherever that message is now, not nothing."""
    meter = TokenMeter(memory_settings, fixed_chars=0)
    memory = SessionMemory(memory_settings, meter)
    conversation = Conversation()
    grow(conversation, meter, 5_000)
    notes = notes_now(memory, conversation)
    conversation.replace_all(list(conversation.messages)[4:])  # a summary kept the tail
    memory.note_compacted()
    memory.notes = notes  # it lands now
    assert memory.usable(conversation)
    assert covered(memory, conversation) == len(conversation)


# ---- standing in for a summary, without HTTP --------------------------------------------


class NoCalls:
    """A provider that fails the test if anything is sent: notes must need no call."""

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        raise AssertionError("a model call was made")
        yield  # pragma: no cover

    async def close(self) -> None:
        return None


def compactor_and_history(settings: Settings, tmp_path: Path) -> tuple[Compactor, Conversation]:
    meter = TokenMeter(settings, fixed_chars=0)
    compactor = Compactor(settings, meter, DiskResultStore(settings, "notes-unit"))
    conversation = Conversation()
    for turn in range(8):
        conversation.append(user(f"turn {turn}: read the logs"))
        for i in range(3):
            for message in read(f"logs/{turn}-{i}.log", words(600)):
                conversation.append(message)
        conversation.append(reply(f"Turn {turn} done."))
    return compactor, conversation


def test_notes_replace_what_they_cover_and_nothing_is_sent(
    memory_settings: Settings, tmp_path: Path
) -> None:
    settings = memory_settings.with_overrides(context_window=40_000, output_reserve=8_000)
    compactor, conversation = compactor_and_history(settings, tmp_path)
    covered = len(conversation) - 5  # the newest turn's last messages are not described
    before = list(conversation.messages)
    notes = SessionNotes("## Notes\n- FACT every log was read",
                         anchor_of(conversation.messages, covered), covered, 1)
    ctx = SummaryContext(NoCalls(), "sim-model", "system", [], tmp_path,  # type: ignore[arg-type]
                         str(tmp_path / "t.jsonl"))
    result = asyncio.run(compactor.compact(conversation, ctx, reason="auto", notes=[notes]))
    assert result.from_notes and result.summary == notes.text
    boundary = conversation.messages[0]
    assert any(isinstance(b, SummaryBlock) and "FACT every log was read" in b.summary
               for b in boundary.blocks)
    kept = result.messages_kept
    assert kept >= 1 and len(before) - kept <= covered  # nothing past the notes was dropped
    assert [m.text for m in conversation.messages[-kept:]] == [m.text for m in before[-kept:]]


def test_stale_notes_fall_back_to_a_summary_call(
    memory_settings: Settings, tmp_path: Path
) -> None:
    settings = memory_settings.with_overrides(context_window=40_000, output_reserve=8_000)
    compactor, conversation = compactor_and_history(settings, tmp_path)
    notes = SessionNotes("## Notes\n- nothing yet", (), 0, 1)  # covers no cut
    ctx = SummaryContext(NoCalls(), "sim-model", "system", [], tmp_path,  # type: ignore[arg-type]
                         str(tmp_path / "t.jsonl"))
    with pytest.raises(AssertionError, match="a model call was made"):
        asyncio.run(compactor.compact(conversation, ctx, reason="auto", notes=[notes]))


# ---- end to end over HTTP ---------------------------------------------------------------

LOG = "".join(f"2026-11-26 10:{i % 60:02d} worker processed batch {i} in {i % 97} ms\n"
              for i in range(120))


PARTS = 90  # enough for a turn that compacts, works on past the relief, and compacts again


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "logs").mkdir(parents=True)
    for i in range(PARTS):
        (root / "logs" / f"part-{i:02d}.log").write_text(f"FACT-{i} part {i}\n{LOG}")
    return root


def reading_policy(count: int, final: str = "All parts read.") -> ScriptedPolicy:
    steps: list[Reply] = [
        Reply(f"Reading part {i}.", [ToolCall("read_file", {"path": f"logs/part-{i:02d}.log"})])
        for i in range(count)
    ]
    return ScriptedPolicy([*steps, Reply(final)])


# A wider deferral margin than the default also moves an update's start earlier (no summary
# is held back for it at this window, so it keeps spare steps).
EARLY_NOTES: dict[str, Any] = {"session_memory_start_pct": 0.6,
                               "session_memory_defer_margin_pct": 0.20}


@pytest.fixture(params=PROVIDERS)
def run(request: pytest.FixtureRequest, simulator: Simulator, isolated_home: Path,
        project: Path) -> Iterator[Run]:
    # The simulator answers at once, so a background update would race the loop's own calls;
    # waiting for each update keeps every run's requests in one order.
    # Notes from early in a history on (the schedule of an earlier default), so that a short
    # turn has some to write, resume and compare.
    r = Run(simulator, request.param, isolated_home, project, context_window=24_000,
            output_reserve=4_000, session_memory_background=False, **EARLY_NOTES)
    yield r
    r.close()


def strip_cache_marks(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: strip_cache_marks(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [strip_cache_marks(v) for v in value]
    return value


def wire_messages(record: Any) -> list[Any]:
    return list(strip_cache_marks(record.body["messages"]))


def transcript_events(r: Run, kind: str) -> list[dict[str, Any]]:
    lines = r.agent.transcript.path.read_text().splitlines()
    records = [json.loads(line) for line in lines if line.strip()]
    return [rec for rec in records if rec.get("type") == "event" and rec.get("kind") == kind]


def notes_of_the_current_history(r: Run) -> str | None:
    """The newest notes written after the last compaction (older ones describe a history
    that is gone)."""
    text: str | None = None
    for line in r.agent.transcript.path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "compaction":
            text = None
        elif record.get("type") == "event" and record.get("kind") == "session_notes":
            text = record["text"]
    return text


def test_a_long_turn_compacts_from_notes_without_a_summary_call(run: Run) -> None:
    r = run
    r.sim.policy = reading_policy(36)
    r.start()
    events = r.turn("read every log part and tell me the facts")
    assert isinstance(events[-1], ev.TurnFinished)
    finished = [e for e in events if isinstance(e, ev.CompactionFinished)]
    from_notes = [e for e in finished if e.from_notes]
    assert from_notes, "no compaction used the session notes"
    assert any(isinstance(e, ev.NotesUpdated) for e in events)
    notes_requests = [q for q in r.sim.requests if q.is_notes_request]
    assert notes_requests and all(q.status == 200 for q in notes_requests)
    # Only the compactions the notes could not serve made a summary call.
    summaries = [q for q in r.sim.requests if q.is_summary_request]
    assert len(summaries) == len(finished) - len(from_notes)
    assert all(q.status == 200 for q in r.sim.requests)
    assert transcript_events(r, "session_notes")


def test_a_notes_request_repeats_the_last_call_as_its_prefix(run: Run) -> None:
    r = run
    r.sim.policy = reading_policy(36)
    r.start()
    r.turn("read every log part")
    requests = r.sim.requests
    for index, record in enumerate(requests):
        if not record.is_notes_request:
            continue
        # It runs beside the loop, so the loop's next call may arrive first: the one it
        # repeats is the newest earlier call that is a prefix of it.
        sent = wire_messages(record)
        earlier = [wire_messages(q) for q in requests[:index] if not q.is_side_request]
        repeated = [w for w in earlier if sent[: len(w)] == w]
        assert repeated and len(repeated[-1]) >= len(sent) - 3


def test_resume_takes_the_last_complete_notes_after_a_kill_during_an_update(
    run: Run, project: Path, isolated_home: Path
) -> None:
    r = run
    r.sim.policy = reading_policy(14, final="first batch read")
    r.start()
    r.turn("read the first log parts")
    assert transcript_events(r, "session_notes"), "the first turn wrote no notes"
    # A long answer, after which the notes in hand could not stand in, makes the next update
    # due at the turn's end; that update hangs, and the process is stopped while it runs.
    # Nobody waited for it: the turn itself finished.
    r.agent.steps.memory.stands_in = lambda conversation, notes: False
    r.sim.inject(Fault("hang", when=lambda conv: conv.is_notes_request))
    r.sim.policy = ScriptedPolicy([Reply(LOG)])
    assert isinstance(r.turn("summarize the logs at length")[-1], ev.TurnFinished)
    assert r.agent.steps.memory.updating

    def hung() -> list[Any]:
        return [q for q in r.sim.requests if q.is_notes_request and q.reply is None]

    async def until_sent() -> None:
        for _ in range(600):
            if hung():
                return
            await asyncio.sleep(0.05)

    r.run(until_sent())  # the update goes on while the user would be typing
    assert len(hung()) == 1 and r.agent.steps.memory.updating  # sent, and never answered
    written = transcript_events(r, "session_notes")
    last_complete = notes_of_the_current_history(r)
    assert last_complete is not None
    r.run(r.agent.steps.memory.cancel())
    assert transcript_events(r, "session_notes") == written
    session_id = r.session.session_id
    r.agent.transcript.close()
    resumed = Run(r.sim, r.settings.provider, isolated_home, project, context_window=24_000,
                  output_reserve=4_000, session_memory_background=False, **EARLY_NOTES)
    try:
        agent = resumed.session.resume(session_id)
        assert agent.steps.memory.notes is not None
        assert agent.steps.memory.notes.text == last_complete
    finally:
        resumed.close()


def test_a_stop_ends_the_wait_for_notes_and_leaves_the_update_running(run: Run) -> None:
    """Esc or Ctrl-C while a summary waits for notes on their way: the wait ends at once
    (before, the cancel was swallowed and the turn went on to a summary call)."""
    r = run
    r.sim.policy = reading_policy(14, final="first batch read")
    r.start()
    r.turn("read the first log parts")
    r.agent.steps.memory.stands_in = lambda conversation, notes: False  # renewed at the end
    r.sim.inject(Fault("hang", when=lambda conv: conv.is_notes_request))
    r.sim.policy = ScriptedPolicy([Reply(LOG)])
    r.turn("summarize the logs at length")
    memory = r.agent.steps.memory
    assert memory.updating

    async def stop_while_waiting() -> None:
        waiting = asyncio.ensure_future(memory.settle(600.0))
        await asyncio.sleep(0.3)
        assert not waiting.done()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(waiting, 5.0)

    r.run(stop_while_waiting())
    assert memory.updating  # shielded: the update is the session's, not the turn's
    r.run(memory.cancel())


def test_print_mode_starts_no_notes_after_its_last_reply(run: Run) -> None:
    """A reply that ends the turn makes an update due (the REPL keeps notes while the user
    reads); print mode ends there, so it sends none: it would be cancelled unread."""
    r = run
    r.sim.policy = reading_policy(14, final="first batch read")
    r.start()
    r.turn("read the first log parts")
    r.agent.steps.notes_at_turn_end = False
    r.agent.steps.memory.stands_in = lambda conversation, notes: False  # renewed at the end
    sent = sum(q.is_notes_request for q in r.sim.requests)
    r.sim.policy = ScriptedPolicy([Reply(LOG)])
    assert isinstance(r.turn("summarize the logs at length")[-1], ev.TurnFinished)
    assert r.agent.steps.memory.due(r.agent.conversation)  # the REPL would update now
    assert not r.agent.steps.memory.updating
    assert sum(q.is_notes_request for q in r.sim.requests) == sent


def test_updates_never_break_a_thinking_tool_loop(
    simulator: Simulator, isolated_home: Path, project: Path
) -> None:
    r = Run(simulator, "anthropic", isolated_home, project, context_window=24_000,
            output_reserve=4_000, model="sim-sonnet", thinking_tokens=2_048,
            session_memory_background=False, session_memory_start_pct=0.2)
    try:
        r.sim.policy = reading_policy(10, final="done with the first")
        r.start()
        r.turn("read some parts")
        r.sim.policy = reading_policy(10, final="done with the second")
        r.turn("read some more")
        notes = [q for q in r.sim.requests if q.is_notes_request]
        assert notes, "no notes update ran"
        for record in notes:
            assert record.conversation is not None
            messages = record.body["messages"]
            assert messages[-2]["role"] == "assistant", "an update came inside a tool loop"
            assert not any(b.get("type") == "tool_use" for b in messages[-2]["content"])
        assert all(q.status == 200 for q in r.sim.requests)
    finally:
        r.close()


def test_manual_compact_makes_a_fresh_summary_even_with_notes(run: Run) -> None:
    r = run
    r.sim.policy = reading_policy(14, final="read")
    r.start()
    r.turn("read the parts")
    assert r.agent.steps.memory.notes is not None
    before = len([q for q in r.sim.requests if q.is_summary_request])
    events = r.compact()
    finished = [e for e in events if isinstance(e, ev.CompactionFinished)]
    assert finished and not finished[0].from_notes
    assert len([q for q in r.sim.requests if q.is_summary_request]) == before + 1


def test_the_repl_keeps_notes_in_the_background_and_summary_shows_them(
    simulator: Simulator, isolated_home: Path, project: Path
) -> None:
    """The REPL's own path: the update runs while the user is at the prompt, nobody waits."""
    from tests.support.repl import running_repl, sim_settings, until

    simulator.policy = reading_policy(3, final="all read")  # notes early, no summary yet
    settings = sim_settings(simulator, isolated_home, context_window=24_000,
                            output_reserve=4_000, session_memory_start_pct=0.2)
    assert settings.session_memory_background

    async def scenario() -> None:
        async with running_repl(settings, project) as repl:
            await repl.submit("read the log parts")
            try:
                await until(lambda: "all read" in repl.text, "the reply", timeout=120)
            except AssertionError:
                raise AssertionError(repl.text[-3000:]) from None
            agent = repl.session.agent
            await until(lambda: agent.steps.memory.current(agent.conversation) is not None,
                        "notes of this history", timeout=60)
            mark = await repl.submit("/summary")
            await repl.wait_for("session notes (kept in the background", after=mark)
            assert await repl.exit() == 0

    asyncio.run(scenario())
    assert any(q.is_notes_request and q.status == 200 for q in simulator.requests)


def test_notes_still_on_their_way_give_way_to_earlier_ones(memory_settings: Settings) -> None:
    """With a simulated clock an update's reply arrives when a real one would: until then the
    earlier notes of the same history are the ones that stand in."""
    now = [100.0]
    meter = TokenMeter(memory_settings, fixed_chars=0)
    memory = SessionMemory(memory_settings, meter, clock=lambda: now[0])
    conversation = Conversation()
    grow(conversation, meter, 5_000)
    messages = conversation.messages
    older = SessionNotes("older", anchor_of(messages, 4), 4, 100, started_at=10.0, ready_at=40.0)
    newer = SessionNotes("newer", anchor_of(messages, 8), 8, 200, started_at=90.0, ready_at=130.0)
    memory.notes = older
    memory.notes = newer
    assert memory.current(conversation) is newer  # the schedule counts from the newest
    assert memory.usable(conversation) == [older]
    now[0] = 131.0
    assert memory.usable(conversation) == [newer, older]


def test_a_threshold_that_comes_before_the_notes_is_passed_until_they_arrive(
    isolated_home: Path, project: Path,
) -> None:
    """On a simulated clock an update's reply takes a while; a summary due meanwhile is held
    back (the request still fits well below the window) and the notes replace the history
    once they are in: no summary call, nobody waits."""
    from mini_claude.simulator import SimClock
    from tests.support.long_session import build_agent

    clock = SimClock(start=1_000.0)
    with Simulator(reading_policy(36), clock=clock) as sim:
        # The first update just short of the threshold, and none after it; 60K effective, the
        # hard limit at 58.8K, each call of the loop about 3K more.
        session, agent = build_agent(sim, "anthropic", project, isolated_home, 64_000, clock,
                                     output_reserve=4_000, session_memory_background=False,
                                     session_memory_start_pct=0.95,
                                     session_memory_defer_margin_pct=0.02,
                                     session_memory_lead_pct=0.0)
        agent.steps.memory.arrival_delay = lambda usage: 9.0  # about two calls of the loop

        async def play() -> list[ev.Event]:
            events = []
            async for event in agent.turn("read every log part and tell me the facts"):
                events.append(event)
                if isinstance(event, ev.AssistantMessage):
                    clock.advance(4.0)
                elif isinstance(event, ev.ToolFinished):
                    clock.advance(1.0)
            return events

        loop = asyncio.new_event_loop()
        try:
            events = loop.run_until_complete(play())
            loop.run_until_complete(session.provider.close())
        finally:
            agent.transcript.close()
            loop.close()
    assert isinstance(events[-1], ev.TurnFinished)
    finished = [e for e in events if isinstance(e, ev.CompactionFinished)]
    assert finished and all(e.from_notes and e.waited_seconds == 0 for e in finished)
    assert not any(q.is_summary_request for q in sim.requests)
    assert all(q.status == 200 for q in sim.requests)
    settings = agent.settings
    calls = [q for q in sim.requests if not q.is_side_request]
    # Requests went out past the threshold while the notes were on their way, never past the
    # hard limit.
    assert any(q.prompt_tokens > settings.autocompact_tokens for q in calls)
    assert max(q.prompt_tokens for q in calls) <= settings.effective_window


# ---- notes written as additions (context/notes_merge.py) ------------------------------


def newest_part(notes: str) -> int:
    return max(int(n) for n in re.findall(r"part-(\d\d)\.log", notes))


def session_notes(r: Run) -> list[str]:
    return [record["text"] for record in transcript_events(r, "session_notes")]


def test_after_a_compaction_an_update_writes_only_what_is_new_and_the_notes_keep_the_rest(
    run: Run,
) -> None:
    r = run
    r.sim.policy = reading_policy(PARTS - 5)
    r.start()
    events = r.turn("read every log part and tell me the facts")
    assert isinstance(events[-1], ev.TurnFinished)
    compactions = [e for e in events if isinstance(e, ev.CompactionFinished)]
    assert len(compactions) >= 2, "the turn must compact more than once"
    notes_requests = [q for q in r.sim.requests if q.is_notes_request]
    first, later = notes_requests[0], notes_requests[1:]
    assert NOTES_IN_FULL in json.dumps(first.body) and NOTES_ADDITIONS not in json.dumps(first.body)
    additions = [q for q in later if NOTES_ADDITIONS in json.dumps(q.body)]
    assert additions, "no update after a compaction asked only for what is new"
    for q in additions:
        assert q.reply is not None and "part-00.log" not in q.reply.text  # the summary has it
    # The merged notes hold what the first summary said and what came after it.
    written = session_notes(r)
    merged = written[-1]
    assert "logs/part-00.log" in merged
    assert newest_part(merged) > newest_part(written[0])
    # A compaction from merged notes carries them whole.
    later_from_notes = [c for c in compactions[1:] if c.from_notes]
    assert later_from_notes and "logs/part-00.log" in later_from_notes[-1].summary
