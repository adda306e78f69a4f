"""Session memory: notes about the session kept up to date beside the work, so that when the
summary threshold comes they can replace the old history at once, without a summary call.

An update is a side request that repeats the main conversation's last prefix (so the server
reads it from the prompt cache) and asks for notes in the summary's own sections. It runs in
the background, after a reply whose tools are about to run or at a turn's end, and nobody
waits for it: the loop collects the notes once they have arrived. (With
``session_memory_background`` off, the loop waits for each update at once: the benchmark does
this so that every run sends its requests in the same order, and counts the time as
background time.)

Notes cover the messages ``[0:covered)`` of one history epoch. Edits inside the epoch (tiers
1-3 clearing results) keep positions, so the notes stay valid; a fold removes positions and is
followed; a summary starts a new epoch and the notes are void (the summary now holds them).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from mini_claude.context.compact import SummaryContext
from mini_claude.context.meter import TokenMeter
from mini_claude.context.notes import SessionNotes
from mini_claude.context.rebuild import cut_points
from mini_claude.context.summary_request import (
    extract_summary,
    summary_instruction,
    unsent_suffix_start,
)
from mini_claude.context.thinking import has_thinking, max_tokens_for, thinking_loop_open
from mini_claude.conversation import Conversation, Message, TextBlock
from mini_claude.prompts import NOTES_LINE
from mini_claude.protocol import ModelRequest, ProviderError, ResponseComplete, Usage
from mini_claude.sanitize import clean_text
from mini_claude.settings import Settings

# Notes kept per history: the newest, and two earlier ones that stand in while it is on its way.
KEPT_NOTES = 3


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
        """Enough new history since the last notes, and nothing makes an update unsafe."""
        if not self.may_start(conversation):
            return False
        threshold = self.settings.autocompact_tokens
        tokens = self._history_tokens(conversation)
        if tokens < self.first_update_tokens():
            return False
        notes = self.current(conversation)
        if notes is None:
            return True
        grown = tokens - notes.history_tokens
        return grown >= threshold * self.settings.session_memory_update_pct

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
        """The newest notes, if they describe this history (same epoch, positions inside it)."""
        fitting = self._of(conversation)
        return fitting[0] if fitting else None

    def _of(self, conversation: Conversation) -> list[SessionNotes]:
        return [n for n in reversed(self._kept)
                if n.epoch == conversation.epoch and n.covered <= len(conversation)]

    def usable(self, conversation: Conversation) -> list[SessionNotes]:
        """Notes that have arrived and can replace the history up to a legal cut point, newest
        first; empty when a summary call is needed."""
        now = self.clock()
        return [n for n in self.waited_for(conversation) if n.ready_at <= now]

    def waited_for(self, conversation: Conversation) -> list[SessionNotes]:
        """Like :meth:`usable`, counting notes still on their way (on a simulated clock) as
        arrived: what stands in once the caller has waited for them (see ``arrival``)."""
        cuts = cut_points(conversation.messages)
        return [n for n in self._of(conversation) if any(c <= n.covered for c in cuts)]

    def arrival(self, conversation: Conversation) -> float:
        """When the last notes of this history on their way arrive (now, if none are)."""
        return max([self.clock(), *(n.ready_at for n in self._of(conversation))])

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
        request = self._request(base, ctx)
        snapshot = SessionNotes("", conversation.epoch, len(base),
                                self._history_tokens(conversation), self.clock())
        self._pending = asyncio.ensure_future(self._run(ctx, request, snapshot))
        self._pending.add_done_callback(self._finished)
        return True

    def _request(self, base: list[Message], ctx: SummaryContext) -> ModelRequest:
        """The last call's prefix, then the instruction: the server reads the prefix from cache."""
        instruction = Message("user", [TextBlock(self.instruction())])
        max_tokens = max_tokens_for(
            ctx.thinking, min(self.settings.summary_max_tokens, self.settings.reserve)
        )
        return ModelRequest(
            model=ctx.model, system=ctx.system, messages=[*base, instruction], tools=ctx.tools,
            max_tokens=max_tokens, allow_tool_use=False, cache=True, thinking=ctx.thinking,
        )

    def instruction(self) -> str:
        text = summary_instruction(keep_pointers=self.settings.summary_keep_pointers)
        heading, _, rest = text.partition("\n\n")
        return f"{heading}\n\n{NOTES_LINE}\n\n{rest}"

    def collect(self) -> NotesUpdate | None:
        """What finished since the last call, without waiting for an update still running."""
        news, self._news = self._news, None
        return news

    async def settle(self, timeout: float | None = None) -> NotesUpdate | None:
        """Wait for a running update to finish (at most ``timeout`` seconds, after which it
        goes on running), then say what finished."""
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
        return self.collect()

    def _finished(self, task: asyncio.Task[NotesUpdate]) -> None:
        """Taken as soon as the reply is in, so the transcript holds every complete update."""
        if self._pending is task:
            self._pending = None
        if task.cancelled():
            return
        outcome = task.result()
        if outcome.notes is None:
            self.failures += 1
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
        if covered <= len(conversation):
            now = self.clock()
            self.notes = SessionNotes(text, conversation.epoch, covered, history_tokens, now, now)

    def note_fold(self, removed: Sequence[int], epoch: int) -> None:
        """A fold took whole messages out: the notes still cover the same messages."""
        self._kept = [_after_fold(kept, removed, epoch) for kept in self._kept
                      if kept.epoch == epoch - 1]

    def note_compacted(self) -> None:
        """A summary (from the notes or a call) replaced the history: the notes are in it."""
        self.notes = None

    async def _run(
        self, ctx: SummaryContext, request: ModelRequest, snapshot: SessionNotes
    ) -> NotesUpdate:
        try:
            reply, usage = await _reply(ctx, request)
        except ProviderError as exc:
            return NotesUpdate(None, f"the notes update failed: {exc.message}")
        text = clean_text(extract_summary(reply))
        if not text:
            return NotesUpdate(None, "the notes update came back empty")
        ready = self.clock()
        if self.arrival_delay is not None and usage is not None:
            ready = snapshot.started_at + self.arrival_delay(usage)
        return NotesUpdate(replace(snapshot, text=text, ready_at=ready))

    def _history_tokens(self, conversation: Conversation) -> int:
        return max(0, self.meter.estimate(conversation) - round(self.meter.fixed_tokens))


async def _reply(ctx: SummaryContext, request: ModelRequest) -> tuple[str, Usage | None]:
    final: ResponseComplete | None = None
    async for event in ctx.provider.stream(request):
        if isinstance(event, ResponseComplete):
            final = event
    if final is None:
        return "", None
    return final.message.text, final.usage


def _after_fold(notes: SessionNotes, removed: Sequence[int], epoch: int) -> SessionNotes:
    gone = sum(1 for i in removed if i < notes.covered)
    return replace(notes, epoch=epoch, covered=notes.covered - gone)
