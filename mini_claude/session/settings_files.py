"""The settings files, ours and Claude Code's, merged with Claude Code's precedence.

Read, lowest precedence first::

    ~/.claude/settings.json            user   (CLAUDE_CONFIG_DIR moves it)
    <MINI_CLAUDE_HOME>/settings.json   user
    .claude/settings.json              project
    .mini-claude/settings.json         project
    .claude/settings.local.json        project (personal, but it sits in the repository)

From each: ``permissions.allow`` / ``ask`` / ``deny``, ``permissions.defaultMode``,
``permissions.additionalDirectories``, ``hooks``, ``env`` and ``sandbox`` (see
``sandbox.config``). Rule lists add up
across files; a single value (the default mode) comes from the highest file that
sets it. A repository cannot grant itself anything: a project file's deny rules
apply at once, everything else in it counts only after the user approved the
project's files (one question for all of them, remembered per content in the
project-trust record). ``bypassPermissions`` is never taken from a project file.

Written, as Claude Code writes them: a rule from "don't ask again" or ``/permissions add``
goes into the file of its scope (``local``: ``.claude/settings.local.json``, ``project``:
``.claude/settings.json``, ``user``: ``~/.claude/settings.json``), spliced into the text so
the file's other keys and layout stay as they were, and replaced in one step.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from mini_claude.agent.hooks import HookCommand, hook_commands
from mini_claude.atomic_files import atomic_write
from mini_claude.models import key_variables
from mini_claude.permissions.mode_table import MODES, PermissionMode
from mini_claude.permissions.rules import (
    CLAUDE_TOOL_NAMES,
    PermissionRules,
    Rule,
    RuleError,
    parse_rule,
)
from mini_claude.permissions.sandbox.config import SandboxConfig, merge, read_sandbox
from mini_claude.private_dirs import make_private_dirs
from mini_claude.project.boundary import claude_user_dir
from mini_claude.project.trust import ProjectTrust, TrustStatus
from mini_claude.safe_read import read_limited
from mini_claude.session.json_edit import JsonEditError, append_to_list
from mini_claude.tool_kinds import known_tools

Scope = Literal["user", "project"]
RuleScope = Literal["local", "project", "user"]  # where a rule is written, as Claude Code says
RULE_SCOPES: tuple[RuleScope, ...] = ("local", "project", "user")
RULE_KEYS = ("allow", "ask", "deny")
SETTINGS_NAME = "settings.json"
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def settings_paths(cwd: Path, home: Path, *, claude_files: bool = True) -> list[tuple[Path, Scope]]:
    """Every settings file we read, lowest precedence first."""
    paths: list[tuple[Path, Scope]] = []
    if claude_files:
        paths.append((claude_user_dir() / SETTINGS_NAME, "user"))
    paths.append((home / SETTINGS_NAME, "user"))
    if claude_files:
        paths.append((cwd / ".claude" / SETTINGS_NAME, "project"))
    paths.append((cwd / ".mini-claude" / SETTINGS_NAME, "project"))
    if claude_files:
        paths.append((cwd / ".claude" / "settings.local.json", "project"))
    return paths


def rule_file(scope: RuleScope, cwd: Path) -> Path:
    """The settings file a rule of this scope is written to (Claude Code's files)."""
    if scope == "user":
        return claude_user_dir() / SETTINGS_NAME
    name = "settings.local.json" if scope == "local" else SETTINGS_NAME
    return cwd / ".claude" / name


def claude_rule_text(rule: str) -> str:
    """A rule as Claude Code writes it: ``run_shell(npm test:*)`` -> ``Bash(npm test:*)``, so
    Claude Code reads the same file the same way."""
    name, paren, rest = rule.partition("(")
    claude_names = known_tools().traits(name).claude_names if name else ()
    return f"{claude_names[0]}{paren}{rest}" if claude_names else rule


class SettingsWriteError(Exception):
    """A settings file that cannot take the rule; the message says why, in one line."""


def add_rule(path: Path, behavior: str, rule: str) -> bool:
    """Add ``rule`` to ``permissions.<behavior>`` of the file at ``path`` (created when
    missing); False when the file holds it already. Raises SettingsWriteError."""
    return add_to_list(path, ("permissions", behavior), rule)


def add_to_list(path: Path, keys: tuple[str, ...], item: str) -> bool:
    """Add ``item`` to the list at ``keys`` of the settings file at ``path`` (created when
    missing); False when the list holds it already. Raises SettingsWriteError."""
    try:
        before = read_limited(path).decode("utf-8")
    except FileNotFoundError:
        before = "{}\n"
    except (OSError, UnicodeDecodeError) as exc:
        raise SettingsWriteError(f"cannot read {path}: {exc}") from exc
    try:
        after = append_to_list(before, keys, item)
    except (ValueError, JsonEditError) as exc:
        raise SettingsWriteError(f"{path} is not a settings object ({exc}); {item} was "
                                 "not written") from exc
    if after == before:
        return False
    try:
        make_private_dirs(path.parent)
        mode = path.stat().st_mode & 0o7777 if path.exists() else None
        atomic_write(path, after.encode("utf-8"), mode)
    except OSError as exc:
        raise SettingsWriteError(f"cannot write {path}: {exc.strerror or exc}") from exc
    return True


@dataclass(frozen=True, slots=True)
class StatusLineCommand:
    """Claude Code's ``statusLine``: a command whose first line of output is shown beside
    our status line; it reads the session as JSON on stdin."""

    command: str
    padding: int
    source: Path


@dataclass
class SettingsFile:
    """What one settings file asks for."""

    path: Path
    scope: Scope
    content: bytes
    allow: list[Rule] = field(default_factory=list)
    ask: list[Rule] = field(default_factory=list)
    deny: list[Rule] = field(default_factory=list)
    default_mode: PermissionMode | None = None
    additional_directories: list[Path] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    hooks: list[HookCommand] = field(default_factory=list)
    disables_bypass: bool = False  # permissions.disableBypassPermissionsMode: "disable"
    status_line: StatusLineCommand | None = None
    api_key_helper: str | None = None  # honoured in the user's own files only
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)

    @property
    def grants(self) -> list[str]:
        """What the file would do beyond denying, one line each, for the trust question."""
        lines: list[str] = []
        if self.allow:
            lines.append("allow without asking: " + ", ".join(r.text for r in self.allow))
        if self.ask:
            lines.append("always ask before: " + ", ".join(r.text for r in self.ask))
        if self.default_mode:
            lines.append(f"start in permission mode {self.default_mode}")
        if self.additional_directories:
            shown = ", ".join(str(d) for d in self.additional_directories)
            lines.append(f"let tools read and edit in: {shown}")
        for hook in self.hooks:
            matcher = f" ({hook.matcher})" if hook.matcher else ""
            lines.append(f"run as a {hook.event} hook{matcher}: {hook.command}")
        if self.applied_env:
            lines.append("set for commands: "
                         + ", ".join(f"{k}={v}" for k, v in self.applied_env.items()))
        if self.status_line:
            lines.append(f"run as the status line: {self.status_line.command}")
        return lines + [f"sandbox: {line}" for line in self.sandbox.grants()]

    @property
    def applied_env(self) -> dict[str, str]:
        """``env`` as commands and hooks get it: our API keys' names are refused."""
        refused = key_variables()
        return {k: v for k, v in self.env.items() if k not in refused}

    @property
    def refused_env(self) -> list[str]:
        """Names in ``env`` that are never set (our API keys), to say so, not to list them
        as set."""
        refused = key_variables()
        return [name for name in self.env if name in refused]


