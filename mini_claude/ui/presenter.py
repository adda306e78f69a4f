"""One table over the agent's events: what each one prints and what the live area says."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from rich.console import Console, RenderableType
from rich.text import Text

from mini_claude import events as ev
from mini_claude.context.compact_notices import failure_notice
from mini_claude.models import key_variables
from mini_claude.plan import TodoItem
from mini_claude.protocol import TierReport
from mini_claude.text import format_tokens
from mini_claude.ui.checklist import checklist, current_step, live_lines
from mini_claude.ui.live import LiveView, TurnActivity
from mini_claude.ui.recall import Recall
from mini_claude.ui.render import (
    MarkdownStream,
    compaction_line,
    compaction_why,
    diff_stat,
    error_line,
    full_result_text,
    hanging,
    hanging_note,
    is_collapsed,
    markdown,
    note,
    steering_line,
    tier_summary,
    tool_call_line,
    tool_result_view,
)

LIVE_OUTPUT_LINES = 5  # of a running command, under the spinner
INTERRUPTED_TURN = "Interrupted · tell the agent what to do instead"


def auth_hint() -> str:
    """What to check when a key is refused: every provider's key variable."""
    return f"check the API key ({' / '.join(key_variables())}) and the endpoint"


class TurnPresenter:
    """Prints finished output once, keeps the unfinished tail and the activity live."""

    def __init__(self, console: Console, view: LiveView, activity: TurnActivity, *,
                 verbose: bool = False, recall: Recall | None = None,
                 shown_before: Callable[[str], bool] | None = None,
                 interrupted_label: str = INTERRUPTED_TURN) -> None:
        self.console = console
        self.view = view
        self.activity = activity
        self.stream = MarkdownStream()
        self.verbose = verbose
        self.recall = recall or Recall()
        self.shown_before = shown_before or (lambda _text: False)
        self.interrupted_label = interrupted_label
        self._tier_reports: list[TierReport] = []
        self._tasks: dict[str, str] = {}  # running sub-agents' status labels
        self._plan: tuple[TodoItem, ...] | None = None  # changed in this turn: printed at its end

    async def handle(self, event: ev.Event) -> None:
        """Print what the event finished and update the live area; one small method a type."""
        await _HANDLERS[type(event)](self, event)
        self.activity.tail = self.stream.tail
        self.view.refresh()

    # ---- one method per event type ---------------------------------------------------

    async def _on_model_call(self, event: ev.ModelCallStarted) -> None:
        await self._flush_tiers()
        self.activity.set("thinking…")

    async def _on_text(self, event: ev.TextDelta) -> None:
        await self._text(event.text)

    async def _on_thinking(self, event: ev.Thinking) -> None:
        await self._flush_text()
        size = "redacted" if event.redacted else f"{event.chars:,} chars"
        expand = ""
        if event.text:
            self.recall.keep_result("thinking", event.text)
            expand = " · ctrl+o to expand"
        await self._print(Text(f"✻ thinking… ({size}{expand})", style="dim"))

    async def _on_assistant_message(self, event: ev.AssistantMessage) -> None:
        await self._flush_text()

    async def _on_turn_finished(self, event: ev.TurnFinished) -> None:
        if event.stop_reason == "max_tokens":
            await self._print(note("the reply was cut off at the output token limit",
                                   "warning"))

    async def _on_tool_started(self, event: ev.ToolStarted) -> None:
        await self._flush_text()
        self.activity.set(f"running {event.name}")
        await self._print(Text(), tool_call_line(event.name, event.input))

    async def _on_tool_progress(self, event: ev.ToolProgress) -> None:
        self.activity.output = event.last_lines(LIVE_OUTPUT_LINES)
        self.recall.keep_result(f"{event.name} (so far)", event.recent)

    async def _on_tool_finished(self, event: ev.ToolFinished) -> None:
        self.activity.output = []
        self.activity.set("thinking…")
        await self._print(self._result_view(event))

    async def _on_tier_fired(self, event: ev.TierFired) -> None:
        if self.verbose:
            await self._print(hanging_note(event.report.describe()))
        else:
            self._tier_reports.append(event.report)

    async def _on_compaction_started(self, event: ev.CompactionStarted) -> None:
        await self._flush_text()
        self.activity.set(f"compacting ({compaction_why(event.reason)}, "
                          f"{format_tokens(event.tokens_before)} tokens)…")

    async def _on_compaction_finished(self, event: ev.CompactionFinished) -> None:
        self.activity.set("thinking…")
        self.recall.summary = event.summary
        await self._print(Text(), compaction_line(event))

    async def _on_compaction_failed(self, event: ev.CompactionFailed) -> None:
        self.activity.set("thinking…")
        notice = failure_notice(event)
        if notice is not None:
            await self._print(note(notice, "warning"))

    async def _on_retrying(self, event: ev.Retrying) -> None:
        self.stream.reset()  # the reply starts over; its unfinished tail is void
        await self._print(note(f"{event.error}; retrying in {event.delay_seconds:.1f}s "
                               f"(attempt {event.attempt})", "warning"))

    async def _on_notice(self, event: ev.Notice) -> None:
        await self._print(hanging_note(event.text, event.level))

    async def _on_turn_error(self, event: ev.TurnError) -> None:
        await self._flush_text()
        hint = [note(auth_hint(), "warning")] if event.kind == "auth" else []
        await self._print(error_line(event.message), *hint)

    async def _on_turn_limit(self, event: ev.TurnLimitReached) -> None:
        await self._flush_text()
        await self._print(note(f"stopped after {event.requests} model calls "
                               "(the turn limit)", "warning"))

    async def _on_task_progress(self, event: ev.TaskProgress) -> None:
        self._tasks[event.task_id] = event.label
        if event.state != "running":
            del self._tasks[event.task_id]
        self.activity.set(" | ".join(self._tasks.values()) or "thinking…")

    async def _on_plan_updated(self, event: ev.PlanUpdated) -> None:
        step = current_step(event.items)
        if step:
            self.activity.set(step)
        self.activity.plan = live_lines(event.items)  # updates in place while running
        self._plan = event.items

    async def _on_notes_updated(self, event: ev.NotesUpdated) -> None:
        if self.verbose:
            await self._print(hanging_note(
                f"session notes updated ({event.covered_messages} messages covered)"))

    async def _on_steering(self, event: ev.SteeringDelivered) -> None:
        await self._flush_text()
        await self._print(Text(), steering_line(event.text))

    async def _on_read_elsewhere(self, event: ev.TurnStarted | ev.UsageReported) -> None:
        """The status bar and the REPL read these."""

    async def finish(self, *, interrupted: bool) -> None:
        """The turn is over: print what was still live, and say so if it was cut short."""
        await self._flush_tiers()
        if interrupted:
            tail = self.stream.tail
            self.stream.reset()
            out: list[RenderableType] = [Text(tail)] if tail.strip() else []
            out.append(Text(f"  ⎿  {self.interrupted_label}", style="red"))
            await self._print(*out)
        else:
            await self._flush_text()
        self.activity.tail = ""
        if self._plan is not None:  # the plan as it stands now, once, into the scrollback
            await self._print(checklist(self._plan))
            self._plan = None
        self.activity.plan = []

    async def _flush_tiers(self) -> None:
        """One dim line for everything the tiers did since the last model call."""
        reports, self._tier_reports = self._tier_reports, []
        if reports:
            await self._print(hanging_note(tier_summary(reports)))

    def _result_view(self, event: ev.ToolFinished) -> RenderableType:
        if is_collapsed(event):
            self.recall.keep_result(event.name, full_result_text(event))
        shown = event.display_kind == "diff" and event.display is not None
        if shown and not event.result.is_error and self.shown_before(event.display or ""):
            summary = f"{diff_stat(event.display or '')} (the diff is shown above)"
            return hanging(Text("  ⎿  ", style="dim"), Text(summary, style="dim"))
        return tool_result_view(event)

    async def _text(self, text: str) -> None:
        self.activity.set("responding…")
        self.activity.streamed_chars += len(text)
        blocks = self.stream.feed(text)
        if blocks:
            await self._print_blocks(blocks)

    # ---- printing -------------------------------------------------------------------

    async def _flush_text(self) -> None:
        block = self.stream.flush()
        if block:
            await self._print_blocks([block])

    async def _print_blocks(self, blocks: list[str]) -> None:
        out: list[RenderableType] = []
        for block in blocks:
            out.append(Text())  # a blank line before each paragraph or code block
            out.append(markdown(block))
        await self._print(*out)

    async def _print(self, *renderables: RenderableType) -> None:
        def write() -> None:
            for renderable in renderables:
                self.console.print(renderable)

        await self.view.print_above(write)




