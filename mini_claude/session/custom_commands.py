"""Running a custom slash command or a skill the user typed as ``/name args``.

Shared by the REPL and print mode: find what the name means, fill in the
arguments, run the ``!`command` `` lines through the normal permission path
(with the command's ``allowed-tools`` allowed for that turn), then run the turn
with the command's model. A project's command that would run or allow anything
does so only after its file was approved; the caller says how to ask. The files a
project's command attaches from outside the project follow the rule of instruction
imports: held until the user approved that command importing that file.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from mini_claude import events as ev
from mini_claude.context.persist import admit_result
from mini_claude.conversation import ImageBlock, ToolUseBlock
from mini_claude.models import resolve_model
from mini_claude.permissions.rules import Rule, RuleError, parse_rule
from mini_claude.project.boundary import ProjectBoundary
from mini_claude.project.commands import (
    SHELL_LINE,
    CustomCommand,
    own_text,
    run_shell_lines,
    split_invocation,
    with_arguments,
)
from mini_claude.project.imports import HeldImport, ImportGate, held_lines
from mini_claude.project.instructions import approve_imports, import_approved
from mini_claude.project.skills import Skill, load_text
from mini_claude.project.trust import ProjectTrust
from mini_claude.secrets import api_keys, mask
from mini_claude.session.mentions import attachment_targets
from mini_claude.tools.permission_gate import permissions_of

if TYPE_CHECKING:
    from mini_claude.agent.loop import Agent
    from mini_claude.session.wiring import Session

NOT_APPROVED = "[not run: this project's command file is not approved]"
HELD_NOTICE = "not attached until approved in the REPL: {}"
# text and images -> the turn
TurnRunner = Callable[[str, Sequence[ImageBlock]], AsyncIterator[ev.Event]]
AskTrust = Callable[[CustomCommand], Awaitable[bool]]
# the command and the files it would attach from outside the project -> attach them?
AskImports = Callable[[CustomCommand, list[HeldImport]], Awaitable[bool]]


@dataclass(frozen=True, slots=True)
class Invocation:
    """``/name args`` resolved to a command or a skill."""

    arguments: str
    command: CustomCommand | None = None
    skill: Skill | None = None

    @property
    def name(self) -> str:
        return self.command.name if self.command else self.skill.name if self.skill else ""


def find_invocation(session: Session, text: str) -> Invocation | None:
    split = split_invocation(text)
    if split is None:
        return None
    name, arguments = split
    command = session.commands.get(name)
    if command is not None:
        return Invocation(arguments, command=command)
    skill = session.skills.get(name)
    return Invocation(arguments, skill=skill) if skill is not None else None


def command_status(session: Session, command: CustomCommand) -> str:
    """"approved" when nothing needs trust or the user approved this content of the file."""
    if not command.needs_trust:
        return "approved"
    return ProjectTrust(session.settings.home).status(
        session.cwd, command.path, command.path.read_bytes() if command.path.is_file() else b"")


def decide_command(session: Session, command: CustomCommand, approved: bool) -> None:
    trust = ProjectTrust(session.settings.home)
    record = trust.approve if approved else trust.deny
    record(session.cwd, command.path, command.path.read_bytes())


async def invocation_events(
    session: Session, invocation: Invocation, turn: TurnRunner, ask: AskTrust | None = None,
    ask_imports: AskImports | None = None,
) -> AsyncIterator[ev.Event]:
    """The whole invocation: shell lines first, then the turn, with its overrides."""
    agent = session.agent
    if invocation.skill is not None:
        skill = invocation.skill
        agent.tool_context.loaded_skills.add(skill.name)
        agent.transcript.event("skill_loaded", name=skill.name)
        text = load_text(skill, session.cwd)
        if invocation.arguments:
            text += f"\n\nARGUMENTS: {invocation.arguments}"
        async for event in turn(text, ()):
            yield event
        return
    command = invocation.command
    assert command is not None
    trusted = await _trusted(session, command, ask)
    if not trusted:
        yield ev.Notice(f"/{command.name} comes with this project and would run or allow "
                        f"commands; they are not run until you approve {command.path}",
                        "warning")
    text = with_arguments(command.body, invocation.arguments)
    rules, warnings = (allowed_rules(command, agent.tool_context.root) if trusted
                       else ((), []))
    for warning in warnings:
        yield ev.Notice(warning, "warning")
    with turn_overrides(agent, rules, command.model):
        if command.shell_lines:
            if trusted:
                outputs: list[ev.Event] = []
                text = await run_shell_lines(text, _shell_runner(agent, outputs))
                for event in outputs:
                    yield event
            else:
                text = SHELL_LINE.sub(NOT_APPROVED, text)
        held = await _held_attachments(session, command, ask_imports)
        for line in held_lines(held, session.cwd):
            yield ev.Notice(HELD_NOTICE.format(line), "warning")
        prepared = await session.prepare(text, withheld={item.target for item in held})
        for event in prepared.events:
            yield event
        async for event in turn(prepared.text, prepared.images):
            yield event


async def _held_attachments(session: Session, command: CustomCommand,
                            ask: AskImports | None) -> list[HeldImport]:
    """What the command itself (not the arguments typed) attaches from outside the project
    and may not yet: asked about when there is someone to ask, and the answer remembered."""
    held = outside_attachments(session, command)
    if not held or ask is None:
        return held
    approved = await ask(command, held)
    approve_imports(session.settings.home, session.cwd, tuple(held), approved)
    return [] if approved else held


def outside_attachments(session: Session, command: CustomCommand) -> list[HeldImport]:
    """The files a project's command names (``@/abs``, ``@../x``, a link out, an image
    path) that the rule for instruction imports holds, not approved yet."""
    if command.scope != "project":
        return []  # the user's own command, like the user's own instruction files
    gate = _import_gate(session)
    targets = attachment_targets(own_text(command), session.agent.tool_context.root)
    return [HeldImport(command.path, target) for target in targets
            if not gate.allows(command.path, target)]


def _import_gate(session: Session) -> ImportGate:
    """The gate instruction imports pass, for this project and home."""
    boundary = ProjectBoundary.of(session.cwd, session.settings.home)
    trust = ProjectTrust(session.settings.home)
    return ImportGate(boundary, lambda source, target: import_approved(
        trust, boundary.root, source, target))


async def _trusted(session: Session, command: CustomCommand, ask: AskTrust | None) -> bool:
    status = command_status(session, command)
    if status != "unknown" or ask is None:
        return status == "approved"
    approved = await ask(command)
    decide_command(session, command, approved)
    return approved


def allowed_rules(command: CustomCommand, root: Path) -> tuple[tuple[Rule, ...], list[str]]:
    """The command's ``allowed-tools`` as rules (Claude Code's syntax or our tool names);
    what cannot be read is a warning, and is asked about as usual."""
    rules: list[Rule] = []
    warnings: list[str] = []
    source = f"allowed-tools of /{command.name}"
    for written in command.allowed_tools:
        try:
            rules.append(parse_rule(written, source, root))
        except RuleError as exc:
            warnings.append(f"/{command.name}: allowed-tools entry {written!r} is not used "
                            f"({exc}); it is asked about as usual")
    return tuple(rules), warnings


@contextlib.contextmanager
def turn_overrides(agent: Agent, allowed: tuple[Rule, ...], model: str | None) -> Iterator[None]:
    """The command's allowed tools and model, for this turn only."""
    permissions = permissions_of(agent.tool_context)
    settings = agent.settings
    permissions.turn_allow = allowed
    if model:
        chosen = resolve_model(model, settings.provider, os.environ)
        agent.reconfigure(settings.with_model(chosen.model, chosen.plan_model))
    try:
        yield
    finally:
        permissions.turn_allow = ()
        if model:
            agent.reconfigure(settings)


