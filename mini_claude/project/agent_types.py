"""Sub-agent types: the three built in, and the user's own as Markdown files.

A user-defined type is a Markdown file with front matter, the shape Claude Code's
agents use, so existing files work unchanged::

    ---
    name: reviewer
    description: Reviews a diff for bugs
    tools: Read, Grep, Glob
    model: inherit
    ---
    The sub-agent's system prompt.

``tools`` is optional (absent: every tool of the session but ``task``); ``model``
is optional (a model name, or ``inherit``).

Files are read from ``.mini-claude/agents/`` and ``.claude/agents/`` in the project
and ``agents/`` under the mini-claude home; a project file wins over a home file of
the same name, and any file wins over a built-in type of that name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from mini_claude.project.boundary import ProjectBoundary
from mini_claude.project.claude_tools import our_tool_names
from mini_claude.project.front_matter import FrontMatterError, split, string_list
from mini_claude.safe_read import read_text_limited
from mini_claude.tool_kinds import READING_KINDS, known_tools

TEMPLATE_PACKAGE = "mini_claude.templates"
DEFAULT_TYPE = "explore"
MAX_AGENT_FILE_CHARS = 40_000
# The sub-agent keeps the session's model; any other name (an id or an alias such as
# ``haiku``) is resolved when the sub-agent starts.
INHERITED_MODELS = {"", "inherit"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


@dataclass(frozen=True, slots=True)
class AgentType:
    name: str
    description: str
    prompt: str  # the system prompt's instructions (the environment is added to it)
    tools: tuple[str, ...] | None = None  # None: every tool of the session but task
    model: str | None = None  # None: the task model (or the session's)
    source: Path | None = None  # the file it came from; None for a built-in type


@dataclass
class AgentCatalog:
    types: dict[str, AgentType]
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> AgentType | None:
        return self.types.get(name)

    def names(self) -> list[str]:
        return list(self.types)

    def describe(self) -> str:
        """One line per type, for the task tool's description."""
        return "\n".join(f"- {t.name}: {t.description}" for t in self.types.values())


def _template(name: str) -> str:
    return resources.files(TEMPLATE_PACKAGE).joinpath(name).read_text(encoding="utf-8")


def builtin_types() -> list[AgentType]:
    reading = known_tools().of_kind(*READING_KINDS)  # the read-only types' tools
    return [
        AgentType(
            "explore",
            "searches and reads the project to answer a question (read-only: "
            f"{', '.join(reading)}); the default",
            _template("agent-explore.md"),
            reading,
        ),
        AgentType(
            "plan",
            "studies the code and returns a step-by-step plan for a change (read-only)",
            _template("agent-plan.md"),
            reading,
        ),
        AgentType(
            "general",
            "does a self-contained job with the session's tools (commands and edits ask the "
            "user as usual)",
            _template("agent-general.md"),
        ),
    ]


def agent_folders(cwd: Path, home: Path) -> list[Path]:
    """Lowest precedence first: a later folder's file replaces an earlier one's."""
    return [home / "agents", cwd / ".claude" / "agents", cwd / ".mini-claude" / "agents"]


def load_catalog(cwd: Path, home: Path) -> AgentCatalog:
    """Built-in types, then the files; a bad file is skipped with a warning."""
    catalog = AgentCatalog({t.name: t for t in builtin_types()})
    boundary = ProjectBoundary.of(cwd, home)
    for folder in agent_folders(cwd, home):
        try:
            paths = sorted(folder.glob("*.md")) if folder.is_dir() else []
        except OSError:
            continue
        for path in paths:
            try:
                agent = parse_agent_file(path, None if folder == home / "agents" else boundary)
            except AgentFileError as exc:
                catalog.warnings.append(f"agent file {path}: {exc}; skipped")
                continue
            catalog.types[agent.name] = agent
    return catalog


class AgentFileError(ValueError):
    """An agent file that cannot be used; the message says why, in a few words."""


def parse_agent_file(path: Path, boundary: ProjectBoundary | None = None) -> AgentType:
    """An agent type; a project's file is read through its ``boundary``."""
    try:
        raw = boundary.read_text(path) if boundary is not None else read_text_limited(path)
        text = raw[:MAX_AGENT_FILE_CHARS]
    except OSError as exc:
        raise AgentFileError(exc.strerror or str(exc)) from None
    try:
        found, body = split(text, None, required=True)
    except FrontMatterError as exc:
        raise AgentFileError(str(exc)) from None
    fields = {key.lower(): value for key, value in found.items()}
    name = fields.get("name", "")
    if not isinstance(name, str) or not _NAME.match(name):
        raise AgentFileError("the front matter needs a name (letters, digits, - _ .)")
    description = fields.get("description", "")
    if not isinstance(description, str) or not description.strip():
        raise AgentFileError("the front matter needs a description")
    if not body.strip():
        raise AgentFileError("the file has no instructions after the front matter")
    model = fields.get("model", "")
    model_name = model.strip() if isinstance(model, str) else ""
    return AgentType(
        name=name,
        description=" ".join(description.split()),
        prompt=body.strip() + "\n",
        tools=_tool_names(string_list(fields.get("tools")) if "tools" in fields else None),
        model=None if model_name.lower() in INHERITED_MODELS else model_name,
        source=path,
    )


def _tool_names(names: list[str] | None) -> tuple[str, ...] | None:
    if names is None:
        return None
    if not names or names == ["*"]:
        return None
    return tuple(dict.fromkeys(ours for n in names for ours in our_tool_names(n)))
