"""Hooks in the REPL: the one start-up question about a project's settings, and ``/hooks``.

Built in the style of the other project-trust question: a panel naming what
each file would do (hooks, rules, mode, env), then yes or no, remembered for
this content of the files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mini_claude.ui.choice import ask_trust
from mini_claude.ui.render import note
from mini_claude.visible import visible

if TYPE_CHECKING:  # the hooks module loads with the agent chain, after the first frame
    from mini_claude.agent.hooks import HookCommand
    from mini_claude.session.wiring import Session
    from mini_claude.ui.host import ReplHost

NOT_RUN = ("project settings not used (hooks, allow and ask rules, mode, env); "
           "/hooks approve uses them")


def hooks_table(commands: list[HookCommand]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column(style="dim")
    table.add_column()
    for command in commands:
        table.add_row(command.event, visible(command.shown_matcher or "*", one_line=True),
                      visible(command.command, one_line=True))
    return table


async def ask_project_settings(repl: ReplHost) -> None:
    """Ask once about the project's settings files not decided yet; a no is remembered too.

    One question covers every file (``.claude/settings.json``, ``.mini-claude/settings.json``,
    ``.claude/settings.local.json``), naming what each would do; deny rules need no approval.
    """
    session = repl.session
    status = session.project_hooks_status()
    if status in ("none", "approved"):
        return
    if status == "denied":
        repl.console.print(note(NOT_RUN))
        return
    panel = settings_panel(session)
    approved = await ask_trust(repl.console, panel,
                               "Yes, use them (remembered for this project)",
                               "No, only their deny rules")
    if approved is None:
        repl.console.print(note(NOT_RUN))
        return
    session.decide_project_hooks(approved)
    repl.console.print(note("project settings approved" if approved else NOT_RUN))
    repl.refresh_status()


def settings_panel(session: Session) -> Panel:
    """What each project settings file would do, as the trust question shows it."""
    parts: list[RenderableType] = [
        Text("This project's settings files want to change what runs without asking:"),
    ]
    for settings_file in session.permission_setup.layers.project_files():
        parts.append(Text())
        parts.append(Text(str(settings_file.path.relative_to(session.cwd)), style="bold"))
        parts.extend(Text(f"  • {visible(line, one_line=True)}") for line in settings_file.grants)
        if settings_file.refused_env:
            names = visible(", ".join(settings_file.refused_env), one_line=True)
            parts.append(Text(f"  (its env also names {names}: refused, API keys are never "
                              "set for commands)", style="dim"))
    parts += [Text(), Text(
        "Hooks and commands run on your machine with your permissions. Approve only if you "
        "trust this repository; a change to any of these files asks again. Their deny rules "
        "apply either way.", style="dim")]
    panel = Panel(Group(*parts), title=Text("Project settings", style="bold"),
                  title_align="left", border_style="yellow")
    return panel


async def hooks_command(repl: ReplHost, argument: str) -> None:
    """``/hooks`` lists the hooks that run; ``/hooks approve`` approves the project's."""
    session = repl.session
    if argument.strip() == "approve":
        if session.project_hooks_status() == "none":
            repl.console.print(note("this project's settings grant nothing to approve"))
            return
        session.decide_project_hooks(True)
        repl.console.print(note("project settings approved; their hooks and rules count now"))
        repl.refresh_status()
        return
    running = repl.agent.hooks.commands
    if running:
        repl.console.print(hooks_table(running))
    status = session.project_hooks_status()
    if status in ("unknown", "denied"):
        repl.console.print(note(NOT_RUN, "warning"))
    elif not running:
        repl.console.print(note(f"no hooks configured ({session.settings.home}/settings.json or "
                                ".mini-claude/settings.json, under \"hooks\")"))
