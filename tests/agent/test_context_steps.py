"""Each context decision on its own, without HTTP: which tier, when to fold, when to
summarize, when a summary would come too soon, and what follows "prompt too long"."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path

import pytest

from mini_claude import events as ev
from mini_claude.agent.context_steps import ContextSteps
from mini_claude.agent.history import History
from mini_claude.agent.hooks import HookRunner
from mini_claude.context.compact import SummaryContext
from mini_claude.context.notes import SessionNotes, anchor_of
from mini_claude.context.store import DiskResultStore
from mini_claude.conversation import (
    Conversation,
    Message,
    ResultState,
    SummaryBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)
from mini_claude.prompts import NOTES_LINE
from mini_claude.protocol import ModelRequest, ResponseComplete, StreamEvent, Usage
from mini_claude.tools.base import ToolContext
from mini_claude.transcript import Transcript
from tests.support.compact import call, exchange, settings_for, user, words

SUMMARY = "<summary>Read the package; the FACT-7 is in m7.py.</summary>"


class CannedSummaries:
    """A provider that answers every summary request with the same summary."""

    name = "canned"

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        yield ResponseComplete(Message("assistant", [TextBlock(SUMMARY)]), "end_turn", None)

    async def close(self) -> None:
        return None


class Steps:
    """One ContextSteps over a real history and transcript, a clock the test moves."""

    def __init__(self, tmp_path: Path, **changes: object) -> None:
        self.settings = settings_for(tmp_path / "home", window=40_000, **changes)
        self.now = 1_000.0
        self.provider = CannedSummaries()
        store = DiskResultStore(self.settings, "s1")
        self.tool_context = ToolContext(root=tmp_path, settings=self.settings)
        self.steps = ContextSteps(
            store=store, tool_context=self.tool_context, clock=lambda: self.now,
            hooks=lambda: HookRunner([], cwd=tmp_path, env=None),
            summary_context=self._summary_context,
        )
        transcript = Transcript.create(tmp_path / "transcripts", "s1", {})
        self.history = History(transcript, Conversation(), store, self.settings)
        self.steps.attach(self.history, self.settings, fixed_chars=0)
        self.root = tmp_path

    def _summary_context(self) -> SummaryContext:
        return SummaryContext(self.provider, "sim-model", "system", [], self.root, "t.jsonl")

    def add(self, *messages: Message) -> None:
        for message in messages:
            self.history.append(message)

    def work(self, calls: int, tokens_each: int, *, rereads: bool = False) -> None:
        """``calls`` read_file exchanges of about ``tokens_each`` tokens each (of one file
        read again and again with ``rereads``)."""
        self.add(user("review the package"))
        for i in range(calls):
            path = "src/big.py" if rereads else f"src/m{i}.py"
            self.add(*exchange(call("read_file", path=path), output=words(tokens_each)))

    def anchor(self) -> None:
        """The server reported the prompt size: the meter now knows it."""
        tokens = self.steps.meter.estimate(self.history.conversation)
        usage = Usage(input_tokens=tokens, output_tokens=10)
        self.steps.observe_reply(
            ResponseComplete(Message("assistant", [TextBlock("ok")]), "end_turn", usage)
        )


def collect(events: AsyncIterator[ev.Event]) -> list[ev.Event]:
    async def drain() -> list[ev.Event]:
        return [event async for event in events]

    return asyncio.run(drain())


@pytest.fixture
def steps(tmp_path: Path) -> Steps:
    # The summaries' own decisions; with session notes an idle summary waits for notes.
    return Steps(tmp_path, session_memory=False)


# ---- which tier -------------------------------------------------------------------------


def test_stale_reads_in_a_filling_window_are_snipped_before_the_call_and_counted(
    steps: Steps,
) -> None:
    steps.work(calls=12, tokens_each=1_600, rereads=True)  # over 60% of the window: snip's
    steps.anchor()
    before = steps.steps.meter.estimate(steps.history.conversation)
    events = collect(steps.steps.before_call())
    fired = [e.report for e in events if isinstance(e, ev.TierFired)]
    assert [r.tier for r in fired] == ["snip"]
    assert 0 < fired[0].results_touched < 12  # stale reads cleared, the newest kept
    freed = sum(r.tokens_freed for r in fired)
    assert freed > 0
    assert steps.steps.meter.estimate(steps.history.conversation) < before
    assert sum(steps.steps.tokens_freed.values()) == freed
    assert not any(isinstance(e, ev.CompactionStarted) for e in events)  # no summary needed


def test_a_small_history_gets_no_tier_and_no_summary(steps: Steps) -> None:
    steps.work(calls=3, tokens_each=200, rereads=True)
    steps.anchor()
    assert collect(steps.steps.before_call()) == []
    assert steps.steps.tokens_freed == {}


def test_nothing_changes_while_a_thinking_loop_is_open(steps: Steps) -> None:
    steps.work(calls=12, tokens_each=1_600)
    use = ToolUseBlock("toolu_open", "read_file", {"path": "src/x.py"})
    steps.add(Message("assistant", [ThinkingBlock("thinking", "sig"), use]))
    steps.add(*exchange(use, output="ok")[1:])
    steps.anchor()
    messages = list(steps.history.conversation.messages)
    assert steps.steps.run_tiers(loop_open=True) == []
    assert steps.steps.make_room(loop_open=True) == []
    assert steps.history.conversation.messages == messages


# ---- when to summarize ------------------------------------------------------------------


def test_turn_start_summarizes_a_nearly_full_window(steps: Steps) -> None:
    steps.work(calls=16, tokens_each=1_700)  # ~27K: above the 25.5K threshold
    steps.anchor()
    assert steps.steps.turn_start_summary() == "auto"
    events = collect(steps.steps.at_turn_start())
    assert [type(e) for e in events][:2] == [ev.CompactionStarted, ev.CompactionFinished]
    assert steps.steps.compactions == 1
    assert len(steps.provider.requests) == 1
    first = steps.history.conversation.messages[0].blocks[0]
    assert isinstance(first, SummaryBlock) and "FACT-7" in first.summary


def test_turn_start_summarizes_a_big_history_once_the_cache_went_cold(steps: Steps) -> None:
    steps.work(calls=8, tokens_each=1_500)  # ~12K: below auto, above the idle floor (7.5K)
    steps.anchor()
    steps.steps.call_ended()
    assert steps.steps.turn_start_summary() is None  # the cache is still warm
    steps.now += steps.settings.microcompact_idle_seconds + 1
    assert steps.steps.turn_start_summary() == "idle"


def test_turn_start_leaves_a_small_cold_history_to_the_cheap_tiers(steps: Steps) -> None:
    steps.work(calls=2, tokens_each=500)
    steps.anchor()
    steps.steps.call_ended()
    steps.now += steps.settings.microcompact_idle_seconds + 1
    assert steps.steps.turn_start_summary() is None
    assert collect(steps.steps.at_turn_start()) == []


def test_one_turn_that_outgrows_the_window_is_summarized_before_the_next_call(
    steps: Steps,
) -> None:
    steps.work(calls=16, tokens_each=1_700)
    steps.anchor()
    assert steps.steps.needs_mid_turn_room()
    events = collect(steps.steps.before_call())
    finished = [e for e in events if isinstance(e, ev.CompactionFinished)]
    assert [e.reason for e in finished] == ["mid-turn"]
    assert not steps.steps.needs_mid_turn_room()


def test_without_auto_compact_no_summary_comes_mid_turn(tmp_path: Path) -> None:
    steps = Steps(tmp_path, auto_compact=False)
    steps.work(calls=16, tokens_each=1_700)
    steps.anchor()
    assert not steps.steps.needs_mid_turn_room()
    events = collect(steps.steps.before_call())
    assert not any(isinstance(e, ev.CompactionStarted) for e in events)


# ---- when a summary would come too soon ---------------------------------------------------


def test_a_summary_right_after_a_summary_comes_too_soon(steps: Steps) -> None:
    steps.work(calls=16, tokens_each=1_700)
    steps.anchor()
    assert not steps.steps.summary_would_come_too_soon()  # no summary yet this history
    collect(steps.steps.summarize("manual"))
    assert steps.steps.summary_would_come_too_soon()  # no work since
    for i in range(steps.settings.summary_min_work):
        steps.add(*exchange(call("read_file", path=f"src/new{i}.py"), output="short"))
    assert not steps.steps.summary_would_come_too_soon()  # enough new work to summarize


def _summarized_then_refilled(steps: Steps, tokens: int) -> None:
    """A summary, then reads of new files until the history holds about ``tokens``."""
    steps.work(calls=16, tokens_each=1_700)
    steps.anchor()
    collect(steps.steps.summarize("manual"))
    index = 0
    while steps.steps.meter.estimate(steps.history.conversation) < tokens:
        steps.add(*exchange(call("read_file", path=f"src/new{index}.py"), output=words(1_500)))
        index += 1
    steps.anchor()


def _page_room(steps: Steps) -> float:
    settings = steps.settings
    return settings.effective_window * (1 - settings.read_page_window_share)


def test_soon_after_a_summary_old_results_go_once_a_read_page_no_longer_fits(
    steps: Steps,
) -> None:
    _summarized_then_refilled(steps, round(_page_room(steps)) + 500)
    tokens = steps.steps.meter.estimate(steps.history.conversation)
    assert tokens < steps.settings.autocompact_tokens  # below the threshold: no summary due
    assert steps.steps.summary_would_come_too_soon() and not steps.steps.room_for_a_page()
    events = collect(steps.steps.before_call())
    fired = [e.report for e in events if isinstance(e, ev.TierFired)]
    assert "microcompact" in [r.tier for r in fired]
    assert not any(isinstance(e, ev.CompactionStarted) for e in events)
    assert steps.steps.room_for_a_page()  # a whole page fits again
    results = steps.history.conversation.results
    newest = steps.history.conversation.result_at(results[-1])
    assert newest.state != ResultState.CLEARED  # the model's newest read keeps its text


def test_with_room_for_a_page_or_the_rule_off_nothing_is_cleared_below_the_threshold(
    tmp_path: Path,
) -> None:
    roomy = Steps(tmp_path / "roomy", session_memory=False)
    _summarized_then_refilled(roomy, round(_page_room(roomy)) - 1_500)
    assert roomy.steps.summary_would_come_too_soon() and roomy.steps.room_for_a_page()
    assert collect(roomy.steps.before_call()) == []
    off = Steps(tmp_path / "off", session_memory=False, relief_keeps_page_room=False)
    _summarized_then_refilled(off, round(_page_room(off)) + 500)
    assert not off.steps.room_for_a_page()
    assert collect(off.steps.before_call()) == []


def test_with_enough_work_since_the_last_summary_a_full_history_waits_for_the_threshold(
    steps: Steps,
) -> None:
    steps.work(calls=steps.settings.summary_min_work, tokens_each=500)
    steps.anchor()
    tokens = steps.steps.meter.estimate(steps.history.conversation)
    assert not steps.steps.room_for_a_page() and tokens < steps.settings.autocompact_tokens
    assert not steps.steps.summary_would_come_too_soon()
    assert collect(steps.steps.before_call()) == []  # the notes or a summary come at the threshold


def test_on_a_large_window_a_summary_is_never_too_soon(tmp_path: Path) -> None:
    steps = Steps(tmp_path, relief_max_tokens=10_000)  # the threshold (25.5K) is above it
    steps.work(calls=16, tokens_each=1_700)
    steps.anchor()
    collect(steps.steps.summarize("manual"))
    assert not steps.steps.summary_would_come_too_soon()


# ---- when to fold -----------------------------------------------------------------------

FOLDER_NAME = "tool-results"


def _cleared_exchanges(steps: Steps, count: int) -> None:
    folder = steps.root / FOLDER_NAME
    steps.add(user("review the package"))
    for i in range(count):
        use_message, answer = exchange(call("read_file", path=f"src/m{i}.py"),
                                       output=words(900))
        result = answer.tool_results[0]
        saved = f"{folder}/{i}-read.txt"
        cleared = replace(result, content=f"[cleared: full text at {saved}]", saved_path=saved,
                          state=ResultState.CLEARED, original_chars=9_000, original_lines=300)
        steps.add(Message("assistant", [TextBlock(f"Reading m{i}: FACT-{i}."),
                                        *use_message.tool_uses]),
                  Message("user", [cleared]))
    for i in range(3):
        steps.add(*exchange(call("read_file", path=f"src/new{i}.py"), output=words(300)))


def test_old_calls_with_cleared_results_fold_to_one_line_each(steps: Steps) -> None:
    _cleared_exchanges(steps, count=30)
    before = len(steps.history.conversation)
    report = steps.steps.fold_cleared_calls()
    assert report is not None and report.tier == "fold"
    assert report.results_touched == 30
    assert len(steps.history.conversation) < before
    assert "FACT-29" in steps.history.conversation.messages[0].text  # said: … kept


def test_no_fold_when_turned_off_or_when_a_summary_comes_anyway(tmp_path: Path) -> None:
    off = Steps(tmp_path / "off", fold_cleared_calls=False)
    _cleared_exchanges(off, count=30)
    assert off.steps.fold_cleared_calls() is None
    full = Steps(tmp_path / "full")
    _cleared_exchanges(full, count=30)
    full.work(calls=16, tokens_each=1_700)  # the kept part alone is above the threshold
    before = list(full.history.conversation.messages)
    assert full.steps.fold_cleared_calls() is None
    assert full.history.conversation.messages == before


# ---- after "prompt too long" ----------------------------------------------------------------


def test_prompt_too_long_is_answered_with_one_summary_then_the_turn_ends(steps: Steps) -> None:
    steps.work(calls=10, tokens_each=1_000)
    first = collect(steps.steps.after_prompt_too_long("prompt is too long: 300000 tokens"))
    assert isinstance(first[0], ev.Notice) and "compacting" in first[0].text
    assert any(isinstance(e, ev.CompactionFinished) and e.reason == "prompt-too-long"
               for e in first)
    second = collect(steps.steps.after_prompt_too_long("prompt is too long"))
    assert [type(e) for e in second] == [ev.TurnError]
    assert isinstance(second[0], ev.TurnError) and second[0].kind == "prompt_too_long"


def test_a_reply_in_between_allows_another_retry(steps: Steps) -> None:
    steps.work(calls=10, tokens_each=1_000)
    collect(steps.steps.after_prompt_too_long("too long"))
    steps.anchor()  # the retried call got through
    steps.work(calls=10, tokens_each=1_000)
    again = collect(steps.steps.after_prompt_too_long("too long"))
    assert not any(isinstance(e, ev.TurnError) for e in again)


def test_prompt_too_long_without_auto_compact_ends_the_turn_at_once(tmp_path: Path) -> None:
    steps = Steps(tmp_path, auto_compact=False)
    steps.work(calls=10, tokens_each=1_000)
    events = collect(steps.steps.after_prompt_too_long("too long"))
    assert [type(e) for e in events] == [ev.TurnError]
    assert steps.provider.requests == []


def test_a_prompt_that_alone_outgrows_the_window_is_refused_up_front(steps: Steps) -> None:
    assert steps.steps.prompt_cannot_fit("fix the bug") is None
    refusal = steps.steps.prompt_cannot_fit(words(40_000))
    assert refusal is not None and "too long to send" in refusal


def test_with_session_memory_a_cold_history_without_notes_is_left_to_microcompact(
    tmp_path: Path,
) -> None:
    """Nobody waits for an idle summary: without notes that have arrived, none is made."""
    with_notes = Steps(tmp_path)
    assert with_notes.settings.session_memory
    with_notes.work(calls=8, tokens_each=1_500)
    with_notes.anchor()
    with_notes.steps.call_ended()
    with_notes.now += with_notes.settings.microcompact_idle_seconds + 1
    assert with_notes.steps.turn_start_summary() is None


# ---- session notes on their way: defer, then notes, and the hard limit ------------------


def notes_on_the_way(steps: Steps, *, covered: int | None = None,
                     arrives_in: float = 30.0) -> SessionNotes:
    """Notes of the whole history whose update (on the simulated clock) is still running."""
    conversation = steps.history.conversation
    covered = len(conversation) if covered is None else covered
    notes = SessionNotes("<summary>## Notes\n- FACT-7 is in m7.py</summary>",
                         anchor_of(conversation.messages, covered), covered,
                         steps.steps.meter.estimate(conversation), started_at=steps.now,
                         ready_at=steps.now + arrives_in)
    steps.steps.memory.notes = notes
    return notes


@pytest.fixture
def noted(tmp_path: Path) -> Steps:
    # Each update waited for as it is started, so the test sees its request at once; the
    # hard limit 5% below the effective window leaves room above the 25.5K threshold.
    return Steps(tmp_path, session_memory_background=False, session_memory_defer_margin_pct=0.05)


def test_a_due_summary_waits_for_notes_on_their_way_while_the_request_fits(
    noted: Steps,
) -> None:
    noted.work(calls=16, tokens_each=1_700)  # above the 25.5K threshold, below the hard limit
    noted.anchor()
    assert noted.steps.needs_mid_turn_room() and noted.steps.below_hard_limit()
    notes_on_the_way(noted)
    events = collect(noted.steps.before_call())
    assert not any(isinstance(e, ev.CompactionStarted) for e in events)
    assert noted.provider.requests == []  # neither a summary nor a second update
    assert noted.steps.turn_start_summary() == "auto"
    assert collect(noted.steps.at_turn_start()) == []  # at a turn's start alike
    noted.now += 31  # the notes are in: they replace the history before the next call
    events = collect(noted.steps.before_call())
    finished = [e for e in events if isinstance(e, ev.CompactionFinished)]
    assert len(finished) == 1 and finished[0].from_notes and finished[0].waited_seconds == 0
    assert noted.provider.requests == []
    assert not noted.steps.needs_mid_turn_room()


def test_without_notes_on_their_way_a_deferral_starts_an_update(noted: Steps) -> None:
    noted.work(calls=16, tokens_each=1_700)
    noted.anchor()
    events = collect(noted.steps.before_call())
    assert not any(isinstance(e, ev.CompactionStarted) for e in events)
    [update] = noted.provider.requests
    assert NOTES_LINE in update.messages[-1].text  # a notes update, not a summary
    # Its reply is in (no simulated delay here): the next call compacts from it, no call.
    events = collect(noted.steps.before_call())
    finished = [e for e in events if isinstance(e, ev.CompactionFinished)]
    assert len(finished) == 1 and finished[0].from_notes
    assert len(noted.provider.requests) == 1


@pytest.mark.parametrize("covered", [None, 0])
def test_at_the_hard_limit_nothing_waits_for_notes_on_their_way(
    noted: Steps, covered: int | None
) -> None:
    """Notes still on their way (of the whole history, or of nothing that can be cut) are not
    waited for: the cheap tiers make the room, and no call is made."""
    noted.work(calls=18, tokens_each=1_700)  # past the hard limit (effective window - 5%)
    noted.anchor()
    assert not noted.steps.below_hard_limit()
    notes_on_the_way(noted, covered=covered, arrives_in=12.0)
    events = collect(noted.steps.before_call())
    assert not any(isinstance(e, ev.CompactionStarted) for e in events)
    assert any(isinstance(e, ev.TierFired) and e.report.tier == "microcompact" for e in events)
    assert noted.provider.requests == []
    assert not noted.steps.needs_mid_turn_room()


def test_no_deferral_without_session_memory_or_with_the_margin_at_the_whole_window(
    tmp_path: Path,
) -> None:
    for changes in ({"session_memory": False}, {"session_memory_defer_margin_pct": 1.0}):
        steps = Steps(tmp_path / str(len(changes)) / next(iter(changes)),
                      session_memory_background=False, **changes)
        steps.work(calls=16, tokens_each=1_700)
        steps.anchor()
        events = collect(steps.steps.before_call())
        assert not steps.steps.needs_mid_turn_room()  # not sent over the threshold as it is
        if not steps.settings.session_memory:
            assert [e.reason for e in events
                    if isinstance(e, ev.CompactionFinished)] == ["mid-turn"]


# ---- new limits for the same history ---------------------------------------------------


def test_a_window_reported_mid_session_keeps_what_was_measured(tmp_path: Path) -> None:
    """New limits for the same model (the Models API answering mid-turn) keep the meter's
    anchor and the session notes; the thresholds follow the new window at once."""
    steps = Steps(tmp_path)
    steps.work(calls=6, tokens_each=1_500)
    steps.anchor()
    notes = notes_on_the_way(steps)
    meter = steps.steps.meter
    estimate = meter.estimate(steps.history.conversation)
    smaller = replace(steps.settings, rejected_window=20_000)
    steps.steps.attach(History(steps.history.transcript, steps.history.conversation,
                               steps.steps.store, smaller), smaller, fixed_chars=0)
    assert steps.steps.meter is meter and meter.is_anchored(steps.history.conversation)
    assert meter.estimate(steps.history.conversation) == estimate
    assert steps.steps.memory.notes is notes
    assert steps.steps.status().window == 20_000
    assert steps.steps.compactor.settings.window == 20_000

    another_model = replace(smaller, model="claude-opus-4-5")
    steps.steps.attach(History(steps.history.transcript, steps.history.conversation,
                               steps.steps.store, another_model), another_model, fixed_chars=0)
    assert steps.steps.meter is not meter and steps.steps.memory.notes is None
