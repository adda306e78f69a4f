"""MCP in the REPL: the one start-up question about a project's servers, and ``/mcp``."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from prompt_toolkit.application import in_terminal
from prompt_toolkit.application.current import get_app_or_none
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mini_claude.mcp.manager import McpManager
from mini_claude.mcp.tool import TOOL_PREFIX
from mini_claude.secrets import api_keys, shown_setting
from mini_claude.ui.choice import ask_trust
from mini_claude.ui.render import note

if TYPE_CHECKING:
    from mini_claude.ui.host import ReplHost

STATE_STYLES = {"connected": "green", "connecting": "yellow"}


def trust_panel(manager: McpManager) -> Panel:
    lines = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    lines.add_column(style="bold")
    lines.add_column()
    secrets = api_keys(manager.settings)
    for server in manager.project_servers:
        lines.add_row(server.name, server.describe())
        for name, value in server.env.items():
            lines.add_row("", Text(f"env {name}={shown_setting(name, value, secrets)}",
                                   style="dim"))
        for name, value in server.headers.items():
            lines.add_row("", Text(f"header {name}: {shown_setting(name, value, secrets)}",
                                   style="dim"))
    problems = list(manager.project_file.problems) if manager.project_file else []
    return Panel(
        Group(
            Text("This project's .mcp.json wants to start these MCP servers:"),
            Text(),
            lines,
            Text(),
            *[Text(problem, style="yellow") for problem in problems],
            Text("They run on your machine with your permissions. Approve only if you trust "
                 "this repository; a change to .mcp.json asks again.", style="dim"),
        ),
        title=Text("Project MCP servers", style="bold"),
        title_align="left",
        border_style="yellow",
    )


async def ask_project_trust(repl: ReplHost) -> None:
    """Ask once about a project's servers not decided yet; a denial is remembered too."""
    manager = repl.session.mcp
    status = manager.project_trust()
    if status == "approved":
        return
    if status == "denied":
        repl.console.print(note(manager.unapproved_notice("/mcp approve starts them") or ""))
        return
    approved = await ask_trust(repl.console, trust_panel(manager),
                               "Yes, start them (remembered for this project)",
                               "No, do not start them")
    if approved:
        manager.approve_project()
        repl.console.print(note("project MCP servers approved; they connect in the background"))
        return
    if approved is not None:
        manager.deny_project()
    repl.console.print(note("project MCP servers not started; /mcp approve starts them"))


def watch_servers(repl: ReplHost) -> None:
    """Say in the scrollback when a server connects or fails, without breaking the prompt."""

    def tell(line: str) -> None:
        task = asyncio.get_running_loop().create_task(_print_note(repl, line))
        _pending.add(task)
        task.add_done_callback(_pending.discard)

    repl.session.mcp.on_server_news.append(tell)


_pending: set[asyncio.Task[None]] = set()


async def _print_note(repl: ReplHost, line: str) -> None:
    def write() -> None:
        repl.console.print(note(line))

    if repl.turn_running:
        await repl.view.print_above(write)
        return
    app = get_app_or_none()
    if app is not None and app.is_running:  # the prompt, or a picker such as /resume's
        async with in_terminal():
            write()
    else:
        write()


CONNECTING_LABEL = "connecting MCP servers…"


async def wait_for_connecting_servers(repl: ReplHost) -> None:
    """Before a message is sent: wait (up to the setting) for servers still connecting.

    Their tools are then in the request that may need them, instead of the model
    calling a tool that does not exist yet. Esc interrupts the wait like any turn.
    """
    manager = repl.session.mcp
    if not manager.connecting():
        return
    label = repl.activity.label
    repl.activity.set(CONNECTING_LABEL)
    await manager.wait_settled(repl.session.settings.mcp_startup_wait_seconds)
    repl.activity.set(label)
    late = manager.connecting()
    if late:
        line = note(f"MCP server {', '.join(late)} still connecting; its tools join a later "
                    "message (MINI_CLAUDE_MCP_STARTUP_WAIT_SECONDS)", "warning")
        await repl.view.print_above(lambda: repl.console.print(line))


async def mcp_command(repl: ReplHost, argument: str) -> bool:
    """``/mcp`` lists servers; ``approve`` starts the project's; ``reconnect`` restarts."""
    manager = repl.session.mcp
    if argument.strip() == "approve":
        if not manager.project_servers:
            repl.console.print(note("this project has no .mcp.json servers"))
            return True
        manager.approve_project()
        manager.start()
        repl.console.print(note("project MCP servers approved; they connect in the background"))
        return True
    words = argument.split()
    if words and words[0] == "reconnect":
        restarted = await manager.reconnect(words[1] if len(words) > 1 else None)
        if restarted:
            repl.console.print(note(f"reconnecting {', '.join(restarted)} in the background"))
        else:
            repl.console.print(note("no such server to reconnect (see /mcp)"))
        return True
    if words:
        repl.console.print(note("usage: /mcp, /mcp approve, or /mcp reconnect [server]",
                                "warning"))
        return True
    views = manager.views()
    if not views:
        repl.console.print(note(
            f"no MCP servers configured (.mcp.json here, or {manager.settings.home}/mcp.json)"))
        return True
    table = Table(box=None, padding=(0, 2, 0, 0))
    for column in ("server", "scope", "status", "tools", "runs"):
        table.add_column(column, style="bold" if column == "server" else None)
    for view in views:
        style = STATE_STYLES.get(view.state, "red" if view.state.startswith("failed") else "dim")
        table.add_row(view.name, view.scope, Text(view.state, style=style),
                      str(len(view.tools)), Text(view.target, style="dim"))
    repl.console.print(table)
    for view in views:
        if view.tools:
            prefix = f"{TOOL_PREFIX}{view.tools[0].split('__')[1]}__"
            names = ", ".join(t.removeprefix(prefix) for t in view.tools)
            repl.console.print(Text(f"  {view.name}: ", style="bold").append(names, style=""))
    return True
