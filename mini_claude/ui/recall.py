"""What the screen can bring back: the recent conversation on resume, the latest collapsed
tool result (Ctrl-O, /expand) and the latest compaction summary (/summary).

A resumed session is redrawn from its transcript as it was written, not from the
compacted history the model sees: a summary replaced the user's messages there,
while the user remembers the exchanges, the compactions and the interruptions.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import get_args

from rich.console import Group, RenderableType
from rich.text import Text

from mini_claude.conversation import Message, SummaryBlock, TextBlock, ToolResultBlock
from mini_claude.plan import REMINDER_TAG
from mini_claude.protocol import CompactReason
from mini_claude.steering import steering_text
from mini_claude.transcript import Landmark
from mini_claude.ui.render import compaction_line, hanging, steering_line, tool_call_line

RECAP_EXCHANGES = 3  # user messages shown, with what followed each
RECAP_TEXT_LINES = 6
RECAP_SUMMARY_LINES = 12


KEPT_RESULTS = 20  # collapsed results /expand N can bring back


@dataclass
class Recall:
    """The latest things shown collapsed, kept so that a key or a command can show them whole."""

    results: list[tuple[str, str]] = field(default_factory=list)  # (tool, text), oldest first
    summary: str | None = None

    def keep_result(self, name: str, text: str) -> None:
        self.results.append((name, text))
        del self.results[:-KEPT_RESULTS]

    def full_result(self, back: int = 1) -> RenderableType:
        """The ``back``-th latest collapsed result (1: the latest), whole."""
        if not self.results:
            return Text("  · no collapsed tool result yet", style="dim")
        if not 1 <= back <= len(self.results):
            return Text(f"  · /expand takes 1 to {len(self.results)} (1 is the latest of the "
                        f"{len(self.results)} collapsed results kept)", style="dim")
        name, text = self.results[-back]
        which = "" if back == 1 else f" ({back} back)"
        head = Text(f"── full result of {name}{which} ", style="bold")
        return Group(head, Text(text), Text("── end of result", style="dim"))

    def full_summary(self) -> RenderableType:
        if self.summary is None:
            return Text("  · the conversation has not been compacted yet", style="dim")
        return Group(Text("── latest compaction summary", style="bold"), Text(self.summary),
                     Text("── end of summary", style="dim"))


def latest_summary(messages: Sequence[Message]) -> str | None:
    for message in reversed(messages):
        for block in message.blocks:
            if isinstance(block, SummaryBlock):
                return block.summary
    return None


def _recap_start(messages: Sequence[Message]) -> int:
    """Where the last few exchanges begin: at the third-last message the user typed."""
    starts = [i for i, m in enumerate(messages) if m.is_plain_user_message]
    if len(starts) >= RECAP_EXCHANGES:
        return starts[-RECAP_EXCHANGES]
    return starts[0] if starts else len(messages)


def recap_as_written(
    messages: Sequence[Message], landmarks: Sequence[Landmark]
) -> list[RenderableType]:
    """The last few exchanges as they happened (``messages`` as the transcript wrote them),
    with the compactions and interruptions between them where they came."""
    first = _recap_start(messages)
    out: list[RenderableType] = []
    if first:
        out.append(Text(f"… {first} earlier messages", style="dim"))
    earlier = [m for m in landmarks if m.kind == "compaction" and m.at <= first]
    if earlier:
        out.append(_summary_line(earlier[-1].summary))
    shown = [m for m in landmarks if m.at > first or (m.at == first and m.kind != "compaction")]
    for index in range(first, len(messages) + 1):
        out.extend(_landmark_line(m) for m in shown if m.at == index)
        if index < len(messages):
            out.extend(_message_lines(messages[index]))
    return out


def _landmark_line(landmark: Landmark) -> RenderableType:
    if landmark.kind == "interrupted":
        return Text("  ⎿  Interrupted", style="red")
    from mini_claude.events import CompactionFinished

    reasons: tuple[CompactReason, ...] = get_args(CompactReason)
    reason: CompactReason = next((r for r in reasons if r == landmark.reason), "auto")
    return compaction_line(CompactionFinished(
        reason, landmark.tokens_before, landmark.tokens_after, landmark.summary))


def _summary_line(summary: str) -> RenderableType:
    return hanging(Text("  ⎿  ", style="dim"),
                   Text("summary: " + _clip(summary, RECAP_SUMMARY_LINES), style="dim"))


def recap(messages: Sequence[Message]) -> list[RenderableType]:
    """The last few exchanges, compactly, as they would have looked in the scrollback."""
    first = _recap_start(messages)
    out: list[RenderableType] = []
    summary = latest_summary(messages[:first + 1]) or latest_summary(messages)
    if first:
        out.append(Text(f"… {first} earlier messages", style="dim"))
    if summary is not None:
        out.append(_summary_line(summary))
    for message in messages[first:]:
        out.extend(_message_lines(message))
    return out


COMMAND_TAG = "command-name"  # as Claude Code marks a slash command's expanded prompt
_COMMAND = re.compile(rf"^<{COMMAND_TAG}>(.*?)</{COMMAND_TAG}>\n?", re.DOTALL)
_REMINDER = re.compile(rf"<{REMINDER_TAG}>.*?</{REMINDER_TAG}>", re.DOTALL)


def command_message(typed: str, prompt: str) -> str:
    """A slash command's prompt, marked with what the user typed, so a resumed session
    shows ``/init`` rather than the page of instructions it stood for."""
    return f"<{COMMAND_TAG}>{typed.strip()}</{COMMAND_TAG}>\n{prompt}"


def typed_text(message: Message) -> str:
    """What the user typed: the command they gave, or their first text without the
    reminders and hook context added to it."""
    first = next((b.text for b in message.blocks if isinstance(b, TextBlock)), "")
    command = _COMMAND.match(first)
    if command:
        return command.group(1)
    return _REMINDER.sub("", first).strip()


def _message_lines(message: Message) -> list[RenderableType]:
    out: list[RenderableType] = []
    if message.is_plain_user_message:
        out.append(Text())
        out.append(hanging(Text("> ", style="bold magenta"), Text(typed_text(message))))
        return out
    if message.role == "assistant":
        if message.text.strip():
            out.append(hanging(Text("  "), Text(_clip(message.text.strip(), RECAP_TEXT_LINES))))
        out.extend(tool_call_line(use.name, use.input) for use in message.tool_uses)
        return out
    for block in message.blocks:
        if isinstance(block, ToolResultBlock):
            first_line = block.content.strip().split("\n", 1)[0]
            style = "red" if block.is_error else "dim"
            out.append(hanging(Text("  ⎿  ", style="dim"), Text(first_line[:200], style=style)))
        elif (steered := steering_text(block)) is not None:
            out.append(steering_line(steered))
    return out


def _clip(text: str, lines: int) -> str:
    rows = text.split("\n")
    if len(rows) <= lines:
        return text
    return "\n".join(rows[:lines]) + f"\n… +{len(rows) - lines} lines"