@dataclass
class SettingsLayers:
    """Every settings file found, lowest precedence first, and what was wrong with them."""

    cwd: Path
    files: list[SettingsFile] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def project_files(self) -> list[SettingsFile]:
        """The project's files that would grant something, and so need approval."""
        return [f for f in self.files if f.scope == "project" and f.grants]

    def trust_status(self, trust: ProjectTrust) -> TrustStatus | Literal["none"]:
        statuses = [trust.status(self.cwd, f.path, f.content) for f in self.project_files()]
        if not statuses:
            return "none"
        if all(s == "approved" for s in statuses):
            return "approved"
        if "unknown" in statuses:
            return "unknown"
        return "denied"

    def decide(self, trust: ProjectTrust, approved: bool) -> None:
        for settings_file in self.project_files():
            record = trust.approve if approved else trust.deny
            record(self.cwd, settings_file.path, settings_file.content)

    def counted(self, project_approved: bool) -> list[SettingsFile]:
        """The files whose grants count: the user's always, the project's once approved."""
        return [f for f in self.files if f.scope == "user" or project_approved]

    def rules(self, project_approved: bool) -> PermissionRules:
        counted = self.counted(project_approved)
        return PermissionRules(
            allow=tuple(r for f in counted for r in f.allow),
            deny=tuple(r for f in self.files for r in f.deny),  # deny rules apply at once
            ask=tuple(r for f in counted for r in f.ask),
        )

    def default_mode(self, project_approved: bool) -> tuple[PermissionMode | None, Path | None]:
        """The highest counted file's ``defaultMode``, and that file."""
        for settings_file in reversed(self.counted(project_approved)):
            if settings_file.default_mode is not None:
                return settings_file.default_mode, settings_file.path
        return None, None

    def bypass_disabled(self) -> bool:
        """Any file, approved or not, may take bypassPermissions away: it only restricts."""
        return any(f.disables_bypass for f in self.files)

    def additional_directories(self, project_approved: bool) -> tuple[Path, ...]:
        seen: dict[Path, None] = {}
        for settings_file in self.counted(project_approved):
            for folder in settings_file.additional_directories:
                seen.setdefault(folder, None)
        return tuple(seen)

    def env(self, project_approved: bool) -> dict[str, str]:
        merged: dict[str, str] = {}
        for settings_file in self.counted(project_approved):
            merged.update(settings_file.applied_env)
        return merged

    def hooks(self, project_approved: bool) -> list[HookCommand]:
        return [h for f in self.counted(project_approved) for h in f.hooks]

    def status_line(self, project_approved: bool) -> StatusLineCommand | None:
        """The highest counted file's ``statusLine``."""
        found = [f.status_line for f in self.counted(project_approved) if f.status_line]
        return found[-1] if found else None

    def sandbox(self, project_approved: bool) -> SandboxConfig:
        """The counted files' ``sandbox`` objects merged; what only narrows it (denyRead,
        denyWrite, deniedDomains) counts from every file at once."""
        counted = self.counted(project_approved)
        narrowing = [f.sandbox.narrowing_only() for f in self.files if f not in counted]
        return merge([*narrowing, *(f.sandbox for f in counted)])

    def api_key_helper(self) -> str | None:
        """The user's ``apiKeyHelper``: a project file never names the program a key comes
        from (it could send the key anywhere)."""
        found = [f.api_key_helper for f in self.files if f.scope == "user" and f.api_key_helper]
        return found[-1] if found else None


