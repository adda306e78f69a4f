"""What a Claude Code user types: custom ``/commands``, ``# note``, ``/memory``, ``/init``,
and the questions a project's instruction imports and commands need before they count."""

from __future__ import annotations

import asyncio
import os
import shlex
import subprocess
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from prompt_toolkit.completion import CompleteEvent, Completion
from prompt_toolkit.document import Document
from rich.console import Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from mini_claude.private_dirs import make_private_dirs
from mini_claude.project.commands import CustomCommand
from mini_claude.project.imports import HeldImport, held_lines
from mini_claude.project.memory import append_memory, init_prompt, memory_note, memory_targets
from mini_claude.ui.choice import ChoiceInterrupted, ask_trust, choose
from mini_claude.ui.prompt_input import SlashCommandCompleter
from mini_claude.ui.recall import command_message
from mini_claude.ui.render import note

if TYPE_CHECKING:
    from mini_claude import events as ev
    from mini_claude.conversation import ImageBlock
    from mini_claude.session.wiring import Session
    from mini_claude.ui.host import ReplHost



async def run_custom_command(repl: ReplHost, text: str) -> bool:
    """``/name args`` for a custom command or a skill; False when the name is neither."""
    from mini_claude.session.custom_commands import find_invocation, invocation_events

    session = repl.session
    invocation = find_invocation(session, text)
    if invocation is None:
        return False

    async def ask(command: CustomCommand) -> bool:
        async with repl.question():
            return await ask_command_trust(repl, command)

    async def ask_imports(command: CustomCommand, held: list[HeldImport]) -> bool:
        async with repl.question():
            return await ask_command_imports(repl, command, held)

    def send(prompt: str, images: Sequence[ImageBlock] = ()) -> AsyncIterator[ev.Event]:
        return repl.send(command_message(text, prompt), images)

    await repl.run_events(invocation_events(session, invocation, send, ask, ask_imports))
    return True


async def ask_command_imports(repl: ReplHost, command: CustomCommand,
                              held: list[HeldImport]) -> bool:
    """A project's command attaches files from outside the project: the question an
    instruction import from outside gets, with the same record of the answer."""
    table = Table(box=None, show_header=False)
    for line in held_lines(held, repl.session.cwd):
        table.add_row(line)
    panel = Panel(Group(
        Text(f"/{command.name} comes with this project and attaches files from outside the "
             "project (or from your home folder's private parts). Their text would be sent "
             "to the model:"),
        Text(), table),
        title="[bold]Command attachments[/]", title_align="left", border_style="yellow")
    answer = await ask_trust(repl.console, panel, "Yes, attach them (remembered for this "
                             "project)", "No, leave them out")
    return bool(answer)


async def ask_command_trust(repl: ReplHost, command: CustomCommand) -> bool:
    return bool(await ask_trust(repl.console, command_panel(command),
                                "Yes, approve this command file",
                                "No, send the prompt without running anything"))


def command_panel(command: CustomCommand) -> Panel:
    """What a project's command file would run and allow, as its trust question shows it."""
    lines = [Text(f"/{command.name} comes with this project ({command.path}) and would:"),
             Text()]
    lines += [Text(f"  run  {line}") for line in command.shell_lines]
    lines += [Text(f"  allow without asking  {rule}") for rule in command.allowed_tools]
    lines += [Text(), Text("Commands still go through your permission rules and questions. "
                           "A change to the file asks again.", style="dim")]
    return Panel(Group(*lines), title="[bold]Project command[/]", title_align="left",
                 border_style="yellow")


def command_rows(repl: ReplHost) -> list[tuple[str, str]]:
    """``(usage, description)`` of every custom command and skill, for /help and completion."""
    session = repl.session
    rows = [(f"/{c.name} {c.argument_hint}".rstrip(), f"{c.description} ({c.scope})")
            for c in session.commands.commands.values()]
    rows += [(f"/{s.name}", f"skill: {s.description}") for s in session.skills.skills.values()
             if session.commands.get(s.name) is None]
    return sorted(rows)


class CustomCommandCompleter(SlashCommandCompleter):
    """The ``/`` popup's custom commands and skills: read from the session once it is built
    (the prompt comes up before it)."""

    def __init__(self, rows: Callable[[], list[tuple[str, str]]]) -> None:
        super().__init__(())
        self.rows = rows

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterable[Completion]:
        self.commands = self.rows()
        return super().get_completions(document, complete_event)


