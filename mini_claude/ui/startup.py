"""What the REPL's first frame needs before the session exists, and building it afterwards.

The prompt, the header and a status line read from the settings alone are drawn
first; the session (agent, context pipeline, tools, provider adapter) is imported
and built right after, while the user starts typing. Nothing here imports the
agent chain at load time.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from mini_claude.project.instructions import ProjectInstructions, find_instructions

if TYPE_CHECKING:
    from mini_claude.pricing import CostTracker
    from mini_claude.protocol import ContextStatus
    from mini_claude.session.wiring import Session
    from mini_claude.settings import Settings

PROJECT_MCP_FILE = ".mcp.json"
PROJECT_SETTINGS_FILE = Path(".mini-claude") / "settings.json"  # may hold hooks to approve

# Imported in a worker thread after the first frame, so the loop keeps drawing and reading keys.
SESSION_MODULES = (
    "mini_claude.session.wiring",
    "mini_claude.agent.loop",
    "mini_claude.providers",
    "mini_claude.ui.presenter",
    "mini_claude.ui.permissions",
    "mini_claude.ui.mcp_view",
)


def can_start_before_session(settings: Settings, cwd: Path, args: argparse.Namespace) -> bool:
    """Whether the prompt may come up before the session is built.

    Resuming (its recap and reading), a project ``.mcp.json`` or settings file (their
    trust questions) and a missing key (its one-line error) all need the session first.
    """
    if getattr(args, "continue_session", False) or getattr(args, "resume", None):
        return False
    if (cwd / PROJECT_MCP_FILE).exists() or (cwd / PROJECT_SETTINGS_FILE).exists():
        return False
    return bool(settings.api_key or settings.base_url)


def import_session_modules() -> None:
    for name in SESSION_MODULES:
        importlib.import_module(name)


@dataclass
class SessionStarter:
    """A new session's settings, id and instructions, known before the session is built."""

    settings: Settings
    cwd: Path
    args: argparse.Namespace
    session_id: str = field(init=False)
    instructions: ProjectInstructions = field(init=False)

    def __post_init__(self) -> None:
        from mini_claude.transcript import new_session_id

        self.session_id = new_session_id()
        self.instructions = find_instructions(self.cwd, self.settings.home)

    def idle_status(self) -> ContextStatus:
        """The meter before anything is measured: nothing sent yet, the window from settings."""
        from mini_claude.protocol import ContextStatus

        settings = self.settings
        return ContextStatus(
            tokens=0,
            effective_window=settings.effective_window,
            window=settings.window,
            autocompact_at=settings.autocompact_tokens if settings.auto_compact else 0,
            anchored=False,
        )

    @staticmethod
    def no_costs() -> CostTracker:
        from mini_claude.pricing import CostTracker

        return CostTracker()

    def build(self) -> Session:
        """The session, as the CLI built it before the prompt (housekeeping included)."""
        from mini_claude.providers import create_provider
        from mini_claude.session.wiring import Session, startup_housekeeping
        from mini_claude.tools.permission_modes import mode_from_flags
        from mini_claude.ui.permissions import TerminalApprover

        startup_housekeeping(self.settings)
        session = Session(self.settings, self.cwd, create_provider(self.settings),
                          TerminalApprover(), mode_flag=mode_from_flags(self.args))
        if getattr(self.args, "trust_project_mcp", False):
            session.mcp.approve_project(remember=False)
        session.start_new(self.session_id)
        return session
