"""``/sandbox``: whether commands run in the OS sandbox, what they may write and read, the
network, what is missing; ``/sandbox on`` / ``off`` switches it for this session (the
settings files' ``sandbox.enabled`` keeps it for good)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from mini_claude.ui.render import note

if TYPE_CHECKING:
    from mini_claude.ui.host import ReplHost

USAGE = "usage: /sandbox [on|off]"


async def sandbox_command(repl: ReplHost, argument: str) -> None:
    permissions = repl.session.permission_setup.permissions
    state = permissions.sandbox
    if state is None:
        repl.console.print(note("no sandbox in this session", "warning"))
        return
    word = argument.strip().lower()
    if word in ("on", "off"):
        state.switched = word == "on"
        said = ("commands run in the sandbox from now on" if state.active
                else "commands run unsandboxed from now on" if word == "off"
                else f"the sandbox cannot run here: {state.missing}")
        repl.console.print(note(said, "warning" if word == "on" and not state.active else "dim"))
        return
    if word:
        repl.console.print(note(USAGE, "warning"))
        return
    lines = state.describe(permissions.mode, repl.cwd,
                           permissions.additional_directories)
    for line in lines:
        name, _, rest = line.partition(": ")
        repl.console.print(Text.assemble((f"{name}: ", "dim"), (rest, "")))
