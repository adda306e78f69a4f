"""Tier 4: replace the history with a model-written summary when nothing cheaper is enough.

The compactor decides when (the auto-compact threshold at a turn boundary, or
inside a turn that alone outgrew the window), makes the summary call so that it
reuses the last call's prompt cache, and rebuilds the history with real
headroom. It also refuses to spin: a circuit breaker after repeated failures,
no automatic run on the turn right after a manual one, and a stop when
compactions come back to back without new work in between.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import get_args

from mini_claude.context.base import ResultStore
from mini_claude.context.meter import TokenMeter
from mini_claude.context.notes import SessionNotes
from mini_claude.context.reattach import Reattachment, ReattachSource, collect
from mini_claude.context.rebuild import (
    Limits,
    Planner,
    RebuildError,
    Rebuilt,
    boundary_message,
    cut_points,
    pair_safe_range,
    path_key,
    summarized_range,
    touched_paths,
)
from mini_claude.context.summary_request import (
    DROP_MARGIN_SHARE,
    ShapedInput,
    carries_images,
    cut_results,
    drop_oldest,
    extract_summary,
    range_scope,
    summary_instruction,
    tokens_to_drop,
    unsent_suffix_start,
    without_images,
)
from mini_claude.context.thinking import close_thinking_loop, max_tokens_for, without_thinking
from mini_claude.conversation import Conversation, Message, TextBlock, ToolUseBlock
from mini_claude.protocol import (
    CompactReason,
    ContextStatus,
    ModelRequest,
    PromptTooLong,
    Provider,
    ProviderError,
    ResponseComplete,
    ThinkingConfig,
    ToolSpec,
)
from mini_claude.sanitize import clean_text
from mini_claude.settings import Settings
from mini_claude.tool_kinds import known_tools

REASONS = frozenset(get_args(CompactReason))

# Shares of the effective window for what the rebuilt history keeps besides the summary.
USER_TEXT_SHARE = 0.15  # the user's own words, verbatim (also capped by settings)
FILES_SHARE = 0.10  # re-attached files together (also capped by settings)

# Thrash protection: fewer new tool calls and user messages than this since the last
# compaction means it is coming back with no new work. Re-reads of files the session
# had just been working on do not count: re-reading what the summary replaced is how
# compaction death spirals look. The bar is low because on a small window a few big results can
# honestly fill the room a compaction made. The second such compaction in a row is
# refused.
THRASH_MIN_NEW_WORK = 3
THRASH_STRIKES = 2

THRASH_WARNING = (
    "auto-compact paused: the context filled up again right after the last compaction with "
    "little new work in between, so another summary would only go round in circles. Use "
    "/compact with a focus to choose what to keep, or /clear to start fresh."
)


@dataclass(frozen=True)
class SummaryContext:
    """What a summary call needs to reuse the last call's cache prefix."""

    provider: Provider
    model: str
    system: str
    tools: Sequence[ToolSpec]
    root: Path
    transcript_path: str
    # The session's thinking: the same request parameters keep the cached prefix.
    thinking: ThinkingConfig | None = None


@dataclass(frozen=True)
class CompactionResult:
    summary: str
    tokens_before: int
    tokens_after: int
    messages_compacted: int
    messages_kept: int
    files_reattached: list[str]
    escalations: list[str]
    reattached: list[Reattachment] = field(default_factory=list)
    from_notes: bool = False  # session notes stood in for the summary: no call was made


@dataclass(frozen=True)
class RangeSummary:
    """Part of the history replaced by a summary, everything else kept as it was."""

    summary: str
    start: int  # the range, in the history before
    end: int
    inserted: int  # messages standing for it now: the summary, and an acknowledgement
    messages: list[Message]  # the whole history after
    tokens_before: int
    tokens_after: int


