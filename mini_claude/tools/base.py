"""The tool contract: a schema, a permission step that prepares the call, and an async run
that carries it out and never raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from mini_claude.checkpoints.recorder import Checkpoints
from mini_claude.permissions.asking import Approver, PermissionRequest, deny_all
from mini_claude.permissions.modes import Permissions
from mini_claude.permissions.rules import PermissionDenied
from mini_claude.plan import Plan
from mini_claude.project.skills import LoadedSkills, SkillCatalog
from mini_claude.protocol import ToolOutput, ToolSpec
from mini_claude.settings import Settings
from mini_claude.tool_kinds import ToolTraits
from mini_claude.tools.background import BackgroundShells
from mini_claude.tools.progress import CallProgress


@dataclass(frozen=True, slots=True)
class Prepared:
    """What a tool's permission step worked out for one call, handed on to its ``run``.

    ``request`` is the question to put to the user (None: nothing to ask). ``action``
    is what ``run`` carries out, exactly as the user saw it (an edit and its diff); a
    tool that prepares one and finds None here was not approved anything, so it may
    only fail.
    """

    request: PermissionRequest | None = None
    action: object | None = None


NOTHING_TO_ASK = Prepared()


class NeverAsks:
    """The base of a tool that never asks: it changes nothing the user has not approved
    already (it reads the session's own state, or what an approved command started)."""

    read_only = True

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        return NOTHING_TO_ASK

@dataclass
class ToolContext:
    """What a tool may use: the project folder, the settings, a way to ask the user."""

    root: Path
    settings: Settings
    approve: Approver = deny_all
    session_id: str = ""
    allowed_subjects: set[str] = field(default_factory=set)
    env: dict[str, str] | None = None  # environment for run_shell (keys removed)
    # File -> (inode, size, mtime_ns) when the model last read or wrote it: a whole-file
    # write over a file changed since then is refused.
    read_stamps: dict[str, tuple[int, int, int]] = field(default_factory=dict)
    rules: Permissions | None = None  # rules and mode, shared with sub-agents
    denials: list[PermissionDenied] = field(default_factory=list)  # refused calls, in order
    # This session's own records, for search_history (None: not known, e.g. a bare test).
    transcript_path: Path | None = None
    results_folder: Path | None = None
    plan: Plan = field(default_factory=Plan)  # the todo list todo_write keeps
    skills: SkillCatalog = field(default_factory=SkillCatalog)  # what the skill tool can load
    loaded_skills: LoadedSkills = field(default_factory=LoadedSkills)
    # Commands run_shell started in the background (shell_output, kill_shell, /shells).
    shells: BackgroundShells = field(default_factory=BackgroundShells)
    # The running call's live output (set by the agent for each call; None: nobody watches).
    progress: CallProgress | None = None
    # Keeps each file's content before write_file or edit_file changes it (for /rewind).
    checkpoints: Checkpoints = field(default_factory=Checkpoints)


class Tool(Protocol):
    spec: ToolSpec
    read_only: bool  # read-only tools run without asking
    # What it is (kind, the argument rules match, its Claude Code names, plan mode): rules,
    # plan mode and the name table ask this, never the tool's name.
    traits: ToolTraits

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> Prepared:
        """The question to ask before running (if any), and the action prepared for run."""
        ...

    async def run(self, args: dict[str, Any], ctx: ToolContext, prepared: Prepared) -> ToolOutput:
        """Do the work that was prepared (and approved). Expected failures come back as
        ``ToolOutput(is_error=True)``."""
        ...
