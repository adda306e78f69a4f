"""``/shells``: the background shells of this session, and stopping one."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from mini_claude.text import human_size
from mini_claude.tools.background import BackgroundShells
from mini_claude.tools.common import ToolError
from mini_claude.ui.render import note
from mini_claude.visible import visible

if TYPE_CHECKING:
    from mini_claude.ui.host import ReplHost

USAGE = "usage: /shells [<id> | kill <id>]"
SHOWN_OUTPUT_BYTES = 8_000  # the end of a shell's log that /shells <id> prints


def shells_table(shells: BackgroundShells) -> Table:
    table = Table(box=None, padding=(0, 2, 0, 0))
    for column in ("id", "state", "output", "command"):
        table.add_column(column, style="bold" if column == "id" else None)
    for shell in shells.all():
        table.add_row(shell.id, shell.state(), human_size(shell.log_size()), shell.command)
    return table


def running_label(shells: BackgroundShells) -> str | None:
    """``2 shells`` for the status line while background shells run; None when none do."""
    count = len(shells.running())
    if not count:
        return None
    return f"{count} shell" + ("" if count == 1 else "s")


def show_output(repl: ReplHost, shells: BackgroundShells, shell_id: str) -> None:
    """The end of a shell's output, as it is now (the model's reads are not moved on)."""
    try:
        shell = shells.get(shell_id)
        size = shell.log_size()
        with shell.log_path.open("rb") as log:
            log.seek(max(0, size - SHOWN_OUTPUT_BYTES))
            tail = log.read(SHOWN_OUTPUT_BYTES).decode("utf-8", errors="replace")
    except ToolError as exc:
        repl.console.print(note(exc.message, "warning"))
        return
    except OSError as exc:
        repl.console.print(note(f"cannot read the output of {shell_id}: {exc}", "warning"))
        return
    cut = f", the last {human_size(SHOWN_OUTPUT_BYTES)} shown" if size > SHOWN_OUTPUT_BYTES else ""
    repl.console.print(Text(f"{shell.id} · {shell.state()} · {shell.command}", style="bold"))
    repl.console.print(Text(visible(tail) if tail.strip() else "(no output yet)"))
    repl.console.print(note(f"{human_size(size)} of output{cut}"))


async def shells_command(repl: ReplHost, argument: str) -> None:
    shells = repl.session.shells
    words = argument.split()
    if not words:
        if not shells.all():
            repl.console.print(note("no background shells in this session"))
            return
        repl.console.print(shells_table(shells))
        repl.console.print(note("stop one with /shells kill <id>"))
        return
    if len(words) == 1:
        show_output(repl, shells, words[0])
        return
    if len(words) != 2 or words[0] != "kill":
        repl.console.print(note(USAGE, "warning"))
        return
    try:
        shell = shells.get(words[1])
    except ToolError as exc:
        repl.console.print(note(exc.message, "warning"))
        return
    if not shell.running:
        repl.console.print(note(f"{shell.id} is not running ({shell.state()})"))
        return
    await asyncio.to_thread(shells.stop, shell.id)
    repl.console.print(note(f"stopped {shell.id}: {shell.command}"))
