"""The todo plan on screen: a compact checklist, and the `/todos` and `/skills` commands."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from mini_claude.ui.checklist import checklist
from mini_claude.ui.render import note

if TYPE_CHECKING:
    from mini_claude.ui.host import ReplHost

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
