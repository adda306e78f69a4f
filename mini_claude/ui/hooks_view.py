"""Hooks in the REPL: the one start-up question about a project's hooks, and ``/hooks``.

Built in the style of the other project-trust question: a panel naming what
would run, then yes or no, remembered for this content of the file.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mini_claude.ui.choice import ChoiceInterrupted, choose
from mini_claude.ui.render import note

if TYPE_CHECKING:  # the hooks module loads with the agent chain, after the first frame
    from mini_claude.agent.hooks import HookCommand
    from mini_claude.ui.host import ReplHost

APPROVE, DENY = 0, 1
NOT_RUN = "project hooks not run; /hooks approve runs them"


def hooks_table(commands: list[HookCommand]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold")
    table.add_column(style="dim")
    table.add_column()
    for command in commands:
        table.add_row(command.event, command.matcher or "*", command.command)
    return table


async def ask_project_hooks(repl: ReplHost) -> None:
    """Ask once about a project's hooks not decided yet; a denial is remembered too."""
    session = repl.session
    status = session.project_hooks_status()
    if status in ("none", "approved"):
        return
    if status == "denied":
        repl.console.print(note(NOT_RUN))
        return
    project = session.hook_settings.project
    assert project is not None
    repl.console.print(Panel(
        Group(
            Text(f"This project's {project.path.name} ({project.path}) wants to run these "
                 "commands as hooks:"),
            Text(),
            hooks_table(project.commands),
            Text(),
            Text("They run on your machine with your permissions, around tool calls and "
                 "compactions. Approve only if you trust this repository; a change to the file "
                 "asks again.", style="dim"),
        ),
        title=Text("Project hooks", style="bold"), title_align="left", border_style="yellow",
    ))
    try:
        index = await choose(["Yes, run them (remembered for this project)",
                              "No, do not run them"], escape_index=DENY, hint="esc means no")
    except ChoiceInterrupted:
        repl.console.print(note(NOT_RUN))
        return
    session.decide_project_hooks(index == APPROVE)
    repl.console.print(note("project hooks approved" if index == APPROVE else NOT_RUN))


async def hooks_command(repl: ReplHost, argument: str) -> None:
    """``/hooks`` lists the hooks that run; ``/hooks approve`` approves the project's."""
    session = repl.session
    if argument.strip() == "approve":
        if session.project_hooks_status() == "none":
            repl.console.print(note("this project's settings have no hooks"))
            return
        session.decide_project_hooks(True)
        repl.console.print(note("project hooks approved; they run from now on"))
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
