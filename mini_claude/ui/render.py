"""Turning streamed text and tool activity into things printed once to the scrollback.

Streaming Markdown is split into finished blocks (paragraphs, lists, fenced code)
as it arrives: each finished block is rendered once, and only the unfinished
tail stays live. Re-rendering the whole answer per token gets slower as the
answer grows and breaks once it is taller than the screen.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, assert_never

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from mini_claude.context.placeholders import count_lines, utf8_size
from mini_claude.protocol import CompactReason, TierReport, tier_row
from mini_claude.text import format_tokens, human_size, short_target

if TYPE_CHECKING:  # events load with the agent chain, after the first frame
    from mini_claude.events import CompactionFinished, ToolFinished

CODE_THEME = "monokai"
RESULT_PREVIEW_LINES = 4
DIFF_PREVIEW_LINES = 40
LINE_PREVIEW_CHARS = 160
MAIN_ARGUMENT_KEYS = ("command", "pattern", "path", "focus", "description")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^ {0,3}([-*+]|\d{1,9}[.)])\s")


@dataclass
class MarkdownStream:
    """Splits streamed Markdown into finished blocks and an unfinished tail.

    A blank line only ends a block once the next line shows it was not a
    list or an indented continuation; a fenced code block ends at its fence.
    """

    _lines: list[str] = field(default_factory=list)  # complete lines of the open block
    _partial: str = ""  # the current line, not yet ended by a newline
    _fence: str | None = None  # the opening fence while inside a code block
    _blank_pending: bool = False

    def feed(self, text: str) -> list[str]:
        """Add streamed text; returns the blocks it finished, oldest first."""
        finished: list[str] = []
        data = self._partial + text
        *complete, self._partial = data.split("\n")
        for line in complete:
            block = self._take_line(line)
            if block:
                finished.append(block)
        return finished

    def flush(self) -> str | None:
        """End of the message: whatever is left is a finished block."""
        if self._partial:
            self._lines.append(self._partial)
            self._partial = ""
        block = self._emit()
        self._fence = None
        self._blank_pending = False
        return block

    def reset(self) -> None:
        """Drop everything not yet finished (the stream restarted)."""
        self._lines.clear()
        self._partial = ""
        self._fence = None
        self._blank_pending = False

    @property
    def tail(self) -> str:
        """The unfinished text, as it should be shown live."""
        return "\n".join([*self._lines, self._partial]) if self._lines else self._partial

    def _take_line(self, line: str) -> str | None:
        if self._fence is not None:
            self._lines.append(line)
            if line.strip().startswith(self._fence) and line.strip().strip(self._fence[0]) == "":
                self._fence = None
                return self._emit()
            return None
        if not line.strip():
            if self._lines:
                self._blank_pending = True
            return None
        finished: str | None = None
        fence = _FENCE.match(line)
        if self._lines and (fence or (self._blank_pending and not self._continues(line))):
            finished = self._emit()
        elif self._blank_pending:
            self._lines.append("")
        self._blank_pending = False
        self._lines.append(line)
        if fence:
            self._fence = fence.group(1)
        return finished

    def _continues(self, line: str) -> bool:
        """Whether a line after a blank one still belongs to the open block."""
        if line[:1] in (" ", "\t"):
            return True
        return bool(_LIST_ITEM.match(line)) and bool(_LIST_ITEM.match(self._lines[0]))

    def _emit(self) -> str | None:
        block = "\n".join(self._lines).strip("\n")
        self._lines.clear()
        self._blank_pending = False
        return block or None


def markdown(block: str) -> RenderableType:
    # Imported on first use: the Markdown parser is a sizeable share of start-up time.
    from rich.markdown import Markdown

    return TrimmedBlankLines(Markdown(block, code_theme=CODE_THEME))


class TrimmedBlankLines:
    """A renderable without its leading and trailing blank rows.

    rich pads code blocks and tables with empty rows; between blocks the
    presenter already prints one blank line, and the padding made it up to four.
    """

    def __init__(self, inner: RenderableType) -> None:
        self.inner = inner

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self.inner, options, pad=False)
        while lines and not "".join(s.text for s in lines[-1]).strip():
            lines.pop()
        start = 0
        while start < len(lines) and not "".join(s.text for s in lines[start]).strip():
            start += 1
        for line in lines[start:]:
            yield from line
            yield Segment.line()


# ---- tool calls ------------------------------------------------------------------------


def main_argument(tool_input: dict[str, Any]) -> str:
    """What a tool call is about, on one short line."""
    for key in MAIN_ARGUMENT_KEYS:
        value = tool_input.get(key)
        if isinstance(value, str) and value:
            return short_target(value)
    if not tool_input:
        return ""
    plan = tool_input.get("plan")
    if isinstance(plan, str) and len(tool_input) == 1:  # exit_plan_mode: the plan's heading
        first = next((line.strip("# ").strip() for line in plan.splitlines() if line.strip()), "")
        return short_target(first)
    todos = tool_input.get("todos")
    if isinstance(todos, list) and len(tool_input) == 1:
        return todo_argument(todos)
    return short_target(json.dumps(tool_input, ensure_ascii=False))


def todo_argument(todos: list[Any]) -> str:
    """A todo list in words: ``4 items, 1 done · now: write the tests``."""
    items = [t for t in todos if isinstance(t, dict)]
    done = sum(1 for t in items if t.get("status") == "completed")
    words = f"{len(items)} item{'s' if len(items) != 1 else ''}, {done} done"
    current = next((t.get("content") for t in items if t.get("status") == "in_progress"), None)
    if isinstance(current, str) and current.strip():
        words += f" · now: {short_target(' '.join(current.split()))}"
    return words


def tool_call_line(name: str, tool_input: dict[str, Any]) -> Text:
    line = Text("● ", style="bold cyan")
    line.append(name, style="bold")
    argument = main_argument(tool_input)
    if argument:
        line.append(f"({argument})", style="default")
    return line


def tool_result_view(event: ToolFinished) -> RenderableType:
    """A collapsed view of a result: first lines, size, how many lines are hidden."""
    body = event.display if event.display is not None else event.result.content
    if event.display_kind == "diff" and event.display is not None and not event.result.is_error:
        return _indented(diff_view(body, DIFF_PREVIEW_LINES))
    style = "red" if event.result.is_error else "default"
    text = Text.from_ansi(body) if event.display_kind == "ansi" else Text(body)
    return _indented(_collapsed(text, style))


def diff_view(diff: str, max_lines: int = DIFF_PREVIEW_LINES) -> Text:
    """A unified diff with additions green, removals red and hunk headers cyan."""
    lines = diff.splitlines()
    shown = lines[:max_lines]
    out = Text()
    for line in shown:
        out.append(_clip(line) + "\n", style=_diff_style(line))
    if len(lines) > len(shown):
        out.append(f"… +{len(lines) - len(shown)} lines\n", style="dim")
    out.rstrip()
    return out


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "bold"
    if line.startswith("+"):
        return "green"
    if line.startswith("-"):
        return "red"
    if line.startswith("@@"):
        return "cyan"
    return "default"


def _collapsed(text: Text, style: str) -> Text:
    plain = text.plain
    if not plain.strip():
        return Text("(no output)", style="dim")
    lines = text.split("\n", allow_blank=True)
    while lines and not lines[-1].plain.strip():
        lines.pop()
    out = Text()
    errors = style == "red"  # a denial or an error is read whole: the terminal wraps it
    for line in lines[:RESULT_PREVIEW_LINES]:
        long = len(line) > LINE_PREVIEW_CHARS and not errors
        clipped = line[:LINE_PREVIEW_CHARS] if long else line
        clipped.stylize(style)
        out.append_text(clipped)
        out.append("\n")
    hidden = len(lines) - RESULT_PREVIEW_LINES
    size = human_size(utf8_size(plain))
    if hidden > 0:
        out.append(f"… +{hidden} lines ({count_lines(plain)} lines, {size})", style="dim")
    else:
        out.rstrip()
    return out


def _clip(line: str) -> str:
    return line if len(line) <= LINE_PREVIEW_CHARS else line[: LINE_PREVIEW_CHARS - 1] + "…"


def _indented(body: Text) -> RenderableType:
    """Hang the result under its tool line with a corner mark; long lines wrap under it."""
    return hanging(Text("  ⎿  ", style="dim"), body)


def hanging(prefix: Text, body: RenderableType) -> RenderableType:
    """``prefix`` then ``body``, every wrapped line starting under the body, never at column 0."""
    grid = Table.grid(padding=0, expand=True)
    grid.add_column(width=prefix.cell_len, no_wrap=True)
    grid.add_column(overflow="fold", ratio=1)
    grid.add_row(prefix, body)
    return grid


# ---- one-line notes --------------------------------------------------------------------


def note(text: str, level: str = "info") -> Text:
    """A short line beside the conversation: tier reports, notices, retries."""
    style = {"info": "dim", "warning": "yellow", "error": "bold red"}.get(level, "dim")
    return Text(f"  · {text}", style=style)


def hanging_note(text: str, level: str = "info") -> RenderableType:
    """A note whose wrapped lines (a long saved-result path) stay indented under it."""
    style = {"info": "dim", "warning": "yellow", "error": "bold red"}.get(level, "dim")
    return hanging(Text("  · ", style=style), Text(text, style=style))


def error_line(message: str) -> Text:
    return Text(f"✗ {message}", style="bold red")


def tier_summary(reports: list[TierReport]) -> str:
    """What the tiers did before one model call, on one line (the detail is for /verbose)."""
    touched: dict[str, int] = {}
    for report in reports:
        touched[report.tier] = touched.get(report.tier, 0) + report.results_touched
    parts = []
    for tier, count in touched.items():
        row = tier_row(tier)
        parts.append(f"{tier} {row.verb} {row.counted(count)}")
    freed = sum(r.tokens_freed for r in reports)
    return f"context: {', '.join(parts)}; {format_tokens(freed)} tokens freed"


def diff_stat(diff: str) -> str:
    """``+3 −1`` for a unified diff."""
    lines = diff.splitlines()
    added = sum(1 for line in lines if line.startswith("+") and not line.startswith("+++"))
    removed = sum(1 for line in lines if line.startswith("-") and not line.startswith("---"))
    return f"+{added} −{removed}"


def full_result_text(event: ToolFinished) -> str:
    """The whole of what the preview of a result stands for."""
    if event.display_kind == "diff" and event.display is not None:
        return event.display
    if event.original is not None:
        return event.original
    return event.display if event.display is not None else event.result.content


def is_collapsed(event: ToolFinished) -> bool:
    """Whether the preview leaves something out that Ctrl-O can show."""
    body = event.display if event.display is not None else event.result.content
    lines = body.rstrip("\n").split("\n")
    if event.display_kind == "diff" and event.display is not None:
        return len(lines) > DIFF_PREVIEW_LINES
    return (len(lines) > RESULT_PREVIEW_LINES or any(len(x) > LINE_PREVIEW_CHARS for x in lines)
            or full_result_text(event) != body)


def steering_line(text: str) -> Text:
    """A message the user sent during a turn, as the model received it."""
    line = Text("> ", style="bold magenta")
    line.append(text)
    line.append("  (steering this turn)", style="dim")
    return line


def compaction_why(reason: CompactReason) -> str:
    """Why a compaction ran, in the words the screen uses."""
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
        case "task-boundary":
            return "a todo item done"
        case _:
            assert_never(reason)


def compaction_line(event: CompactionFinished) -> Text:
    """The line a compaction leaves, live and when a resumed session is recapped."""
    line = Text("✓ compacted", style="green")
    line.append(f" ({compaction_why(event.reason)}): {format_tokens(event.tokens_before)} → "
                f"{format_tokens(event.tokens_after)} tokens", style="default")
    if event.from_notes:
        line.append(" · from session notes, no summary call", style="dim")
    return line