def completion_rows(repl: ReplHost) -> list[tuple[str, str]]:
    """``(name, description)`` pairs; none until the session exists."""
    if repl.built_session is None:
        return []
    return [(usage.split()[0][1:], summary) for usage, summary in command_rows(repl)]


async def remember(repl: ReplHost, text: str) -> bool:
    """``# note``: ask which memory file, append the note; False when ``text`` is no note."""
    note_text = memory_note(text)
    if note_text is None:
        return False
    targets = memory_targets(repl.cwd, repl.settings.home)
    repl.console.print(Text(f"Remember “{note_text}” in which memory file?", style="bold"))
    try:
        index = await choose([t.label for t in targets], hint="esc to cancel")
    except ChoiceInterrupted:
        index = None
    if index is None:
        repl.console.print(note("not saved"))
        return True
    target = targets[index].path
    try:
        append_memory(target, note_text, targets[index].boundary)
    except OSError as exc:
        repl.console.print(note(f"cannot write {target}: {exc.strerror or exc}", "error"))
        return True
    repl.session.pending.add(f"[I added this to my memory file {target.name}: {note_text}]")
    repl.console.print(note(f"saved to {target}; the model reads it with your next message"))
    return True


async def memory_command(repl: ReplHost, argument: str) -> None:
    """``/memory``: pick a memory file and edit it in ``$VISUAL`` / ``$EDITOR``."""
    targets = memory_targets(repl.cwd, repl.settings.home)
    loaded = {f.path for f in repl.session.instructions.files}
    labels = [t.label + ("" if t.path in loaded else " · not loaded") for t in targets]
    repl.console.print(Text("Edit which memory file?", style="bold"))
    try:
        index = await choose(labels, hint="esc to cancel")
    except ChoiceInterrupted:
        index = None
    if index is None:
        return
    path = targets[index].path
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    created = not path.exists()
    try:
        if created:
            make_private_dirs(path.parent)
            path.touch()
        before = path.read_bytes()
        code = await asyncio.to_thread(subprocess.call, [*shlex.split(editor), str(path)])
        changed = path.read_bytes() != before
    except (OSError, ValueError) as exc:
        repl.console.print(note(f"cannot open {editor}: {exc}", "error"))
        return
    if not changed:
        if created:
            path.unlink(missing_ok=True)  # a file opened and left empty was never wanted
        repl.console.print(note(f"{path} unchanged"))
        return
    message = f"edited {path}" if code == 0 else f"{editor} exited with code {code}"
    repl.console.print(note(f"{message}; the change applies from the next session"))


async def init_command(repl: ReplHost, argument: str) -> None:
    """``/init``: the model studies the project and writes its CLAUDE.md."""
    extra = f"\n\nAlso: {argument}" if argument else ""
    typed = f"/init {argument}".strip()
    await repl.run_events(repl.user_turn(command_message(typed, init_prompt() + extra)))


async def ask_held_imports(repl: ReplHost) -> None:
    """At start-up: the project's imports from outside it, loaded only if the user says so."""
    session = repl.session
    if not session.instructions.held:
        return
    approved = bool(await ask_trust(repl.console, imports_panel(session),
                                    "Yes, load them (remembered for this project)",
                                    "No, leave them out"))
    session.decide_imports(approved)
    repl.console.print(note("imports loaded" if approved else "imports left out"))


def imports_panel(session: Session) -> Panel:
    """The project's imports from outside it, as their trust question shows them."""
    held = session.instructions.held
    table = Table(box=None, show_header=False)
    for line in held_lines(list(held), session.cwd):
        table.add_row(line)
    panel = Panel(Group(
        Text("This project's instruction files import files from outside the project (or from "
             "your home folder's private parts). Their text would be sent to the model:"),
        Text(), table),
        title="[bold]Instruction imports[/]", title_align="left", border_style="yellow")
    return panel


def instruction_table(repl: ReplHost) -> Table:
    """``/context``: every instruction file loaded, with its tokens."""
    per_token = repl.agent.steps.chars_per_token or 4.0
    table = Table(box=None, show_header=True, header_style="bold", padding=(0, 2, 0, 0))
    table.add_column("instruction file")
    table.add_column("kind")
    table.add_column("tokens", justify="right")
    session = repl.session
    for file in session.instructions.files:
        table.add_row(str(file.path), file.kind, f"{round(len(file.text) / per_token):,}")
    for rule in session.agent.path_rules.rules:
        state = "loaded" if rule in session.agent.path_rules.loaded else "waits for a match"
        table.add_row(str(rule.path), f"rule for {', '.join(rule.globs)} ({state})",
                      f"{round(len(rule.body) / per_token):,}")
    return table
