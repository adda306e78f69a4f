"""What the REPL's first frame needs before the session exists, and building it afterwards.

The prompt, the header and a status line read from the settings alone are drawn
first; the session (agent, context pipeline, tools, provider adapter) is imported
and built right after, while the user starts typing. Nothing here imports the
agent chain at load time.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
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


def new_session(settings: Settings, cwd: Path, args: argparse.Namespace) -> Session:
    """A session as the REPL builds it: the mode from --permission-mode / --yes, rules from the
    tool flags (parsed as print mode parses them; the CLI checked them already)."""
    from mini_claude.claude_flags import agents_flag
    from mini_claude.headless.session_setup import agent_types, flag_mcp_configs, flag_settings
    from mini_claude.permissions.mode_table import mode_from_flags
    from mini_claude.permissions.rules import flag_rules
    from mini_claude.session.wiring import Session, startup_housekeeping
    from mini_claude.ui.permissions import TerminalApprover

    startup_housekeeping(settings)
    flag_allow, flag_deny = flag_rules(getattr(args, "allowed_tools", None),
                                       getattr(args, "disallowed_tools", None), cwd)
    appended = (getattr(args, "append_system_prompt", None) or "").strip()
    warnings: list[str] = []
    session = Session.open(settings, cwd, TerminalApprover(),
                      flag_allow=flag_allow, flag_deny=flag_deny, mode_flag=mode_from_flags(args),
                      system_prompt_parts={"append": appended} if appended else {},
                      extra_settings=flag_settings(args, settings, cwd, warnings),
                      extra_agents=agent_types(agents_flag(getattr(args, "agents", None))))
    session.warnings.extend(warnings)
    mcp_files = flag_mcp_configs(args, cwd)
    if mcp_files or getattr(args, "strict_mcp_config", False):
        session.mcp.use_flag_configs(mcp_files, strict=bool(getattr(args, "strict_mcp_config",
                                                                    False)))
    if getattr(args, "trust_project_mcp", False):
        session.mcp.approve_project(remember=False)
    return session


def first_message(args: argparse.Namespace) -> str | None:
    """``mini-claude "explain this"``: the REPL starts with that message; ``-r`` without an
    id starts with the session picker."""
    if getattr(args, "resume", None) == "":
        return "/resume"
    prompt = getattr(args, "prompt", None)
    return prompt if isinstance(prompt, str) and prompt.strip() else None


# What the first turn would otherwise import while the user waits behind "thinking…":
# the presenter, Markdown and code rendering, and the HTTP stack the SDKs open a
# connection with (names tried in turn; those not installed are skipped).
FIRST_TURN_MODULES = (
    "mini_claude.ui.presenter",
    "mini_claude.ui.plan_view",
    "rich.markdown",
    "rich.syntax",
)
HTTP_STACK_MODULES = (
    "h11",
    "httpcore",
    "httpcore2",
    "anyio._backends._asyncio",
    "opentelemetry.propagate",
    "truststore",
)
SAMPLE_REPLY = "Warm **up**.\n\n```python\nprint('x')\n```\n"


def warm_up_first_turn(provider_name: str) -> None:
    """Import the SDK and everything else the first reply needs, while the user types.

    Runs in a worker thread once the prompt is drawn; rendering a sample reply into
    a throwaway console loads the Markdown parser, the lexer and the colour style.
    """
    import io

    from rich.console import Console
    from rich.markdown import Markdown

    from mini_claude.providers import preload_sdk

    preload_sdk(provider_name)
    for name in (*FIRST_TURN_MODULES, *HTTP_STACK_MODULES):
        try:
            if importlib.util.find_spec(name) is not None:
                importlib.import_module(name)
        except (ImportError, ValueError):
            continue
    Console(file=io.StringIO(), width=80).print(Markdown(SAMPLE_REPLY))


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

        self.session_id = getattr(self.args, "session_id", None) or new_session_id()
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
        session = new_session(self.settings, self.cwd, self.args)
        session.start_new(self.session_id)
        return session
