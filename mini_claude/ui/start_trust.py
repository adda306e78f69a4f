"""The one approval panel at start for everything a project brings that could act.

A project can bring MCP servers (``.mcp.json``), settings that grant (hooks, allow
rules, a mode, env), instruction imports from outside it, and commands with shell
lines. When more than one of them waits for a decision, one panel lists them all,
with one answer for all (and a way to see each one's details first); each item
still keeps its own approval record, so a later change to one file asks about that
file alone. A single item gets its own question, as before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from mini_claude.ui.choice import TRUST_HINT, ChoiceInterrupted, choose, keys_typed_before_kept
from mini_claude.ui.render import note

if TYPE_CHECKING:
    from mini_claude.ui.host import ReplHost

ALL_YES, ALL_NO, SHOW_DETAILS = 0, 1, 2
ANSWERS = ["Yes, trust all of them (remembered for this project)", "No, none of them",
           "Show the details first"]


@dataclass
class TrustItem:
    """One thing waiting for approval: a line for the panel, its own panel, its record."""

    summary: str
    details: Callable[[], RenderableType]
    decide: Callable[[bool], None]


def pending_items(repl: ReplHost) -> list[TrustItem]:
    """Everything this project brings that waits for a first decision."""
    from mini_claude.session.custom_commands import command_status, decide_command
    from mini_claude.ui.claude_view import command_panel, imports_panel
    from mini_claude.ui.hooks_view import settings_panel
    from mini_claude.ui.mcp_view import trust_panel

    session = repl.session
    items: list[TrustItem] = []
    manager = session.mcp
    if manager.project_trust() == "unknown":
        names = ", ".join(s.name for s in manager.project_servers)
        items.append(TrustItem(f"MCP servers from .mcp.json: {names}",
                               lambda: trust_panel(manager), _decide_servers(repl)))
    if session.project_hooks_status() == "unknown":
        files = [str(f.path.relative_to(session.cwd))
                 for f in session.permission_setup.layers.project_files()]
        items.append(TrustItem(f"settings (hooks, rules, mode, env) in {', '.join(files)}",
                               lambda: settings_panel(session), _decide_settings(repl)))
    if session.instructions.held:
        count = len(session.instructions.held)
        items.append(TrustItem(f"{count} instruction import(s) from outside the project",
                               lambda: imports_panel(session), session.decide_imports))
    for command in session.commands.commands.values():
        if command.needs_trust and command_status(session, command) == "unknown":
            items.append(TrustItem(
                f"/{command.name}: runs shell lines or allows tools ({command.path.name})",
                lambda c=command: command_panel(c),  # type: ignore[misc]
                lambda yes, c=command: decide_command(session, c, yes)))  # type: ignore[misc]
    return items


def _decide_servers(repl: ReplHost) -> Callable[[bool], None]:
    def decide(approved: bool) -> None:
        if approved:
            repl.session.mcp.approve_project()
        else:
            repl.session.mcp.deny_project()

    return decide


def _decide_settings(repl: ReplHost) -> Callable[[bool], None]:
    def decide(approved: bool) -> None:
        repl.session.decide_project_hooks(approved)
        repl.refresh_status()

    return decide


def combined_panel(items: list[TrustItem]) -> Panel:
    lines: list[RenderableType] = [Text("This project brings things that would run or act on "
                                        "your machine:"), Text()]
    lines += [Text(f"  • {item.summary}") for item in items]
    lines += [Text(), Text("They run with your permissions. Approve only if you trust this "
                           "repository; a change to any of these files asks about that file "
                           "again. Project deny rules apply either way.", style="dim")]
    return Panel(Group(*lines), title=Text("This project", style="bold"), title_align="left",
                 border_style="yellow")


async def ask_start_trust(repl: ReplHost) -> bool:
    """Ask about every pending item at once; False when there were fewer than two (the
    caller then asks its single questions, as before)."""
    items = pending_items(repl)
    if len(items) < 2:
        return False
    approved = await _ask(repl, items)
    if approved is None:  # Ctrl-C: no decision is recorded; the next start asks again
        repl.console.print(note("nothing decided; none of them is used in this session"))
        return True
    for item in items:
        item.decide(approved)
    if approved:
        repl.console.print(note("approved: " + "; ".join(i.summary for i in items)))
    else:
        repl.console.print(note("none of them is used; /mcp approve, /hooks approve, or the "
                                "command itself asks again"))
    return True


async def _ask(repl: ReplHost, items: list[TrustItem]) -> bool | None:
    """Yes or no for all (None: Ctrl-C); "show the details" prints each item's own panel,
    then asks again. Only keys typed after the panel is up answer it; Enter and Esc mean no."""
    with keys_typed_before_kept():
        repl.console.print(combined_panel(items))
        options = ANSWERS
        while True:
            try:
                index = await choose(options, escape_index=ALL_NO, hint=TRUST_HINT,
                                     selected=ALL_NO)
            except ChoiceInterrupted:
                return None
            if index != SHOW_DETAILS:
                return index == ALL_YES
            for item in items:
                repl.console.print(item.details())
            options = ANSWERS[:SHOW_DETAILS]
