"""``/agents``: the sub-agent types the ``task`` tool offers, one type's file, and a new
agent file in Claude Code's format (``.claude/agents/NAME.md``), opened in the editor."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from mini_claude.private_dirs import make_private_dirs
from mini_claude.project.agent_types import AgentType, load_catalog
from mini_claude.ui.render import note
from mini_claude.visible import visible

if TYPE_CHECKING:
    from mini_claude.ui.host import ReplHost

USAGE = "usage: /agents [name | new <name>]"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NEW_AGENT = """---
name: {name}
description: What this agent is for, in one line (the model reads it to choose the agent)
tools: Read, Grep, Glob
model: inherit
---
You are {name}. Say here how this agent works and what it hands back.
"""


def agents_table(types: list[AgentType], cwd: Path) -> Table:
    table = Table(box=None, padding=(0, 2, 0, 0))
    for column in ("agent", "model", "tools", "from"):
        table.add_column(column, style="bold" if column == "agent" else None)
    for kind in types:
        tools = ", ".join(kind.tools) if kind.tools is not None else "all but task"
        source = _shown_path(kind.source, cwd) if kind.source else "built in"
        table.add_row(kind.name, kind.model or "inherit", tools, source)
    return table


def _shown_path(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        return str(path)


async def agents_command(repl: ReplHost, argument: str) -> None:
    words = argument.split()
    catalog = load_catalog(repl.cwd, repl.settings.home)
    if not words:
        repl.console.print(agents_table(list(catalog.types.values()), repl.cwd))
        for warning in catalog.warnings:
            repl.console.print(note(warning, "warning"))
        repl.console.print(note("show one with /agents NAME; create one with /agents new NAME; "
                                "new files are offered from the next session"))
        return
    if words[0] == "new" and len(words) == 2:
        await _create(repl, words[1])
        return
    if len(words) != 1:
        repl.console.print(note(USAGE, "warning"))
        return
    kind = catalog.get(words[0])
    if kind is None:
        known = ", ".join(catalog.names())
        repl.console.print(note(f"no agent {words[0]!r}; known: {known}", "warning"))
        return
    repl.console.print(Text(f"{kind.name} · {kind.description}", style="bold"))
    repl.console.print(Text(visible(kind.prompt)))


async def _create(repl: ReplHost, name: str) -> None:
    if not _NAME.match(name):
        repl.console.print(note("an agent name is letters, digits, - _ . (up to 64)", "warning"))
        return
    path = repl.cwd / ".claude" / "agents" / f"{name}.md"
    if path.exists():
        repl.console.print(note(f"{_shown_path(path, repl.cwd)} exists already", "warning"))
        return
    try:
        make_private_dirs(path.parent)
        path.write_text(NEW_AGENT.format(name=name), encoding="utf-8")
    except OSError as exc:
        repl.console.print(note(f"cannot write {path}: {exc.strerror or exc}", "error"))
        return
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR")
    if editor:
        try:
            await asyncio.to_thread(subprocess.call, [*shlex.split(editor), str(path)])
        except (OSError, ValueError) as exc:
            repl.console.print(note(f"cannot open {editor}: {exc}", "warning"))
    repl.console.print(note(f"wrote {_shown_path(path, repl.cwd)}; the task tool offers it "
                            "from the next session"))
