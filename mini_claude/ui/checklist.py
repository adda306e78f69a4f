"""The todo plan as lines: the checklist printed after todo_write, and what the spinner shows."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Group, RenderableType
from rich.text import Text

from mini_claude.plan import TodoItem

MARKS = {"pending": ("☐", "default"), "in_progress": ("▶", "bold cyan"),
         "completed": ("☒", "dim")}


def checklist(items: Sequence[TodoItem]) -> RenderableType:
    """``⎿ ☒ done · ▶ current · ☐ next``, one item a line, under a one-line header."""
    done = sum(item.status == "completed" for item in items)
    lines: list[RenderableType] = [Text(f"  ⎿  todo list · {done}/{len(items)} done",
                                        style="dim")]
    for item in items:
        mark, style = MARKS[item.status]
        text = Text(f"     {mark} ", style=style)
        text.append(item.content, style="strike dim" if item.status == "completed" else style)
        lines.append(text)
    return Group(*lines)


def live_lines(items: Sequence[TodoItem]) -> list[str]:
    """The checklist under the spinner while a turn runs, redrawn as it changes."""
    return [f"  {MARKS[item.status][0]} {item.content}" for item in items]


def current_step(items: Sequence[TodoItem]) -> str | None:
    """What the spinner row says while the plan has a step in progress."""
    return next((item.content for item in items if item.status == "in_progress"), None)
