"""A session's permissions from its settings files and flags, and the project approval.

The flags (``--allowed-tools``, ``--disallowed-tools``, ``--permission-mode`` or
``--yes``) rank above every file, as Claude Code's command-line arguments do. A
project's files count in two steps: their deny rules at once, the rest (allow
and ask rules, the default mode, additional directories, hooks, env) once the
user approved them; approving later updates the same :class:`Permissions`
object the agents already hold.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from mini_claude.agent.hooks import HookCommand
from mini_claude.permissions.mode_table import DEFAULT_MODE, PermissionMode, mode_row
from mini_claude.permissions.modes import Permissions
from mini_claude.permissions.rules import (
    MCP_PREFIX,
    Behavior,
    PermissionRules,
    Rule,
    parse_rule,
)
from mini_claude.permissions.sandbox.state import session_sandbox
from mini_claude.project.trust import ProjectTrust
from mini_claude.session.settings_files import (
    RuleScope,
    SettingsFile,
    SettingsLayers,
    SettingsWriteError,
    add_rule,
    add_to_list,
    claude_rule_text,
    load_settings_layers,
    rule_file,
)
from mini_claude.settings import Settings

FLAG_ALLOW_SOURCE = "--allowed-tools"
FLAG_DENY_SOURCE = "--disallowed-tools"
# Tools added after the registry is read (task, when sub-agents are on; MCP tools are
# recognised by their prefix): no "unknown tool" warning for them.
LATE_TOOLS = ("task",)
ALLOWED_DOMAINS_KEYS = ("sandbox", "network", "allowedDomains")


@dataclass
class PermissionSetup:
    settings: Settings
    cwd: Path
    layers: SettingsLayers
    flag_allow: list[Rule]
    flag_deny: list[Rule]
    mode_flag: PermissionMode | None
    permissions: Permissions = field(default_factory=Permissions)
    warnings: list[str] = field(default_factory=list)

    @classmethod
    def load(
        cls,
        settings: Settings,
        cwd: Path,
        flag_allow: list[Rule],
        flag_deny: list[Rule],
        mode_flag: PermissionMode | None,
        known_tools: list[str] | None = None,
        extra: list[SettingsFile] | None = None,
    ) -> PermissionSetup:
        layers = load_settings_layers(
            cwd, settings.home, settings.hook_timeout_seconds,
            claude_files=settings.read_claude_settings,
        )
        layers.files.extend(extra or ())  # --settings, --add-dir: above every file
        setup = cls(settings, cwd, layers, flag_allow, flag_deny, mode_flag)
        setup.warnings.extend(layers.warnings)
        if layers.bypass_disabled():
            setup.permissions.bypass_disabled = True
            if mode_flag is not None and mode_row(mode_flag).asks_nothing:
                setup.warnings.append(f"{mode_flag} is disabled by a settings file "
                                      "(disableBypassPermissionsMode); starting in default")
        setup.permissions.sandbox = session_sandbox(settings)
        setup.permissions.sandbox.domain_saver = setup.save_domain
        setup._apply(setup.project_approved, first=True)
        line = setup.permissions.sandbox.startup_line()
        if line is not None:
            setup.warnings.append(line)
        if known_tools is not None:
            setup.warnings.extend(unknown_tool_warnings(setup.permissions.rules, known_tools))
        return setup

    @property
    def trust(self) -> ProjectTrust:
        return ProjectTrust(self.settings.home)

    def trust_status(self) -> str:
        return self.layers.trust_status(self.trust)

    @property
    def project_approved(self) -> bool:
        return self.trust_status() == "approved"

    def decide(self, approved: bool) -> None:
        self.layers.decide(self.trust, approved)
        self._apply(self.project_approved, first=False)

    def save_rule(self, behavior: Behavior, rule: str, scope: RuleScope = "local") -> SavedRule:
        """Write a rule the user chose to its scope's file, and let it count now.

        The file then holds what the user wrote: a project file that was approved (or
        granted nothing) stays approved with the rule in it. One that holds grants not
        approved yet keeps waiting for approval; an allow rule still counts for this
        session. RuleError for a rule that cannot be read, SettingsWriteError when the
        file cannot take it.
        """
        text = claude_rule_text(rule)
        parsed = parse_rule(text, "this session", self.cwd)
        path = rule_file(scope, self.cwd)
        was_trusted = scope == "user" or self._trusted_as_is(path)
        added = add_rule(path, behavior, text)
        if scope != "user" and was_trusted:
            self.trust.approve(self.cwd, path, path.read_bytes())
        self.reload()
        counted = any(r.text == text for _b, r in self.permissions.listing())
        if not counted and behavior == "allow":
            self.permissions.allow_for_session(parsed)
        return SavedRule(text, path, added, counted)

    def save_domain(self, host: str) -> str:
        """"Don't ask again" for a domain a sandboxed command reached: added to
        ``sandbox.network.allowedDomains`` of the project's local settings, as Claude Code
        does; the line saying where (or why it is kept for this session only)."""
        path = rule_file("local", self.cwd)
        was_trusted = self._trusted_as_is(path)
        try:
            added = add_to_list(path, ALLOWED_DOMAINS_KEYS, host)
        except SettingsWriteError as exc:
            return f"{exc}; kept for this session only"
        if was_trusted:
            self.trust.approve(self.cwd, path, path.read_bytes())
        self.reload()
        return f"{host}: {'saved to' if added else 'already in'} {path}"

    def _trusted_as_is(self, path: Path) -> bool:
        """Whether this project file, as it is now, counts: approved, or granting nothing."""
        for settings_file in self.layers.project_files():
            if settings_file.path == path:
                return self.trust.status(self.cwd, path, settings_file.content) == "approved"
        return True

    def reload(self) -> None:
        """Read the settings files again (a rule was written to one)."""
        self.layers = load_settings_layers(
            self.cwd, self.settings.home, self.settings.hook_timeout_seconds,
            claude_files=self.settings.read_claude_settings,
        )
        self._apply(self.project_approved, first=False)

    def _apply(self, approved: bool, *, first: bool) -> None:
        """Rules, mode and folders into the shared permissions object."""
        files = self.layers.rules(approved)
        permissions = self.permissions
        permissions.rules = PermissionRules(
            allow=(*self.flag_allow, *files.allow),
            deny=(*self.flag_deny, *files.deny),
            ask=files.ask,
        )
        permissions.additional_directories = self.layers.additional_directories(approved)
        if permissions.sandbox is not None:
            permissions.sandbox.config = self.layers.sandbox(approved)
            permissions.sandbox.read_deny_rules = permissions.rules.deny
        if self.mode_flag is not None:
            if first:
                permissions.set_mode(self.mode_flag)
            return
        mode, _where = self.layers.default_mode(approved)
        if first or permissions.mode == DEFAULT_MODE:
            permissions.set_mode(mode or DEFAULT_MODE)

    def add_directory(self, folder: Path) -> None:
        """``/add-dir``: one more folder counts as the project's, for the rest of the session
        (a layer of the user's own, so a later approval keeps it)."""
        self.layers.files.append(SettingsFile(Path("/add-dir"), "user", b"",
                                              additional_directories=[folder]))
        self.permissions.additional_directories = self.layers.additional_directories(
            self.project_approved)

    def default_mode_source(self) -> str:
        """Where the mode in force came from, as ``/permissions`` says it."""
        mode, where = self.layers.default_mode(self.project_approved)
        started = self.mode_flag or mode or DEFAULT_MODE
        if self.permissions.mode != started:
            return "changed in this session"
        if self.mode_flag is not None:
            return "from the command line"
        return f"from {where}" if where is not None else "the default"

    def hooks(self) -> list[HookCommand]:
        return self.layers.hooks(self.project_approved)

    def command_environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The commands' environment plus the settings' ``env`` (which never names our API
        keys: see ``SettingsFile.applied_env``)."""
        return {**base, **self.layers.env(self.project_approved)}


@dataclass(frozen=True, slots=True)
class SavedRule:
    """A rule written to a settings file: as written, where, and whether it counts now."""

    text: str
    path: Path
    added: bool  # False: the file held it already
    counted: bool  # False: the file waits for the project's approval


def unknown_tool_warnings(rules: PermissionRules, known_tools: list[str]) -> list[str]:
    known = set(known_tools) | set(LATE_TOOLS)
    unknown = sorted({
        rule.text for _behavior, rule in rules.all_rules()
        if rule.tools and not rule.tools & known and not rule.text.startswith(MCP_PREFIX)
    })
    if not unknown:
        return []
    return [f"permission rule(s) naming no known tool: {', '.join(unknown)} "
            f"(tools: {', '.join(sorted(set(known_tools)))})"]
