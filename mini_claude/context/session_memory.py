"""Session memory: notes about the session kept up to date beside the work, so that when the
summary threshold comes they can replace the old history at once, without a summary call.

An update is a side request that repeats the main conversation's last prefix (so the server
reads it from the prompt cache) and asks for notes in the summary's own sections. It runs in
the background, after a reply whose tools are about to run or at a turn's end, and nobody
waits for it: the loop collects the notes once they have arrived. (With
``session_memory_background`` off, the loop waits for each update at once: the benchmark does
this so that every run sends its requests in the same order, and counts the time as
background time.)

Notes are anchored to the last message they describe (see ``notes.py``), so every edit of
the history re-bases them, notes still on their way included: a fold maps the exchanges it
took out to the message that holds their lines; after a summary the notes whose anchor is in
the kept tail still describe everything up to it.

When an update starts is measured, not guessed: the replies the last updates took to arrive
and the history's growth per reply say how far below the summary threshold one must start to
land before it. One update per history between compactions (of several, only the last would be
used); a second only when the notes in hand could not stand in; none that the next compaction
could not use, nor in a run's last steps.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from mini_claude.context.compact import SummaryContext
from mini_claude.context.meter import TokenMeter
from mini_claude.context.notes import (
    MessageKey,
    SessionNotes,
    anchor_of,
    find_anchor,
    message_key,
)
from mini_claude.context.notes_merge import merged_notes, within
from mini_claude.context.rebuild import cut_points
from mini_claude.context.summary_request import (
    boundary_block,
    extract_summary,
    summary_instruction,
    unsent_suffix_start,
)
from mini_claude.context.thinking import has_thinking, max_tokens_for, thinking_loop_open
from mini_claude.conversation import Conversation, Message, TextBlock
from mini_claude.prompts import NOTES_ADDITIONS, NOTES_IN_FULL, NOTES_LINE
from mini_claude.protocol import ModelRequest, ProviderError, ResponseComplete, Usage
from mini_claude.sanitize import clean_text
from mini_claude.settings import Settings

# Notes kept per history: the newest, and two earlier ones that stand in while it is on its way.
KEPT_NOTES = 3
# Replies an update should land before the threshold, beyond its measured flight (jitter).
LEAD_SPARE_STEPS = 2
# Replies of measured growth kept free below the window while a summary is held back for
# notes: the next one, and one more for a reply larger than the average.
DEFER_GROWTH_STEPS = 2
# Weight of the newest measurement in the running averages of growth and replies per update.
AVERAGE_WEIGHT = 0.3
# The earliest an update starts, as a share of the summary threshold, however slow updates are.
EARLIEST_START_SHARE = 0.3


@dataclass(frozen=True, slots=True)
class NotesUpdate:
    """How one update ended: the notes, or why there are none."""

    notes: SessionNotes | None
    error: str | None = None


class SessionMemory:
    """Schedules notes updates and says whether the notes can stand in for a summary."""

    def __init__(
        self, settings: Settings, meter: TokenMeter, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.settings = settings
        self.meter = meter
        self.clock = clock
        # Newest last; the earlier ones of this history stay usable while a newer update has
        # not arrived yet (see ``arrival_delay``).
        self._kept: list[SessionNotes] = []
        # How long an update's reply takes, when the clock is simulated (the benchmark);
        # None: the reply is in when it is in.
        self.arrival_delay: Callable[[Usage], float] | None = None
        self.updates = 0
        self.failures = 0
        self._pending: asyncio.Task[NotesUpdate] | None = None
        self._news: NotesUpdate | None = None
        # Called with every finished update (the session writes it to the transcript).
        self.on_update: Callable[[NotesUpdate], None] | None = None
        # Messages a fold took out -> the message that now holds their lines.
        self._aliases: dict[MessageKey, MessageKey] = {}
        # Measured: replies an update takes to arrive, history tokens per reply.
        self.flight_steps: float | None = None
        self.growth_per_step: float | None = None
        self._last_tokens: int | None = None
        self._steps = 0
        # The update on its way: when it was asked for and after how many replies.
        self._awaited: tuple[float, int] | None = None
        # Steps left in a run with a known end (print mode's --max-turns); None: unbounded.
        self.steps_left: int | None = None
        # Whether one of these notes (newest first) would stand in for a summary now (the
        # compactor's rebuild says); None: nothing asks, and notes in hand are never replaced.
        self.stands_in: Callable[[Conversation, Sequence[SessionNotes]], bool] | None = None

    # ---- when -------------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.settings.session_memory and self.settings.auto_compact

    @property
    def updating(self) -> bool:
        return self._pending is not None and not self._pending.done()

    def in_flight(self, conversation: Conversation) -> bool:
        """An update was asked for and its notes are not in yet: it is running, or (on a
        simulated clock) its reply would still be on its way."""
        if self.updating:
            return True
        now = self.clock()
        return any(n.ready_at > now for n in self._of(conversation))

    def may_start(self, conversation: Conversation) -> bool:
        """Nothing makes an update unsafe or redundant now (one in flight, a tool loop with
        thinking open), whatever the history's size."""
        if not self.enabled or self._pending is not None or self.in_flight(conversation):
            return False
        messages = conversation.messages
        if messages and has_thinking(messages[-1]) and messages[-1].tool_uses:
            return False  # thinking whose tools are about to run: the loop is opening
        sent = messages[: unsent_suffix_start(messages)]
        # nothing may come between thinking and the results of its tools
        return not (thinking_loop_open(messages) or thinking_loop_open(sent))

    def due(self, conversation: Conversation) -> bool:
        """An update now would be the notes the next compaction uses. One update per history
        between compactions, at the last moment it still lands before the threshold (one
        sent earlier would leave more verbatim after it; sending several, only the last is
        used). A second only when the notes in hand could not stand in, and only if it lands
        before the threshold. Nothing makes an update unsafe."""
        if not self.may_start(conversation) or self._run_ends_first():
            return False
        to_threshold = self.settings.autocompact_tokens - self.meter.estimate(conversation)
        if to_threshold > self.start_lead_tokens():
            return False  # too early: a later update is fresher and still lands in time
        notes = self._of(conversation)
        if not notes:
            return True
        if notes[0].covered >= unsent_suffix_start(conversation.messages):
            return False  # nothing new to describe
        if to_threshold <= self.flight_tokens():
            return False  # it would land after the compaction, which takes the notes in hand
        return self.stands_in is not None and not self.stands_in(conversation, notes)

    def start_lead_tokens(self) -> float:
        """How far below the threshold the last update of a history starts: the measured
        growth while one runs, with a spare step or two; before anything is measured, where
        the first update of a history comes. Never more than the history's earliest start."""
        threshold = self.settings.autocompact_tokens
        lead = self.lead_tokens()
        if lead is None:
            lead = threshold - self.first_update_tokens()
        return min(lead, threshold * (1 - EARLIEST_START_SHARE))

    def lead_tokens(self) -> float | None:
        """How much the history grows while an update runs, plus the spare steps."""
        flight = self.flight_tokens()
        if not flight:
            return None
        return flight + self.spare_steps() * (self.growth_per_step or 0)

    def flight_tokens(self) -> float:
        """How much the history grows while an update runs (0 until measured)."""
        if self.flight_steps is None or not self.growth_per_step:
            return 0.0
        return self.growth_per_step * self.flight_steps

    def spare_steps(self) -> int:
        """Steps an update should land before the threshold beyond its measured time: none
        where a due summary is held back for notes on their way (one landing a step late
        only makes a step's request a little larger), else a couple for jitter (one landing
        late is never used: the summary comes first)."""
        held_back = self.settings.autocompact_tokens < self.deferral_limit()
        return 0 if held_back else LEAD_SPARE_STEPS

    def deferral_limit(self) -> float:
        """Up to where a due summary is held back for notes on their way (see
        ``ContextSteps.defer_summary``): the effective window less what the next steps are
        expected to add (the measured growth per reply, ``DEFER_GROWTH_STEPS`` of them), so
        the request is sent as is while it still fits; before growth is measured, and never
        lower than, the effective window less the fixed deferral margin."""
        settings = self.settings
        window = settings.effective_window
        fixed = window * (1 - settings.session_memory_defer_margin_pct)
        if not self.growth_per_step or settings.session_memory_defer_margin_pct >= 1:
            return fixed  # a margin of 1 turns holding back off
        return max(fixed, window - DEFER_GROWTH_STEPS * self.growth_per_step)

    def _run_ends_first(self) -> bool:
        """The run ends before an update would land (its notes would go unread)."""
        if self.steps_left is None:
            return False
        return self.steps_left <= (self.flight_steps or LEAD_SPARE_STEPS)

    def note_step(self, conversation: Conversation) -> None:
        """A reply is in: the history's growth since the last one, and, once the last update
        has arrived, how many replies it took (an update that runs through the user's pause
        between turns takes one)."""
        tokens = self._history_tokens(conversation)
        last, self._last_tokens = self._last_tokens, tokens
        self._steps += 1
        if last is not None and tokens > last:
            # a compaction or a clearing between them says nothing about growth
            self.growth_per_step = _averaged(self.growth_per_step, tokens - last)
        started = self._awaited
        if started is not None and any(n.started_at == started[0] and n.ready_at <= self.clock()
                                       for n in self._kept):
            self._awaited = None
            self.flight_steps = _averaged(self.flight_steps, self._steps - started[1])

    def first_update_tokens(self) -> int:
        """Where the first update of a history comes: at a share of the summary threshold, but
        early enough that the history can still grow by the lead share of the effective window
        below the hard limit while it runs (a summary held back for notes waits at that limit;
        see ``ContextSteps.defer_summary``)."""
        settings = self.settings
        at_threshold = settings.autocompact_tokens * settings.session_memory_start_pct
        if settings.session_memory_defer_margin_pct >= 1:
            return int(at_threshold)  # nothing is held back for notes: the threshold is the limit
        room = 1 - settings.session_memory_defer_margin_pct - settings.session_memory_lead_pct
        return int(max(0.0, min(at_threshold, settings.effective_window * room)))

    @property
    def notes(self) -> SessionNotes | None:
        return self._kept[-1] if self._kept else None

    @notes.setter
    def notes(self, notes: SessionNotes | None) -> None:
        self._kept = [] if notes is None else [*self._kept[-(KEPT_NOTES - 1):], notes]

    def current(self, conversation: Conversation) -> SessionNotes | None:
        """The newest notes that describe this history (their anchor is in it), re-based."""
        fitting = self._of(conversation)
        return fitting[0] if fitting else None

    def _of(self, conversation: Conversation) -> list[SessionNotes]:
        """Every kept note whose anchor is still in this history, newest first, with
        ``covered`` where its anchor is now."""
        found = []
        for notes in reversed(self._kept):
            covered = self.covered_in(notes, conversation.messages)
            if covered is not None:
                found.append(notes if covered == notes.covered else replace(notes, covered=covered))
        return found

    def covered_in(self, notes: SessionNotes, messages: Sequence[Message]) -> int | None:
        """How many messages of ``messages`` the notes describe; None when none here."""
        anchor, seen = notes.anchor, set()
        while anchor and anchor not in seen:
            covered = find_anchor(messages, anchor)
            if covered is not None:
                return covered
            seen.add(anchor)
            anchor = self._aliases.get(anchor, ())
        return None

    def usable(self, conversation: Conversation) -> list[SessionNotes]:
        """Notes that have arrived and can replace the history up to a legal cut point, newest
        first; empty when a summary call is needed. Nothing here waits for an update."""
        now = self.clock()
        cuts = cut_points(conversation.messages)
        return [n for n in self._of(conversation)
                if n.ready_at <= now and any(c <= n.covered for c in cuts)]

    # ---- doing it ---------------------------------------------------------------------

    def start(self, conversation: Conversation, ctx: SummaryContext) -> bool:
        """Begin an update in the background; False when there is nothing to describe."""
        messages = list(conversation.messages)
        # Copies: the tiers edit results in place later, and this request must repeat the
        # last call exactly to be read from the cache.
        sent = messages[: unsent_suffix_start(messages)]
        base = [Message(m.role, list(m.blocks)) for m in sent]
        if not base:
            return False
        carried = carried_summary(base) if self.settings.session_memory_additions else None
        request = self._request(base, ctx, additions=carried is not None)
        snapshot = SessionNotes("", anchor_of(base, len(base)), len(base),
                                self._history_tokens(conversation), self.clock())
        self._awaited = (snapshot.started_at, self._steps)
        self._pending = asyncio.ensure_future(self._run(ctx, request, snapshot, carried))
        self._pending.add_done_callback(self._finished)
        return True

    def _request(
        self, base: list[Message], ctx: SummaryContext, *, additions: bool = False
    ) -> ModelRequest:
        """The last call's prefix, then the instruction: the server reads the prefix from cache."""
        instruction = Message("user", [TextBlock(self.instruction(additions=additions))])
        max_tokens = max_tokens_for(
            ctx.thinking, min(self.settings.summary_max_tokens, self.settings.reserve)
        )
        return ModelRequest(
            model=ctx.model, system=ctx.system, messages=[*base, instruction], tools=ctx.tools,
            max_tokens=max_tokens, allow_tool_use=False, cache=True, thinking=ctx.thinking,
        )

    def instruction(self, *, additions: bool = False) -> str:
        """In full, or only what is new since the summary heading the history (which carries
        its own pointers: asking to keep every earlier path again would undo the saving)."""
        keep_pointers = self.settings.summary_keep_pointers and not additions
        text = summary_instruction(keep_pointers=keep_pointers)
        heading, _, rest = text.partition("\n\n")
        how = NOTES_ADDITIONS if additions else NOTES_IN_FULL
        return f"{heading}\n\n{NOTES_LINE} {how}\n\n{rest}"

    def collect(self) -> NotesUpdate | None:
        """What finished since the last call, without waiting for an update still running."""
        news, self._news = self._news, None
        return news

    async def settle(self, timeout: float | None = None) -> NotesUpdate | None:
        """Wait for a running update to finish (at most ``timeout`` seconds, after which it
        goes on running), then say what finished."""
        await self.arrival(timeout)
        return self.collect()

    async def arrival(self, timeout: float | None = None) -> None:
        """Wait for a running update to finish (at most ``timeout`` seconds), leaving what
        finished for the loop to collect."""
        task = self._pending
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), timeout)
            except TimeoutError:
                pass
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # the user stopped the turn: the wait ends, the update goes on

    def _finished(self, task: asyncio.Task[NotesUpdate]) -> None:
        """Taken as soon as the reply is in, so the transcript holds every complete update."""
        if self._pending is task:
            self._pending = None
        if task.cancelled():
            return
        outcome = task.result()
        if outcome.notes is None:
            self.failures += 1
            self._awaited = None
        else:
            self.updates += 1
            self.notes = outcome.notes
        if self.on_update is not None:
            self.on_update(outcome)
        self._news = outcome

    async def cancel(self) -> None:
        """Stop a running update (the session ends, or the history was replaced)."""
        task, self._pending = self._pending, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task

    def restore(
        self, text: str, covered: int, history_tokens: int, conversation: Conversation
    ) -> None:
        """Notes read back from the transcript on resume, if they still fit this history."""
        if 0 < covered <= len(conversation):
            now = self.clock()
            anchor = anchor_of(conversation.messages, covered)
            self.notes = SessionNotes(text, anchor, covered, history_tokens, now, now)

    def note_fold(self, before: Sequence[Message], after: Sequence[Message],
                  removed: Sequence[int]) -> None:
        """A fold took whole messages out: each now lives on as a line of the message before
        its run, so notes anchored on one (arrived or still on their way) end there."""
        gone = set(removed)
        kept_before = 0
        for index, message in enumerate(before):
            if index not in gone:
                kept_before += 1
            elif kept_before:
                self._aliases[message_key(message)] = message_key(after[kept_before - 1])

    def note_compacted(self) -> None:
        """A summary (from the notes or a call) replaced the history: the notes that have
        arrived are in it or older than it. Notes still on their way are kept: those whose
        anchor is in the kept tail describe more than the summary does."""
        now = self.clock()
        self._kept = [n for n in self._kept if n.ready_at > now]

    async def _run(
        self, ctx: SummaryContext, request: ModelRequest, snapshot: SessionNotes,
        carried: str | None = None,
    ) -> NotesUpdate:
        try:
            reply, usage = await _reply(ctx, request)
        except ProviderError as exc:
            return NotesUpdate(None, f"the notes update failed: {exc.message}")
        text = clean_text(extract_summary(reply))
        if not text:
            return NotesUpdate(None, "the notes update came back empty")
        if carried is not None:
            text = self._merged(carried, text)
        ready = self.clock()
        if self.arrival_delay is not None and usage is not None:
            ready = snapshot.started_at + self.arrival_delay(usage)
        return NotesUpdate(replace(snapshot, text=text, ready_at=ready))

    def _merged(self, carried: str, additions: str) -> str:
        """The summary heading the history with the additions merged in, no longer than a
        summary may be (``summary_max_tokens``)."""
        return within(merged_notes(carried, additions), self.settings.summary_max_tokens,
                      lambda text: self.meter.tokens_for(len(text)))

    def _tokens_after(self, conversation: Conversation, covered: int) -> int:
        """Tokens of the messages after the first ``covered``: what would stay verbatim."""
        tail = self.meter.estimate_messages(conversation.messages[covered:])
        return tail - self.meter.estimate_messages([])

    def _history_tokens(self, conversation: Conversation) -> int:
        return max(0, self.meter.estimate(conversation) - round(self.meter.fixed_tokens))


def carried_summary(messages: Sequence[Message]) -> str | None:
    """The summary a compaction left at the start of the history, if one heads it."""
    block = boundary_block(messages[0]) if messages else None
    return block.summary if block is not None and block.summary.strip() else None


def _averaged(average: float | None, value: float) -> float:
    return value if average is None else average + AVERAGE_WEIGHT * (value - average)


async def _reply(ctx: SummaryContext, request: ModelRequest) -> tuple[str, Usage | None]:
    final: ResponseComplete | None = None
    async for event in ctx.provider.stream(request):
        if isinstance(event, ResponseComplete):
            final = event
    if final is None:
        return "", None
    return final.message.text, final.usage
