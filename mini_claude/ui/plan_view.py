"""The todo plan on screen: a compact checklist, and the `/todos` and `/skills` commands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.text import Text

from mini_claude.plan import TodoItem
from mini_claude.ui.render import note

if TYPE_CHECKING:
    from mini_claude.ui.host import ReplHost

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


def show_todos(repl: ReplHost) -> None:
    items = repl.agent.tool_context.plan.items
    if not items:
        repl.console.print(note("no todo list yet: the model writes one with todo_write for "
                                "multi-step work"))
        return
    repl.console.print(checklist(items))


def show_skills(repl: ReplHost) -> None:
    catalog = repl.agent.tool_context.skills
    loaded = set(repl.agent.tool_context.loaded_skills.newest_first())
    if not catalog.skills:
        repl.console.print(note("no skills found (folders with a SKILL.md in .mini-claude/skills/, "
                                f".claude/skills/ or {repl.session.settings.home}/skills/)"))
    for skill in sorted(catalog.skills.values(), key=lambda s: s.name):
        line = Text(f"  {skill.name}", style="bold cyan")
        line.append(f"  ({skill.scope}{', loaded' if skill.name in loaded else ''})", style="dim")
        line.append(f"  {skill.description}")
        repl.console.print(line)
    for warning in catalog.warnings:
        repl.console.print(note(warning, "warning"))