def load_settings_layers(
    cwd: Path, home: Path, hook_timeout: float, *, claude_files: bool = True
) -> SettingsLayers:
    """Read every settings file; problems become warnings, never a failed start."""
    layers = SettingsLayers(cwd)
    seen: set[Path] = set()
    for path, scope in settings_paths(cwd, home, claude_files=claude_files):
        real = _real(path)
        if real in seen:
            continue  # the home folder is the project, or a link to another file we read
        seen.add(real)
        settings_file = _read(path, scope, cwd, hook_timeout, layers.warnings)
        if settings_file is not None:
            layers.files.append(settings_file)
    return layers


def user_api_key_helper(cwd: Path, home: Path) -> str | None:
    """The ``apiKeyHelper`` of the user's own settings files, if one names it."""
    paths = [(p, s) for p, s in settings_paths(cwd, home) if s == "user"]
    found = [f for p, s in paths if (f := _read(p, s, cwd, 0.0, [])) is not None]
    helpers = [f.api_key_helper for f in found if f.api_key_helper]
    return helpers[-1] if helpers else None


def _read(
    path: Path, scope: Scope, cwd: Path, hook_timeout: float, warnings: list[str]
) -> SettingsFile | None:
    try:
        content = read_limited(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        warnings.append(f"cannot read {path}: {exc.strerror or exc}; it is not used")
        return None
    try:
        data = json.loads(content)
    except ValueError as exc:
        warnings.append(f"{path} is not valid JSON ({exc}); it is not used")
        return None
    if not isinstance(data, dict):
        warnings.append(f"{path} must hold a JSON object; it is not used")
        return None
    return settings_from_json(data, path, scope, cwd, hook_timeout, warnings, content)


def settings_from_json(
    data: dict[str, Any],
    path: Path,
    scope: Scope,
    cwd: Path,
    hook_timeout: float,
    warnings: list[str],
    content: bytes = b"",
) -> SettingsFile:
    """One settings object already read (a file, or ``--settings`` JSON)."""
    found = SettingsFile(path, scope, content)
    _read_permissions(data.get("permissions"), found, cwd, warnings)
    found.env = _env(data.get("env"), path, warnings)
    found.status_line = _status_line(data.get("statusLine"), path, warnings)
    found.api_key_helper = _api_key_helper(data.get("apiKeyHelper"), path, scope, warnings)
    found.sandbox = read_sandbox(data.get("sandbox"), path, cwd, warnings)
    hooks = data.get("hooks")
    if hooks is not None:
        commands = hook_commands(path, hooks, hook_timeout, warnings)
        found.hooks = [_with_our_tool_names(h) for h in commands]
    return found


def _read_permissions(
    permissions: object, found: SettingsFile, cwd: Path, warnings: list[str]
) -> None:
    path = found.path
    if permissions is None:
        return
    if not isinstance(permissions, dict):
        warnings.append(f'{path}: "permissions" must be an object; its rules are not used')
        return
    for key in RULE_KEYS:
        setattr(found, key, _rules(permissions, key, path, cwd, warnings))
    mode = permissions.get("defaultMode")
    if mode is not None:
        if mode not in MODES:
            warnings.append(f"{path}: defaultMode {mode!r} is not one of {', '.join(MODES)}; "
                            "ignored")
        elif MODES[mode].asks_nothing and found.scope == "project":
            warnings.append(f"{path}: a project cannot start in {mode}; ignored "
                            f"(use --permission-mode {mode} or your own settings)")
        else:
            found.default_mode = mode
    found.disables_bypass = permissions.get("disableBypassPermissionsMode") == "disable"
    found.additional_directories = _directories(
        permissions.get("additionalDirectories"), path, cwd, warnings
    )


def _rules(
    permissions: dict[str, Any], key: str, path: Path, cwd: Path, warnings: list[str]
) -> list[Rule]:
    entries = permissions.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        warnings.append(f'{path}: "permissions.{key}" must be a list of strings; it is not used')
        return []
    rules: list[Rule] = []
    for entry in entries:
        try:
            rules.append(parse_rule(entry, str(path), cwd))
        except RuleError as exc:
            warnings.append(f"{exc}; skipped")
    return rules


def _directories(value: object, path: Path, cwd: Path, warnings: list[str]) -> list[Path]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        warnings.append(f'{path}: "permissions.additionalDirectories" must be a list of '
                        "strings; it is not used")
        return []
    folders: list[Path] = []
    for entry in value:
        folder = (cwd / Path(entry).expanduser()).resolve()
        if folder.is_dir():
            folders.append(folder)
        else:
            warnings.append(f"{path}: additional directory {entry!r} is not a folder; skipped")
    return folders


def _env(value: object, path: Path, warnings: list[str]) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        warnings.append(f'{path}: "env" must be an object of strings; it is not used')
        return {}
    env: dict[str, str] = {}
    for name, setting in value.items():
        if not _ENV_NAME.match(str(name)) or isinstance(setting, dict | list):
            warnings.append(f"{path}: env {name!r} is not a NAME: value pair; skipped")
            continue
        env[str(name)] = setting if isinstance(setting, str) else json.dumps(setting)
    return env


def _status_line(value: object, path: Path, warnings: list[str]) -> StatusLineCommand | None:
    if value is None:
        return None
    command = value.get("command") if isinstance(value, dict) else None
    if not isinstance(value, dict) or value.get("type", "command") != "command" or not (
            isinstance(command, str) and command.strip()):
        warnings.append(f'{path}: "statusLine" needs {{"type": "command", "command": "..."}}; '
                        "it is not used")
        return None
    padding = value.get("padding", 0)
    return StatusLineCommand(command, padding if isinstance(padding, int) else 0, path)


def _api_key_helper(value: object, path: Path, scope: Scope,
                    warnings: list[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        warnings.append(f'{path}: "apiKeyHelper" must be a command; it is not used')
        return None
    if scope != "user":
        warnings.append(f'{path}: "apiKeyHelper" is read from your own settings only '
                        "(~/.claude/settings.json); a project cannot name where keys come from")
        return None
    return value
def with_our_tool_names(hook: HookCommand) -> HookCommand:
    """A hook whose Claude Code matcher also matches our names for the tools."""
    return _with_our_tool_names(hook)


def _with_our_tool_names(hook: HookCommand) -> HookCommand:
    """A Claude Code matcher (``Bash``, ``Edit|Write``) also matches our names for the tools."""
    if hook.matcher in ("", "*"):
        return hook

    def widen(match: re.Match[str]) -> str:
        name = match.group(0)
        ours = CLAUDE_TOOL_NAMES.get(name)
        return f"(?:{'|'.join((name, *ours))})" if ours else name

    widened = re.sub(r"\b[A-Z][A-Za-z]+\b", widen, hook.matcher)
    return replace(hook, matcher=widened, written=hook.matcher)


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except OSError:
        return path