class CompactionError(Exception):
    """A compaction that did not happen; the conversation is exactly as it was."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True, slots=True)
class _LastCompaction:
    """Where the rebuilt history ended, to tell new work from old."""

    epoch: int
    length: int
    known_files: frozenset[str]
    folded_work: int = 0  # work since then that a fold took out of the history


@dataclass(frozen=True, slots=True)
class _Summary:
    text: str
    notes: list[str] = field(default_factory=list)


class Compactor:
    """Decides when to summarize, does it, and keeps count of how it went."""

    def __init__(self, settings: Settings, meter: TokenMeter, store: ResultStore) -> None:
        self.settings = settings
        self.meter = meter
        self.store = store
        self.thrash_warning: str | None = None
        self._failures = 0
        self._failed_at: tuple[int, int, int] | None = None
        self._turns_since_manual: int | None = None
        self._last: _LastCompaction | None = None
        self._back_to_back = 0
        self._sources: list[ReattachSource] = []

    def add_reattach_source(self, source: ReattachSource) -> None:
        """Something whose state is written back verbatim after every summary."""
        self._sources.append(source)

    # ---- when -------------------------------------------------------------------------

    @property
    def breaker_open(self) -> bool:
        return self._failures >= self.settings.compact_failure_limit

    @property
    def consecutive_failures(self) -> int:
        return self._failures

    def note_turn_start(self) -> None:
        if self._turns_since_manual is not None:
            self._turns_since_manual += 1

    def should_auto_compact(self, conversation: Conversation) -> bool:
        """At a turn boundary: above the threshold and nothing says hold off."""
        if self._turns_since_manual is not None and self._turns_since_manual <= 1:
            return False  # the user just compacted by hand; do not second-guess that
        if not self._may_run_automatically(conversation):
            return False
        if not self.meter.status(conversation).compaction_due:
            self.thrash_warning = None  # nothing to compact, nothing to warn about
            return False
        return not self._thrashing(conversation)

    def should_compact_when_idle(self, conversation: Conversation, history_tokens: int) -> bool:
        """At a turn boundary after the prompt cache expired: summarize a large history.

        The next request would re-write the whole prompt into the cache anyway, so a
        summary now costs about what doing nothing costs, and unlike clearing old
        results (microcompact) it keeps what they said. Small histories are left to
        microcompact.
        """
        if self._turns_since_manual is not None and self._turns_since_manual <= 1:
            return False
        if not self._may_run_automatically(conversation):
            return False
        floor = min(self.settings.idle_compact_min_tokens, self.settings.effective_window // 4)
        if history_tokens < floor:
            return False
        return not self._thrashing(conversation)

    def needs_mid_turn_compaction(self, conversation: Conversation) -> bool:
        """Inside a turn, after tiers 1-3: still above the threshold, or the next call won't fit."""
        if not self._may_run_automatically(conversation):
            return False
        status = self.meter.status(conversation)
        next_output = min(self.settings.max_output_tokens, self.settings.reserve)
        wont_fit = status.tokens + next_output > self.settings.window
        return (status.compaction_due or wont_fit) and not self._thrashing(conversation)

    def status(self, conversation: Conversation) -> ContextStatus:
        """The meter's reading, and why auto-compact will not fire if it will not."""
        status = self.meter.status(conversation)
        return replace(status, autocompact_hold=self._hold(status))

    def _hold(self, status: ContextStatus) -> str | None:
        """What keeps auto-compact from firing when due; None when nothing does.

        The status line says this rather than promise a summary that will not come.
        """
        if not status.autocompact_at:
            return None
        if self.breaker_open:
            return f"auto-compact stopped after {self._failures} failed summaries"
        if self.thrash_warning is not None:
            return "auto-compact paused: no new work since the last summary"
        if status.compaction_due and self._turns_since_manual == 0:
            return "auto-compact waits a turn after /compact"
        return None

    def work_since_last_compaction(self, conversation: Conversation) -> int | None:
        """New tool calls and user messages since the last summary (None: none this epoch)."""
        return self._new_work(conversation)

    def _may_run_automatically(self, conversation: Conversation) -> bool:
        if not self.settings.auto_compact or self.breaker_open:
            return False
        # A failure on this very history would fail again: wait for something to change.
        return self._failed_at != _state_of(conversation)

    def _thrashing(self, conversation: Conversation) -> bool:
        work = self._new_work(conversation)
        if work is None or work >= THRASH_MIN_NEW_WORK:
            self.thrash_warning = None
            return False
        if self._back_to_back + 1 >= THRASH_STRIKES:
            self.thrash_warning = THRASH_WARNING
            return True
        return False

    def note_fold(self, before: Sequence[Message], removed: Sequence[int], epoch: int) -> None:
        """Folding took whole exchanges out: keep the count of new work going across it."""
        last = self._last
        if last is None or last.epoch != epoch - 1:
            return
        gone = set(removed)
        self._last = _LastCompaction(
            epoch,
            last.length - sum(1 for i in gone if i < last.length),
            last.known_files,
            last.folded_work + _work_in(
                [m for i, m in enumerate(before) if i in gone and i >= last.length],
                last.known_files,
            ),
        )

    def _new_work(self, conversation: Conversation) -> int | None:
        """Tool calls and user messages since the last compaction, re-reads not counted."""
        last = self._last
        if last is None or conversation.epoch != last.epoch:
            return None
        return last.folded_work + _work_in(conversation.messages[last.length :], last.known_files)

    # ---- doing it ---------------------------------------------------------------------

    async def compact(
        self,
        conversation: Conversation,
        ctx: SummaryContext,
        *,
        reason: CompactReason,
        focus: str | None = None,
        instructions: str | None = None,
        notes: Sequence[SessionNotes] = (),
    ) -> CompactionResult:
        """Summarize and rebuild ``conversation`` in place, or raise and leave it untouched.

        With ``notes`` (session memory, newest first) the first that fits stands in for the
        summary and no call is made; when none can, a summary call is made as usual.
        Runs whenever called: the breaker, the manual rule and thrash protection
        only gate the automatic triggers above.
        """
        if reason not in REASONS:
            raise ValueError(f"unknown compaction reason {reason!r}")
        work = self._new_work(conversation)
        try:
            result = next((r for n in notes if (r := self._from_notes(conversation, ctx, n))),
                          None)
            if result is None:
                result = await self._compact(conversation, ctx, focus, instructions)
        except CompactionError:
            self._failures += 1
            self._failed_at = _state_of(conversation)
            raise
        self._failures = 0
        self._failed_at = None
        if reason == "manual":
            self._turns_since_manual = 0
            self._back_to_back = 0
            self.thrash_warning = None
        elif work is not None and work < THRASH_MIN_NEW_WORK:
            self._back_to_back += 1
        else:
            self._back_to_back = 0
        return result

    async def summarize_range(
        self,
        conversation: Conversation,
        ctx: SummaryContext,
        start: int,
        end: int,
        *,
        instructions: str | None = None,
    ) -> RangeSummary:
        """Summarize ``messages[start:end]`` (widened to whole turns and call/result pairs).

        Nothing is changed here: the caller installs and records the result. The
        summary request carries the history up to the range's end as it was sent (so it
        reads from the prompt cache); messages after the range lose their thinking,
        which was bound to the history the summary replaced, and a tool loop left open
        there (an interrupted turn) is closed, since its call no longer starts with the
        thinking the API asks of an open loop.
        """
        messages = list(conversation.messages)
        start, end = pair_safe_range(messages, start, end)
        if end <= start:
            raise CompactionError("nothing to summarize there")
        state = _state_of(conversation)
        tokens_before = self.meter.estimate(conversation)
        summary = await self._summarize(
            messages[:end], conversation.epoch, ctx, None, instructions,
            scope=range_scope(messages, start, end),
        )
        if _state_of(conversation) != state:
            raise CompactionError("the conversation changed while it was being summarized")
        boundary = boundary_message(summary.text, ctx.transcript_path, end - start, (), ())
        rebuilt = summarized_range(messages, start, end, boundary)
        closed = close_thinking_loop(rebuilt[start:])
        if closed is not None:
            rebuilt = [*rebuilt[:start], *closed]
        self._turns_since_manual = 0  # asked for by the user: auto-compact waits a turn
        return RangeSummary(
            summary=summary.text,
            start=start,
            end=end,
            inserted=len(rebuilt) - start - (len(messages) - end),
            messages=rebuilt,
            tokens_before=tokens_before,
            tokens_after=self.meter.estimate_messages(rebuilt),
        )

    def notes_fit(
        self, conversation: Conversation, ctx: SummaryContext, notes: Sequence[SessionNotes]
    ) -> bool:
        """Whether one of ``notes`` would stand in for a summary now (nothing is changed)."""
        messages = list(conversation.messages)
        reattached = collect(self._sources, messages)
        before = self.meter.estimate(conversation)
        for candidate in notes:
            try:
                self._rebuild(messages, candidate.text, ctx, reattached, before,
                              max_cut=candidate.covered)
            except CompactionError:
                continue
            return True
        return False

    def _from_notes(
        self, conversation: Conversation, ctx: SummaryContext, notes: SessionNotes
    ) -> CompactionResult | None:
        """Replace what the notes cover with them; None when no rebuild fits (stale notes)."""
        tokens_before = self.meter.estimate(conversation)
        messages = list(conversation.messages)
        reattached = collect(self._sources, messages)
        try:
            rebuilt = self._rebuild(messages, notes.text, ctx, reattached, tokens_before,
                                    max_cut=notes.covered)
        except CompactionError:
            return None
        return self._install(conversation, messages, rebuilt, tokens_before, _Summary(
            notes.text, ["session notes replaced the history; no summary call was needed"]
        ), reattached, from_notes=True)

    async def _compact(
        self,
        conversation: Conversation,
        ctx: SummaryContext,
        focus: str | None,
        instructions: str | None = None,
    ) -> CompactionResult:
        tokens_before = self.meter.estimate(conversation)
        messages = list(conversation.messages)
        state = _state_of(conversation)
        if not cut_points(messages):
            raise CompactionError(
                "nothing to compact yet: the history holds only what the next request needs"
            )
        summary = await self._summarize(messages, conversation.epoch, ctx, focus, instructions)
        if _state_of(conversation) != state:
            raise CompactionError("the conversation changed while it was being summarized")
        reattached = collect(self._sources, messages)
        rebuilt = self._rebuild(messages, summary.text, ctx, reattached, tokens_before)
        return self._install(conversation, messages, rebuilt, tokens_before, summary, reattached)

    def _install(
        self,
        conversation: Conversation,
        messages: list[Message],
        rebuilt: Rebuilt,
        tokens_before: int,
        summary: _Summary,
        reattached: list[Reattachment],
        *,
        from_notes: bool = False,
    ) -> CompactionResult:
        conversation.replace_all(rebuilt.messages)
        self._last = _LastCompaction(
            conversation.epoch,
            len(conversation),
            frozenset(touched_paths(messages) | {path_key(p) for p in rebuilt.files}),
        )
        return CompactionResult(
            summary=summary.text,
            tokens_before=tokens_before,
            tokens_after=self.meter.estimate(conversation),
            messages_compacted=rebuilt.compacted,
            messages_kept=rebuilt.kept,
            files_reattached=rebuilt.files,
            escalations=[*summary.notes, *rebuilt.escalations],
            reattached=reattached,
            from_notes=from_notes,
        )

    # ---- the summary call -------------------------------------------------------------

    async def _summarize(
        self,
        messages: list[Message],
        epoch: int,
        ctx: SummaryContext,
        focus: str | None,
        instructions: str | None = None,
        *,
        scope: str = "",
    ) -> _Summary:
        base = messages[: unsent_suffix_start(messages)]
        if not base:
            raise CompactionError("nothing to summarize yet")
        instruction = Message(
            "user",
            [
                TextBlock(
                    summary_instruction(
                        focus, instructions, keep_pointers=self.settings.summary_keep_pointers,
                        scope=scope,
                    )
                )
            ],
        )
        max_tokens = max_tokens_for(
            ctx.thinking, min(self.settings.summary_max_tokens, self.settings.reserve)
        )
        fits_below = self.settings.window - max_tokens
        shaped, drop_goal = ShapedInput(base, 0), 0
        whole = self.meter.estimate_messages([*base, instruction], epoch=epoch)
        if whole > fits_below:
            drop_goal = whole - fits_below + round(whole * DROP_MARGIN_SHARE)
            shaped = self._shorten(base, drop_goal)
        retries = 0
        while True:
            reshaped = shaped.reshaped
            # Leaving out old turns, or standing a line for an image, changes what later
            # thinking was bound to: send none.
            changed = reshaped or carries_images(shaped.messages)
            request = ModelRequest(
                model=ctx.model,
                system=ctx.system,
                messages=[
                    *without_images(
                        without_thinking(shaped.messages) if changed else shaped.messages
                    ),
                    instruction,
                ],
                tools=ctx.tools,
                max_tokens=max_tokens,
                allow_tool_use=False,
                cache=not reshaped,  # a reshaped prefix would write a cache entry nobody reads
                thinking=None if changed else ctx.thinking,
            )
            try:
                reply = await _reply_text(ctx.provider, request)
                break
            except PromptTooLong as exc:
                retries += 1
                if retries > self.settings.summary_retry_limit:
                    raise CompactionError(
                        "the summary request stayed too long for the model after leaving out "
                        f"old turns {self.settings.summary_retry_limit} times"
                    ) from None
                drop_goal += tokens_to_drop(
                    self.meter.estimate_messages(shaped.messages, epoch=epoch),
                    server_tokens=exc.tokens,
                    server_maximum=exc.maximum,
                )
                shaped = self._shorten(base, drop_goal)
            except ProviderError as exc:
                raise CompactionError(f"the summary request failed: {exc.message}") from None
        text = clean_text(extract_summary(reply))
        if not text:
            raise CompactionError("the model returned an empty summary")
        notes: list[str] = []
        if shaped.dropped:
            notes.append(
                f"left the {shaped.dropped} oldest messages out of the summary request to fit"
            )
        if shaped.cut:
            notes.append(f"cut {shaped.cut} long results to their start and end for the summary")
        return _Summary(text, notes)

    def _shorten(self, base: list[Message], drop_goal: int) -> ShapedInput:
        shaped = drop_oldest(base, drop_goal, self._size_of) or cut_results(
            base, drop_goal, self._size_of
        )
        if shaped is None:
            raise CompactionError(
                "the history is too long to summarize even after leaving out its oldest turns "
                "and cutting its long results"
            )
        return shaped

    # ---- the rebuild ------------------------------------------------------------------

    def _rebuild(
        self,
        messages: list[Message],
        summary: str,
        ctx: SummaryContext,
        reattached: Sequence[Reattachment],
        tokens_before: int,
        *,
        max_cut: int | None = None,
    ) -> Rebuilt:
        # Short of the target, a history that is smaller than before and no longer due
        # for a summary is still taken: throwing away a summary 3% over helps nobody.
        accept_below = min(tokens_before, self.settings.autocompact_tokens)
        planner = Planner(
            messages=messages,
            summary=summary,
            transcript_path=ctx.transcript_path,
            root=ctx.root,
            limits=replace(self.limits(), accept_below=accept_below),
            store=self.store,
            estimate=self.meter.estimate_messages,  # the new history has no anchor yet
            size_of=self._size_of,
            reattached=reattached,
            max_cut=max_cut,
        )
        try:
            return planner.plan()
        except RebuildError as exc:
            raise CompactionError(str(exc)) from None

    def _target_tokens(self, effective: int) -> int:
        """The headroom target: a share of the effective window, but never so small that
        the system prompt and tool schemas leave the history less than half of that share
        (on a small window they alone can fill it, and no summary could ever meet it)."""
        fixed = min(round(self.meter.fixed_tokens), effective)
        share = self.settings.post_compact_target(fixed)
        return min(effective, max(share, fixed + share // 2))

    def limits(self) -> Limits:
        """This session's budgets for a rebuilt history."""
        settings = self.settings
        effective = settings.effective_window
        per_token = self.meter.chars_per_token
        return Limits(
            target_tokens=self._target_tokens(effective),
            tail_tokens=int(effective * settings.compact_tail_share),
            user_chars=int(min(settings.kept_user_tokens, effective * USER_TEXT_SHARE) * per_token),
            file_chars=int(settings.reattach_file_tokens * per_token),
            files_chars=int(
                min(settings.reattach_total_tokens, effective * FILES_SHARE) * per_token
            ),
            max_files=settings.reattach_max_files,
            keep_recent_results=settings.keep_recent_results,
            spare_unread=settings.compact_spares_unread,
        )

    # ---- measuring --------------------------------------------------------------------

    def _size_of(self, message: Message) -> int:
        """Tokens one message adds to a request, weighed the way the meter weighs history."""
        return self.meter.estimate_messages([message]) - self.meter.estimate_messages([])


def _work_in(messages: Sequence[Message], known_files: frozenset[str]) -> int:
    """Typed user messages and tool calls, minus re-reads of what a summary replaced."""
    work = 0
    for message in messages:
        if message.is_plain_user_message:
            work += 1
        for use in message.tool_uses:
            if not known_tools().traits(use.name).is_work:
                continue
            if _rereads(use, known_files):
                continue  # reading back what the summary replaced is not progress
            work += 1
    return work


def _rereads(use: ToolUseBlock, known_files: frozenset[str]) -> bool:
    traits = known_tools().traits(use.name)
    path = use.input.get(traits.file_argument) if traits.file_argument else None
    return traits.kind == "read" and isinstance(path, str) and path_key(path) in known_files


def _state_of(conversation: Conversation) -> tuple[int, int, int]:
    return conversation.epoch, conversation.version, len(conversation)


async def _reply_text(provider: Provider, request: ModelRequest) -> str:
    """The text of the reply; tool calls (which tool_choice none should prevent) are ignored."""
    final: ResponseComplete | None = None
    async for event in provider.stream(request):
        if isinstance(event, ResponseComplete):
            final = event
    if final is None:
        raise CompactionError("the summary request ended without a reply")
    return final.message.text