def _shell_runner(agent: Agent, events: list[ev.Event]) -> Callable[[str], Awaitable[str]]:
    """``run_shell`` through the registry: the permission rules, the question, tier 0."""

    async def run(command: str) -> str:
        use = ToolUseBlock(f"command-shell-{len(events)}", "run_shell", {"command": command})
        events.append(ev.ToolStarted(use.id, use.name, use.input))
        output = await agent.registry.execute(use.name, use.input, agent.tool_context)
        output = replace(output, content=mask(output.content, api_keys(agent.settings)))
        block, report = admit_result(output, use, agent.store, agent.settings)
        if report is not None:
            events.append(ev.TierFired(report))
        events.append(ev.ToolFinished(use.id, use.name, block, output.display,
                                      output.display_kind, original=output.content))
        return block.content

    return run


def prompt_events(
    session: Session, prompt: str, max_requests: int | None = None, ask: AskTrust | None = None
) -> AsyncIterator[ev.Event]:
    """The turn for a prompt (print mode): a ``/command args`` or ``/skill-name args``
    expanded first; otherwise its ``@path`` files and images attached, as in the REPL."""
    invocation = find_invocation(session, prompt)

    def turn(text: str, images: Sequence[ImageBlock]) -> AsyncIterator[ev.Event]:
        return session.agent.turn(text, max_requests, images)

    if invocation is None:
        return _prepared_turn(session, prompt, turn)
    return invocation_events(session, invocation, turn, ask)


async def _prepared_turn(session: Session, text: str,
                         turn: TurnRunner) -> AsyncIterator[ev.Event]:
    prepared = await session.prepare(text)
    for event in prepared.events:
        yield event
    async for event in turn(prepared.text, prepared.images):
        yield event
