"""Every decision about what the next request carries, in one object.

Tier 0 happens as each tool result is admitted (``History.admit``); everything
else is decided here, at three moments:

- at a turn's start: a summary when the window is nearly full ("auto") or the
  prompt cache went cold over a big history ("idle");
- before every model call: tiers 1-3 and clear-thinking, the compact tool's
  request, and when one turn alone outgrows the window: relief (when a summary
  would come too soon), fold, then a mid-turn summary; relief and fold also come
  earlier, once such a turn leaves no room for a read page;
- after the server said the prompt is too long: one summary, one retry.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import replace

from mini_claude import events as ev
from mini_claude.agent.history import History
from mini_claude.agent.hooks import HookRunner
from mini_claude.agent.lifecycle import LifecycleHooks
from mini_claude.agent.mode_reminder import approved_plan
from mini_claude.agent.summaries import run_summary
from mini_claude.context.attachments import (
    ApprovedPlanSource,
    PlanSource,
    RuleSource,
    ShellSource,
    SkillSource,
)
from mini_claude.context.base import ResultStore
from mini_claude.context.cache_misses import CacheMissLog
from mini_claude.context.compact import (
    THRASH_MIN_NEW_WORK,
    Compactor,
    RangeSummary,
    SummaryContext,
)
from mini_claude.context.fold import fold_exchanges, folder_of
from mini_claude.context.ledger import Ledger
from mini_claude.context.meter import TokenMeter
from mini_claude.context.notes import SessionNotes
from mini_claude.context.pipeline import ContextPipeline
from mini_claude.context.rebuild import cut_points
from mini_claude.context.session_memory import NotesUpdate, SessionMemory
from mini_claude.context.thinking import ClearThinkingTier, thinking_loop_open
from mini_claude.context.tier import cache_is_cold
from mini_claude.conversation import Conversation
from mini_claude.project.rules import PathRules
from mini_claude.protocol import (
    CompactReason,
    ContextStatus,
    ResponseComplete,
    TierReport,
    Usage,
)
from mini_claude.settings import Settings
from mini_claude.text import format_tokens
from mini_claude.tools.base import ToolContext
from mini_claude.transcript import LastPrompt

# Compactions the user asked for get a fresh summary, never the background notes.
FRESH_SUMMARY_REASONS: frozenset[CompactReason] = frozenset({"manual", "tool"})
# Compactions the threshold asked for: held back while notes are on their way and the request
# still fits below the hard limit (see ``defer_summary``).
DEFERRABLE_REASONS: frozenset[CompactReason] = frozenset({"auto", "mid-turn"})


class ContextSteps:
    """The meter, the tiers and the summaries of one session, and when each runs.

    Totals (tokens freed, summaries made, cache misses) live as long as the session;
    the pipeline and the compactor are rebuilt by :meth:`attach` for each history or set
    of settings. The meter and the session notes describe the history itself, so new
    limits for the same model and history (the Models API answering mid-turn) keep them.
    """

    history: History
    settings: Settings
    meter: TokenMeter
    memory: SessionMemory

    def __init__(
        self,
        *,
        store: ResultStore,
        tool_context: ToolContext,
        clock: Callable[[], float],
        hooks: Callable[[], HookRunner],
        summary_context: Callable[[], SummaryContext],
        path_rules: PathRules | None = None,
        lifecycle: LifecycleHooks | None = None,
    ) -> None:
        self.store = store
        self.tool_context = tool_context
        self.clock = clock
        self.hooks = hooks
        self.summary_context = summary_context
        self.path_rules = path_rules or PathRules((), tool_context.root)
        # SessionStart hooks run as a summary starts; their context is written back after it.
        self.lifecycle = lifecycle or LifecycleHooks()
        self.cache_misses = CacheMissLog()
        self.clear_thinking = ClearThinkingTier()
        self.tokens_freed: dict[str, int] = {}
        self.compactions = 0
        self.pipeline_seconds: list[float] = []
        self.last_call_at: float | None = None
        self._requested_focus: str | None = None  # set by the compact tool ("" for none)
        self._retried_too_long = False
        # Print mode ends with the turn: notes started by its last reply would be cancelled
        # at exit, unread, after their request was paid for.
        self.notes_at_turn_end = True
        # Print mode's --max-turns: the model calls a turn may make (None: no bound).
        self.max_requests: int | None = None
        self._requests_this_turn = 0
        # What the meter learnt and the notes, per model, for the current history.
        self._per_model: dict[str, tuple[TokenMeter, SessionMemory]] = {}

    def attach(self, history: History, settings: Settings, fixed_chars: int) -> None:
        """Start over on a new (or resumed) history, or under new settings.

        On the same history what the meter learnt and the notes are kept per model: new
        limits keep them, and a command's model for one turn, and back, loses neither."""
        if not self._same_history(history):
            self._per_model = {}
        kept = self._per_model.get(settings.model)
        if kept is None:
            meter = TokenMeter(settings, fixed_chars=fixed_chars)
            earlier: SessionMemory | None = getattr(self, "memory", None)
            memory = SessionMemory(settings, meter, self.clock)
            memory.on_update = self._record_notes
            memory.stands_in = self._notes_would_stand_in
            if earlier is not None:  # a simulated arrival time outlives new settings
                memory.arrival_delay = earlier.arrival_delay
            self._per_model[settings.model] = meter, memory
        else:
            meter, memory = kept
            meter.settings = settings
            meter.schemas_changed(fixed_chars)
            memory.settings = settings
        self.history = history
        self.settings = settings
        self.meter = meter
        self.memory = memory
        self.pipeline = ContextPipeline(settings, self.store, self.meter,
                                        root=self.tool_context.root)
        self.compactor = Compactor(settings, self.meter, self.store)
        self.compactor.add_reattach_source(Ledger(settings, self._chars_per_token))
        context = self.tool_context
        self.compactor.add_reattach_source(PlanSource(context.plan))
        self.compactor.add_reattach_source(ApprovedPlanSource(lambda: approved_plan(context)))
        skill_chars = int(settings.reattach_skills_tokens * settings.chars_per_token)
        self.compactor.add_reattach_source(
            SkillSource(context.skills, context.loaded_skills, skill_chars)
        )
        self.compactor.add_reattach_source(ShellSource(context.shells))
        self.compactor.add_reattach_source(RuleSource(self.path_rules))
        self.compactor.add_reattach_source(self.lifecycle)
        self.last_call_at = None

    def _same_history(self, history: History) -> bool:
        """Only the settings change: what the meter learnt and the notes still hold."""
        earlier: History | None = getattr(self, "history", None)
        return earlier is not None and earlier.conversation is history.conversation

    @property
    def conversation(self) -> Conversation:
        return self.history.conversation

    def totals(self) -> dict[str, object]:
        """What the context steps did this session, for /cost and the benchmark."""
        return {
            "compactions": self.compactions,
            "notes_updates": self.memory.updates,
            "tokens_freed": dict(self.tokens_freed),
            "cache_misses": len(self.cache_misses.misses),
        }

    # ---- the face front ends read (and nothing deeper) -----------------------------------

    def status(self) -> ContextStatus:
        """The meter's reading: the status bar, /context and the auto-compact trigger."""
        return self.compactor.status(self.conversation)

    @property
    def chars_per_token(self) -> float:
        """What the meter learnt (or the configured ratio before the first reply)."""
        return self.meter.chars_per_token

    def cache_miss_summary(self) -> str:
        """The prompt cache misses of the session and their causes, for /cost."""
        return self.cache_misses.summary()

    def current_notes(self) -> SessionNotes | None:
        """The session notes kept in the background for this history, if any (/summary)."""
        return self.memory.current(self.conversation)

    def restore_notes(self, text: str, covered: int, history_tokens: int) -> None:
        """A resumed history's notes, as the transcript kept them, if they still fit it."""
        self.memory.restore(text, covered, history_tokens, self.conversation)

    def resume_meter(self, last: LastPrompt) -> None:
        """A resumed meter starts from the server's count of the last request."""
        self.meter.resume_from(last.tokens, last.messages, last.fixed_chars, self.conversation)

    def end_with_turn(self, max_requests: int | None) -> None:
        """The run ends with this turn (print mode): no notes start that nobody would read,
        at its end or in its last ``max_requests`` steps."""
        self.notes_at_turn_end = False
        self.max_requests = max_requests

    def notes_arrive_after(self, delay: Callable[[Usage], float]) -> None:
        """On a simulated clock, notes arrive as late as a real reply of that size would."""
        self.memory.arrival_delay = delay

    async def cancel_notes(self) -> None:
        """No notes request outlives the session."""
        await self.memory.cancel()

    def _chars_per_token(self) -> float:
        return self.meter.chars_per_token

    # ---- at a turn's start ------------------------------------------------------------

    def prompt_cannot_fit(self, text: str) -> str | None:
        """Refuse up front a prompt that alone outgrows the window: no tier can shrink the
        newest request, so sending it would only be refused (and retried)."""
        tokens = self.meter.tokens_for(len(text)) + round(self.meter.fixed_tokens)
        room = self.settings.effective_window
        if tokens <= room:
            return None
        return (
            f"the prompt is too long to send: about {format_tokens(tokens)} tokens with the "
            f"system prompt and tools, and the window holds {format_tokens(room)} after room "
            "for the answer; shorten it or send less"
        )

    def turn_start_summary(self) -> CompactReason | None:
        """"auto" when the window is nearly full, "idle" when the cache went cold over a
        history big enough to be worth summarizing, else None."""
        if self.compactor.should_auto_compact(self.conversation):
            return "auto"
        history_tokens = max(
            0, self.meter.estimate(self.conversation) - round(self.meter.fixed_tokens)
        )
        if self.cache_is_cold() and self._idle_summary_without_wait() and (
            self.compactor.should_compact_when_idle(self.conversation, history_tokens)
        ):
            return "idle"
        return None

    async def at_turn_start(self) -> AsyncIterator[ev.Event]:
        """After the user's message is in the history, before the turn's first call."""
        self.compactor.note_turn_start()
        self._requests_this_turn = 0
        async for event in self._collect_notes():
            yield event
        reason = self.turn_start_summary()
        if reason is not None and await self.defer_summary(reason):
            reason = None
        if reason is not None:
            async for event in self.summarize(reason):
                yield event
        elif self.compactor.thrash_warning:
            yield ev.Notice(self.compactor.thrash_warning, "warning")

    def cache_is_cold(self) -> bool:
        idle = self.settings.microcompact_idle_seconds
        return cache_is_cold(self.clock(), self.last_call_at, idle)

    # ---- before each call -------------------------------------------------------------

    async def before_call(self) -> AsyncIterator[ev.Event]:
        """Tiers 1-3, then the compact tool's request or the mid-turn safety net."""
        async for event in self._collect_notes():
            yield event
        # Inside a tool loop with thinking nothing before its last reply may change.
        loop_open = thinking_loop_open(self.conversation.messages)
        for report in self.run_tiers(loop_open):
            yield ev.TierFired(report)
        focus, self._requested_focus = self._requested_focus, None
        if focus is not None:
            async for event in self.summarize("tool", focus or None):
                yield event
        elif self.task_boundary_due(loop_open):
            async for event in self.summarize("task-boundary"):
                yield event
        elif self.needs_mid_turn_room():
            for report in self.make_room(loop_open):
                yield ev.TierFired(report)
            if self.compactor.needs_mid_turn_compaction(self.conversation):
                async for event in self._compact_without_waiting("mid-turn", loop_open):
                    yield event
        elif self.page_room_due():
            for report in self.cheap_room(loop_open):
                yield ev.TierFired(report)

    async def _compact_without_waiting(
        self, reason: CompactReason, loop_open: bool
    ) -> AsyncIterator[ev.Event]:
        """At the threshold nothing waits: the newest notes that have arrived stand in; else
        the request goes out as it is while an update is on its way and it fits; else the
        cheap tiers make room; only when none of that is enough, a summary call."""
        if not self._notes_stand_in() and await self.defer_summary(reason):
            return
        if not self._notes_stand_in() and self.memory.enabled:
            for report in self.cheap_room(loop_open):
                yield ev.TierFired(report)
            if not self._still_due(reason):
                return
        async for event in self.summarize(reason):
            yield event

    def _notes_stand_in(self) -> bool:
        ready = self.memory.usable(self.conversation)
        return bool(ready) and self._notes_would_stand_in(self.conversation, ready)

    def _notes_would_stand_in(self, conversation: Conversation,
                              notes: Sequence[SessionNotes]) -> bool:
        return self.compactor.notes_fit(conversation, self.summary_context(), notes)

    def _still_due(self, reason: CompactReason) -> bool:
        if reason == "auto":
            return self.compactor.should_auto_compact(self.conversation)
        return self.compactor.needs_mid_turn_compaction(self.conversation)

    def cheap_room(self, loop_open: bool) -> list[TierReport]:
        """Room without a call, when no notes can stand in: old results cleared (their text
        stays on disk), then cleared calls folded, whatever the window."""
        if loop_open:
            return []
        reports: list[TierReport] = []
        relief = self.pipeline.relieve_pressure(self.conversation)
        if relief is not None:
            self.note_edit(relief)
            reports.append(relief)
        folded = self.fold_cleared_calls()
        if folded is not None:
            self.note_edit(folded)
            reports.append(folded)
        return reports

    def run_tiers(self, loop_open: bool) -> list[TierReport]:
        """Tiers 1-3, then clear-thinking; none of them while a thinking loop is open."""
        started = time.perf_counter()
        reports = [] if loop_open else self.pipeline.run(
            self.conversation, now=self.clock(), last_call_at=self.last_call_at
        )
        cleared = None if loop_open else self._clear_thinking(edited=bool(reports))
        self.pipeline_seconds.append(time.perf_counter() - started)
        reports = [*reports, *([cleared] if cleared else [])]
        for report in reports:
            self.note_edit(report)
        return reports

    def task_boundary_due(self, loop_open: bool) -> bool:
        """A todo item was just marked done and the context is past a share of the threshold:
        compacting now, between tasks, loses less than compacting in the middle of the next."""
        settings = self.settings
        finished = self.tool_context.plan.take_finished()
        if not (finished and settings.auto_compact and settings.task_boundary_compact):
            return False
        if loop_open or self.compactor.breaker_open:
            return False
        work = self.compactor.work_since_last_compaction(self.conversation)
        if work is not None and work < THRASH_MIN_NEW_WORK:
            return False  # just compacted: nothing new to make room from
        tokens = self.meter.status(self.conversation).tokens
        due_at = settings.task_boundary_compact_pct * settings.autocompact_tokens
        return tokens >= due_at and bool(cut_points(self.conversation.messages))

    def request_summary(self, focus: str | None) -> None:
        """The compact tool asked for a summary: it comes before the next request."""
        self._requested_focus = focus or ""

    def needs_mid_turn_room(self) -> bool:
        return self.settings.auto_compact and self.compactor.needs_mid_turn_compaction(
            self.conversation
        )

    def page_room_due(self) -> bool:
        """Below the threshold, inside a turn that summarized a short while ago: the history
        has no room left for a whole read page, so old results are cleared now rather than
        at the threshold (see ``relief_keeps_page_room``)."""
        settings = self.settings
        if not (settings.relief_keeps_page_room and settings.auto_compact):
            return False
        return not self.room_for_a_page() and self.summary_would_come_too_soon()

    def make_room(self, loop_open: bool) -> list[TierReport]:
        """Room without a summary: relief when a summary would come too soon, then fold."""
        if loop_open:
            return []
        reports: list[TierReport] = []
        if self.summary_would_come_too_soon():
            relief = self.pipeline.relieve_pressure(self.conversation)
            if relief is not None:
                reports.append(relief)
        folded = self.fold_cleared_calls()
        if folded is not None:
            reports.append(folded)
        for report in reports:
            self.note_edit(report)
        return reports

    def _clear_thinking(self, *, edited: bool) -> TierReport | None:
        report = self.clear_thinking.run(
            self.conversation, cache_cold=self.cache_is_cold(), history_edited=edited,
            chars_per_token=self.meter.chars_per_token,
        )
        if report is not None:
            self.history.transcript.thinking_cleared(len(self.conversation.messages))
        return report

    def fold_cleared_calls(self) -> TierReport | None:
        """Fold old exchanges whose results were cleared: the room a summary would buy,
        without one, when a long turn's cleared calls are what fills the window."""
        if not self.settings.fold_cleared_calls:
            return None
        messages = self.conversation.messages
        folder = folder_of(messages)
        if folder is None:
            return None
        folded = fold_exchanges(messages, self.settings.fold_keep_messages, folder)
        if folded is None:
            return None
        after = self.meter.estimate_messages(folded.messages)
        if after > self.settings.autocompact_tokens:
            return None  # a summary comes anyway: folding would only break the cache first
        chars, tokens = self.conversation.total_chars, self.meter.estimate(self.conversation)
        before = list(messages)
        self.history.fold(folded)
        self.compactor.note_fold(before, folded.removed, self.conversation.epoch)
        self.memory.note_fold(before, self.conversation.messages, folded.removed)
        return TierReport("fold", folded.exchanges, chars - self.conversation.total_chars,
                          max(0, tokens - after),
                          "old calls with cleared results folded to one line each")

    def summary_would_come_too_soon(self) -> bool:
        """Little work since the last summary: clear old results instead of summarizing again.

        A summary keeps what results said, so it is the first choice; but one turn that
        refills the window every few calls would summarize over and over, and clearing
        (the text stays on disk) buys the same room without an API call.
        """
        if not self.settings.clearing_pays:
            return False
        work = self.compactor.work_since_last_compaction(self.conversation)
        return work is not None and work < self.settings.summary_min_work

    def note_edit(self, report: TierReport) -> None:
        """An edit of old messages: counted, and remembered as a reason for a cache miss."""
        self.count_freed(report)
        self.cache_misses.note_edit(report.tier)

    def count_freed(self, report: TierReport) -> None:
        self.tokens_freed[report.tier] = self.tokens_freed.get(report.tier, 0) + report.tokens_freed

    # ---- after each call --------------------------------------------------------------

    def observe_reply(self, response: ResponseComplete) -> None:
        """The reported prompt size anchors the meter; a cache miss is diagnosed."""
        self._retried_too_long = False  # one retry per request, not per turn
        if response.usage is not None:
            self.meter.observe(response.usage.prompt_tokens, self.conversation)
        missed = self.cache_misses.observe(
            response.cache_miss, diagnosed=response.response_id is not None
        )
        if missed is not None:
            self.history.transcript.event(
                "cache_miss", reason=missed.reason, missed_tokens=missed.missed_tokens,
                after=list(missed.after),
            )

    def room_for_a_page(self) -> bool:
        """Whether the next turn can take a whole read page without a cut: a history fuller
        than that is better let go cold and summarized at the next turn's start than kept
        warm, since the turn's first big read would otherwise be cut before the model saw it.
        Inside a turn soon after a summary, old results are cleared to keep this room
        (``page_room_due``)."""
        settings = self.settings
        page = settings.effective_window * settings.read_page_window_share
        return self.meter.estimate(self.conversation) + page <= settings.effective_window

    def call_ended(self) -> None:
        self.last_call_at = self.clock()

    async def after_prompt_too_long(self, message: str) -> AsyncIterator[ev.Event]:
        """One summary and a retry; a second refusal (or auto-compact off) ends the turn
        with a :class:`TurnError`."""
        if self._retried_too_long or not self.settings.auto_compact:
            yield ev.TurnError(message, "prompt_too_long")
            return
        self._retried_too_long = True
        yield ev.Notice(f"the server said the prompt is too long ({message}); compacting")
        async for event in self.summarize("prompt-too-long"):
            yield event

    # ---- summaries --------------------------------------------------------------------

    def below_hard_limit(self) -> bool:
        """The next request fits the effective window (window minus the output reserve) with
        the deferral margin to spare."""
        return self.meter.status(self.conversation).tokens <= self.memory.deferral_limit()

    async def defer_summary(self, reason: CompactReason) -> bool:
        """True when a due summary is held back: notes that fit are not here yet, an update
        is on its way (started now if none is), and the request still fits below the hard
        limit. Nothing waits: the notes replace the history as soon as they arrive and fit
        (checked before every call); at the hard limit the summary comes after all."""
        memory, conversation = self.memory, self.conversation
        if reason not in DEFERRABLE_REASONS or not memory.enabled or not self.below_hard_limit():
            return False
        ready = memory.usable(conversation)
        if ready and self.compactor.notes_fit(conversation, self.summary_context(), ready):
            return False  # the notes stand in now, without a call
        if memory.in_flight(conversation):
            return True
        if not memory.may_start(conversation) or not memory.start(conversation,
                                                                  self.summary_context()):
            return False
        if not self.settings.session_memory_background:
            await memory.settle()  # in one order with the loop's own calls (the benchmark)
        return True

    async def summarize(
        self, reason: CompactReason, focus: str | None = None
    ) -> AsyncIterator[ev.Event]:
        """Replace the history with a summary (hooks around it); events as it goes.

        The newest notes that have arrived stand in when they fit; nothing waits for an
        update on its way (it lands later and is re-based on the new history)."""
        waited = 0.0
        notes = [] if reason in FRESH_SUMMARY_REASONS else self.memory.usable(self.conversation)
        events = run_summary(self.compactor, self.history, self.hooks(), self.summary_context(),
                             reason, focus, notes, lifecycle=self.lifecycle)
        async for event in events:
            if isinstance(event, ev.CompactionFinished):
                self.compactions += 1
                self.memory.note_compacted()
                event = replace(self._with_notes_age(event, notes), waited_seconds=waited)
                self.cache_misses.note_edit(f"compaction ({reason})")
                self.last_call_at = self.clock()  # the summary call was a model call too
            yield event

    async def summarize_range(
        self, start: int, end: int, instructions: str | None = None
    ) -> RangeSummary:
        """Part of the history replaced by a summary the user asked for, the rest kept.

        Raises :class:`CompactionError` with the history untouched when it cannot be made."""
        result = await self.compactor.summarize_range(
            self.conversation, self.summary_context(), start, end, instructions=instructions
        )
        self.history.summarize_range(result)
        self.compactions += 1
        self.memory.note_compacted()
        if result.start + result.inserted < len(result.messages):  # the prefix changed
            self.cache_misses.note_edit("summary up to a message")
        self.last_call_at = self.clock()  # the summary call was a model call too
        return result

    # ---- session memory (see context/session_memory.py) -------------------------------

    def after_reply(self, *, ends_turn: bool = False) -> None:
        """A reply is in: start a notes update when one is due (it runs in the background)."""
        self._requests_this_turn += 1
        self.memory.note_step(self.conversation)
        if ends_turn and not self.notes_at_turn_end:
            return
        bound = self.max_requests
        self.memory.steps_left = None if bound is None else bound - self._requests_this_turn
        if self.memory.due(self.conversation):
            self.memory.start(self.conversation, self.summary_context())

    async def _collect_notes(self) -> AsyncIterator[ev.Event]:
        """Report notes that arrived (waits for them only when not in background)."""
        if self.settings.session_memory_background:
            outcome = self.memory.collect()
        else:
            outcome = await self.memory.settle()
        if outcome is not None and outcome.notes is not None:
            yield ev.NotesUpdated(outcome.notes.covered, len(outcome.notes.text))

    def _record_notes(self, outcome: NotesUpdate) -> None:
        if outcome.notes is None:
            self.history.transcript.event("session_notes_failed", error=outcome.error)
            return
        notes = outcome.notes
        covered = self.memory.covered_in(notes, self.conversation.messages) or 0
        self.history.transcript.event("session_notes", text=notes.text, covered=covered,
                                      history_tokens=notes.history_tokens)

    def _with_notes_age(
        self, event: ev.CompactionFinished, notes: Sequence[SessionNotes]
    ) -> ev.CompactionFinished:
        """How long ago the notes that stood in were asked for (the benchmark's wait)."""
        used = next((n for n in notes if event.from_notes and n.text == event.summary), None)
        if used is None:
            return event
        return replace(event, notes_age_seconds=self.clock() - used.started_at)

    def _idle_summary_without_wait(self) -> bool:
        """With session memory an idle summary is taken only from notes that have arrived and
        fit: the user would otherwise wait for a call that the tiers can spare them
        (microcompact)."""
        if not self.memory.enabled:
            return True
        notes = self.memory.usable(self.conversation)
        return bool(notes) and self.compactor.notes_fit(self.conversation,
                                                        self.summary_context(), notes)
