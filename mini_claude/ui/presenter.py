"""One match over the agent's events: what each one prints and what the live area says."""

from __future__ import annotations

from typing import assert_never

from rich.console import Console, RenderableType
from rich.text import Text

from mini_claude import events as ev
from mini_claude.protocol import CompactReason
from mini_claude.text import format_tokens
from mini_claude.ui.live import LiveView, TurnActivity
from mini_claude.ui.render import (
    MarkdownStream,
    error_line,
    markdown,
    note,
    tool_call_line,
    tool_result_view,
)

AUTH_HINT = "check the API key (ANTHROPIC_API_KEY / OPENAI_API_KEY) and the endpoint"


class TurnPresenter:
    """Prints finished output once, keeps the unfinished tail and the activity live."""

    def __init__(self, console: Console, view: LiveView, activity: TurnActivity) -> None:
        self.console = console
        self.view = view
        self.activity = activity
        self.stream = MarkdownStream()

    async def handle(self, event: ev.Event) -> None:
        match event:
            case ev.ModelCallStarted():
                self.activity.set("thinking…")
            case ev.TextDelta():
                await self._text(event.text)
            case ev.Thinking():
                await self._flush_text()
                size = "redacted" if event.redacted else f"{event.chars:,} chars"
                await self._print(Text(f"✻ thinking… ({size})", style="dim"))
            case ev.AssistantMessage():
                await self._flush_text()
            case ev.TurnFinished(stop_reason="max_tokens"):
                await self._print(note("the reply was cut off at the output token limit",
                                       "warning"))
            case ev.ToolStarted():
                await self._flush_text()
                self.activity.set(f"running {event.name}")
                await self._print(Text(), tool_call_line(event.name, event.input))
            case ev.ToolFinished():
                self.activity.set("thinking…")
                await self._print(tool_result_view(event))
            case ev.TierFired():
                await self._print(note(event.report.describe()))
            case ev.CompactionStarted():
                await self._flush_text()
                self.activity.set(f"compacting ({_why(event.reason)}, "
                                  f"{format_tokens(event.tokens_before)} tokens)…")
            case ev.CompactionFinished():
                self.activity.set("thinking…")
                await self._print(Text(), compaction_line(event))
            case ev.CompactionFailed():
                self.activity.set("thinking…")
                await self._print(note(f"compaction failed: {event.error}", "warning"))
            case ev.Retrying():
                self.stream.reset()  # the reply starts over; its unfinished tail is void
                await self._print(note(f"{event.error}; retrying in {event.delay_seconds:.1f}s "
                                       f"(attempt {event.attempt})", "warning"))
            case ev.Notice():
                await self._print(note(event.text, event.level))
            case ev.TurnError():
                await self._flush_text()
                hint = [note(AUTH_HINT, "warning")] if event.kind == "auth" else []
                await self._print(error_line(event.message), *hint)
            case ev.TurnStarted() | ev.UsageReported() | ev.TurnFinished():
                pass  # the status bar and the REPL read these
            case _:
                assert_never(event)
        self.activity.tail = self.stream.tail
        self.view.refresh()

    async def finish(self, *, interrupted: bool) -> None:
        """The turn is over: print what was still live, and say so if it was cut short."""
        if interrupted:
            tail = self.stream.tail
            self.stream.reset()
            out: list[RenderableType] = [Text(tail)] if tail.strip() else []
            out.append(Text("  ⎿  Interrupted · tell the agent what to do instead", style="red"))
            await self._print(*out)
        else:
            await self._flush_text()
        self.activity.tail = ""

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


def _why(reason: CompactReason) -> str:
    match reason:
        case "auto":
            return "auto-compact"
        case "manual":
            return "/compact"
        case "tool":
            return "requested by the model"
        case "mid-turn" | "idle":
            return reason
        case "prompt-too-long":
            return "prompt too long"
        case _:
            assert_never(reason)


def compaction_line(event: ev.CompactionFinished) -> Text:
    line = Text("✓ compacted", style="green")
    line.append(f" ({_why(event.reason)}): {format_tokens(event.tokens_before)} → "
                f"{format_tokens(event.tokens_after)} tokens", style="default")
    return line
