"""Custom slash commands: Markdown prompts in ``.claude/commands/``, as Claude Code reads them.

``.claude/commands/frontend/component.md`` is ``/frontend:component``. Its body is
the prompt; ``$ARGUMENTS`` is everything typed after the name, ``$1`` … ``$9``
the words of it (quotes group). Front matter may give ``description``,
``argument-hint``, ``allowed-tools`` (calls allowed without asking for that
turn) and ``model``. ``!`command` `` runs the command before the prompt is sent
and puts its output there; ``@path`` attaches a file. Commands are read from the
project (``.claude/commands/``, ``.mini-claude/commands/``) and from the user's
folders (``~/.claude/commands/``, ``<home>/commands/``); a project's wins a name.

A project's command comes with the repository: where it would run something
(``!`` lines) or allow something (``allowed-tools``), it does so only once the
user approved that file (the project-trust record), like project hooks.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from mini_claude.project.boundary import ProjectBoundary
from mini_claude.project.front_matter import read, string_list
from mini_claude.text import shorten

PROJECT_COMMAND_DIRS = (Path(".claude") / "commands", Path(".mini-claude") / "commands")
HOME_COMMAND_DIR = "commands"
SHELL_LINE = re.compile(r"!`([^`\n]+)`")
POSITIONAL = re.compile(r"\$([1-9])")
MAX_COMMAND_CHARS = 50_000
DESCRIPTION_CHARS = 80


@dataclass(frozen=True, slots=True)
class CustomCommand:
    name: str  # "frontend:component"
    path: Path
    body: str
    description: str
    argument_hint: str = ""
    allowed_tools: tuple[str, ...] = ()
    model: str | None = None
    scope: str = "project"  # or "user"

    @property
    def shell_lines(self) -> list[str]:
        return SHELL_LINE.findall(self.body)

    @property
    def needs_trust(self) -> bool:
        """A project's command that would run or allow something."""
        return self.scope == "project" and bool(self.shell_lines or self.allowed_tools)


@dataclass
class CommandCatalog:
    commands: dict[str, CustomCommand] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> CustomCommand | None:
        """By full name, or by its last part when only one command has it."""
        name = name.lower()
        if name in self.commands:
            return self.commands[name]
        short = [c for n, c in self.commands.items() if n.split(":")[-1] == name]
        return short[0] if len(short) == 1 else None


def split_invocation(text: str) -> tuple[str, str] | None:
    """``("compact", "keep the API notes")`` for ``/compact keep the API notes``.

    A message that starts with a path (``/usr/bin/env is missing``) is not a command.
    """
    stripped = text.strip()
    if not stripped.startswith("/"):
        return None
    parts = stripped[1:].split(maxsplit=1)
    if not parts or "/" in parts[0]:
        return None
    return parts[0].lower(), parts[1].strip() if len(parts) > 1 else ""


def command_roots(cwd: Path, home: Path, user_home: Path) -> list[tuple[Path, str]]:
    """Where commands are looked for, the ones that win a name first."""
    return [
        *((cwd / d, "project") for d in PROJECT_COMMAND_DIRS),
        (user_home / ".claude" / "commands", "user"),
        (home / HOME_COMMAND_DIR, "user"),
    ]


def find_commands(cwd: Path, home: Path, user_home: Path | None = None) -> CommandCatalog:
    """Every command file; a project's through the project's boundary (a link out of the
    project is skipped with a warning)."""
    catalog = CommandCatalog()
    boundary = ProjectBoundary.of(cwd, home, user_home)
    for root, scope in command_roots(cwd, home, user_home or Path.home()):
        try:
            files = sorted(p for p in root.rglob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            name = ":".join(path.relative_to(root).with_suffix("").parts).lower()
            command = _read(path, name, scope, catalog.warnings,
                            boundary if scope == "project" else None)
            if command is None:
                continue
            other = catalog.commands.get(name)
            if other is not None:
                catalog.warnings.append(f"command /{name} in {path} is hidden by {other.path}")
                continue
            catalog.commands[name] = command
    return catalog


def _read(path: Path, name: str, scope: str, warnings: list[str],
          boundary: ProjectBoundary | None) -> CustomCommand | None:
    parsed = read(path, "command", warnings, MAX_COMMAND_CHARS, boundary)
    if parsed is None:
        return None
    fields, body = parsed[0], parsed[1].strip()
    if not body:
        warnings.append(f"{path}: the command has no prompt; skipped")
        return None
    description = str(fields.get("description") or _first_line(body))
    model = fields.get("model")
    return CustomCommand(
        name=name,
        path=path,
        body=body,
        description=shorten(description, DESCRIPTION_CHARS, marker="…"),
        argument_hint=str(fields.get("argument-hint") or ""),
        allowed_tools=tuple(string_list(fields.get("allowed-tools"))),
        model=str(model) if model else None,
        scope=scope,
    )


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()
    return ""


def with_arguments(body: str, arguments: str) -> str:
    """``$ARGUMENTS`` and ``$1`` … ``$9`` filled in; arguments the body does not place are
    appended, so nothing typed is lost."""
    words = _words(arguments)
    placed = "$ARGUMENTS" in body or POSITIONAL.search(body) is not None
    text = body.replace("$ARGUMENTS", arguments)
    text = POSITIONAL.sub(lambda m: words[int(m.group(1)) - 1]
                          if int(m.group(1)) <= len(words) else "", text)
    if arguments and not placed:
        text += f"\n\nARGUMENTS: {arguments}"
    return text


def own_text(command: CustomCommand) -> str:
    """The body without its argument places: what the command says whatever is typed."""
    return POSITIONAL.sub("", command.body.replace("$ARGUMENTS", ""))


def _words(arguments: str) -> list[str]:
    try:
        return shlex.split(arguments)
    except ValueError:  # an unclosed quote: plain words
        return arguments.split()


async def run_shell_lines(text: str, run: Callable[[str], Awaitable[str]]) -> str:
    """Each ``!`command` `` replaced by what ``run`` returns for it, in order."""
    parts: list[str] = []
    last = 0
    for match in SHELL_LINE.finditer(text):
        parts.append(text[last : match.start()])
        output = await run(match.group(1).strip())
        parts.append(f"`{match.group(1)}`:\n```\n{output.rstrip()}\n```")
        last = match.end()
    parts.append(text[last:])
    return "".join(parts)
