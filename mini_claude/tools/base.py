"""The tool contract: a schema, a permission rule, and an async run that never raises."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from mini_claude.providers.base import ToolSpec
from mini_claude.settings import Settings

# Key an adapter puts in a tool_use input when the model sent arguments that are not JSON.
RAW_ARGUMENTS_KEY = "_raw_arguments"


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """What a tool returns before tier 0 and the conversation see it.

    ``display`` is an optional richer view for the UI (a diff for edits);
    the model only ever sees ``content``.
    """

    content: str
    is_error: bool = False
    display: str | None = None
    display_kind: Literal["text", "diff", "code", "ansi"] = "text"


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    tool_name: str
    summary: str  # one line: the command, or the path being written
    subject: str  # what "allow for the session" remembers: the command, or the tool name
    detail: str | None = None  # e.g. the diff of an edit


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    allowed: bool
    remember: bool = False  # allow this subject for the rest of the session
    reason: str | None = None  # given to the model on a denial


Approver = Callable[[PermissionRequest], Awaitable[PermissionDecision]]


async def deny_all(request: PermissionRequest) -> PermissionDecision:
    return PermissionDecision(False, reason="not allowed in this mode (pass --yes to allow)")


async def allow_all(request: PermissionRequest) -> PermissionDecision:
    return PermissionDecision(True)


@dataclass
class ToolContext:
    """What a tool may use: the project folder, the settings, a way to ask the user."""

    root: Path
    settings: Settings
    approve: Approver = deny_all
    session_id: str = ""
    allowed_subjects: set[str] = field(default_factory=set)
    env: dict[str, str] | None = None  # environment for run_shell (keys removed)
    # This session's own records, for search_history (None: not known, e.g. a bare test).
    transcript_path: Path | None = None
    results_folder: Path | None = None


class Tool(Protocol):
    spec: ToolSpec
    read_only: bool  # read-only tools run without asking

    def permission(self, args: dict[str, Any], ctx: ToolContext) -> PermissionRequest | None:
        """The question to ask before running, or None when no approval is needed."""
        ...

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Do the work. Expected failures come back as ``ToolOutput(is_error=True)``."""
        ...
