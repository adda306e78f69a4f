"""One headless session from the command line: print mode and the stream-json loop share it.

Everything a flag brings in is read here, once: the system prompt flags, the tool
rules and the ``--tools`` selection, ``--settings`` and ``--add-dir`` (one more
settings layer each, above the files), ``--mcp-config``, ``--agents`` and
``--session-id``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from mini_claude.claude_flags import (
    FlagError,
    agents_flag,
    json_or_file,
    tool_selection,
)
from mini_claude.headless.options import HeadlessOptions
from mini_claude.mcp.config import ConfigFile, parse_config
from mini_claude.permissions.asking import Approver
from mini_claude.permissions.mode_table import mode_from_flags
from mini_claude.permissions.rules import RuleError
from mini_claude.project.agent_types import AgentType
from mini_claude.project.claude_tools import our_tool_names
from mini_claude.project.imports import held_lines
from mini_claude.protocol import ProviderError
from mini_claude.session.settings_files import SettingsFile, settings_from_json
from mini_claude.settings import Settings
from mini_claude.visible import visible

if TYPE_CHECKING:
    from mini_claude.agent.loop import Agent
    from mini_claude.session.wiring import Session

FLAG_SOURCE = "(command line)"


class SetupFailed(Exception):
    """The session cannot start; one line for the user (a usage error)."""


def flag_settings(args: argparse.Namespace, settings: Settings, cwd: Path,
                  warnings: list[str]) -> list[SettingsFile]:
    """``--settings`` and ``--add-dir`` as settings layers of the user's own."""
    layers: list[SettingsFile] = []
    value = getattr(args, "settings", None)
    if value is not None:
        data, path = json_or_file(value, cwd, "--settings")
        label = path or Path("--settings")
        layers.append(settings_from_json(data, label, "user", cwd,
                                         settings.hook_timeout_seconds, warnings))
    folders = getattr(args, "add_dir", None) or []
    if folders:
        layers.append(SettingsFile(Path("--add-dir"), "user", b"",
                                   additional_directories=[Path(f) for f in folders]))
    return layers


def flag_mcp_configs(args: argparse.Namespace, cwd: Path) -> list[ConfigFile]:
    """``--mcp-config``, each a file or JSON; the user's own, so not asked about."""
    files: list[ConfigFile] = []
    for value in getattr(args, "mcp_config", None) or ():
        data, path = json_or_file(value, cwd, "--mcp-config")
        files.append(parse_config(data, path or Path("--mcp-config"), "user", os.environ))
    return files


def agent_types(specs: dict[str, dict[str, Any]]) -> dict[str, AgentType]:
    """Claude Code's agent JSON (``--agents``, the SDK's ``agents``) as our agent types."""
    types: dict[str, AgentType] = {}
    for name, spec in specs.items():
        tools = spec.get("tools")
        chosen = (tuple(ours for t in tools for ours in our_tool_names(str(t)))
                  if isinstance(tools, list) else None)
        model = spec.get("model")
        types[name] = AgentType(
            name,
            str(spec.get("description", "")),
            str(spec.get("prompt", "")),
            chosen,
            None if model in (None, "", "inherit") else str(model),
        )
    return types


def open_session(
    settings: Settings,
    cwd: Path,
    args: argparse.Namespace,
    approver: Approver,
    err: TextIO,
    *,
    extra_settings: list[SettingsFile] | None = None,
    extra_agents: dict[str, dict[str, Any]] | None = None,
) -> Session:
    """The session, not started yet (``start_agent``); SetupFailed for a bad flag."""
    from mini_claude.session.wiring import Session, startup_housekeeping

    options = HeadlessOptions.from_args(args)
    startup_housekeeping(settings)
    warnings: list[str] = []
    try:
        extra_prompt = options.read_system_prompt(cwd)
    except OSError as exc:
        raise SetupFailed(f"cannot read --system-prompt-file: {exc}") from None
    try:
        flag_allow, flag_deny = options.flag_rules(cwd)
        layers = [*flag_settings(args, settings, cwd, warnings), *(extra_settings or [])]
        agents = {**agents_flag(getattr(args, "agents", None)), **(extra_agents or {})}
        mcp_files = flag_mcp_configs(args, cwd)
    except (RuleError, FlagError) as exc:
        raise SetupFailed(str(exc)) from None
    try:
        session = Session.open(settings, cwd, approver, flag_allow=flag_allow,
                               flag_deny=flag_deny, mode_flag=mode_from_flags(args),
                               extra_settings=layers, extra_agents=agent_types(agents),
                               system_prompt_parts=extra_prompt)
    except ProviderError as exc:
        raise SetupFailed(exc.message) from None
    session.warnings.extend(warnings)
    try:
        _select_tools(session, getattr(args, "tools", None))
    except FlagError as exc:
        raise SetupFailed(str(exc)) from None
    if mcp_files:
        session.mcp.use_flag_configs(mcp_files, strict=bool(getattr(args, "strict_mcp_config",
                                                                    False)))
    elif getattr(args, "strict_mcp_config", False):
        session.mcp.use_flag_configs([], strict=True)
    return session


def _select_tools(session: Session, value: str | None) -> None:
    chosen = tool_selection(value, session.registry.names())
    if chosen is None:
        return
    for name in session.registry.names():
        if name not in chosen:
            session.registry.remove(name)


def start_agent(session: Session, args: argparse.Namespace, err: TextIO) -> Agent:
    """A new conversation, or the one resumed; SetupFailed when it cannot be opened."""
    from mini_claude.session.rewind import RewindError, resume_at
    from mini_claude.session.wiring import SessionError

    try:
        if args.continue_session or args.resume:
            agent = session.resume(args.resume, fork=bool(getattr(args, "fork_session", False)))
            if getattr(args, "resume_at", None):
                resume_at(agent, args.resume_at)
        else:
            agent = session.start_new(getattr(args, "session_id", None))
    except (SessionError, RewindError) as exc:
        raise SetupFailed(str(exc)) from None
    for line in held_lines(list(session.instructions.held), session.cwd):
        print(f"mini-claude: not loaded until approved in the REPL: {line}", file=err)
    for warning in session.warnings:
        print(f"warning: {visible(warning, one_line=True)}", file=err)
    return agent