_Handler = Callable[[TurnPresenter, Any], Awaitable[None]]

# Every event type the agent emits, and the method that shows it.
_HANDLERS: dict[type[Any], _Handler] = {
    ev.TurnStarted: TurnPresenter._on_read_elsewhere,
    ev.ModelCallStarted: TurnPresenter._on_model_call,
    ev.TextDelta: TurnPresenter._on_text,
    ev.Thinking: TurnPresenter._on_thinking,
    ev.AssistantMessage: TurnPresenter._on_assistant_message,
    ev.ToolStarted: TurnPresenter._on_tool_started,
    ev.ToolProgress: TurnPresenter._on_tool_progress,
    ev.ToolFinished: TurnPresenter._on_tool_finished,
    ev.UsageReported: TurnPresenter._on_read_elsewhere,
    ev.TierFired: TurnPresenter._on_tier_fired,
    ev.CompactionStarted: TurnPresenter._on_compaction_started,
    ev.CompactionFinished: TurnPresenter._on_compaction_finished,
    ev.NotesUpdated: TurnPresenter._on_notes_updated,
    ev.CompactionFailed: TurnPresenter._on_compaction_failed,
    ev.Retrying: TurnPresenter._on_retrying,
    ev.Notice: TurnPresenter._on_notice,
    ev.TurnError: TurnPresenter._on_turn_error,
    ev.TurnFinished: TurnPresenter._on_turn_finished,
    ev.TurnLimitReached: TurnPresenter._on_turn_limit,
    ev.TaskProgress: TurnPresenter._on_task_progress,
    ev.PlanUpdated: TurnPresenter._on_plan_updated,
    ev.SteeringDelivered: TurnPresenter._on_steering,
}
