"""The session's permission state that tools and the UI share.

What each mode allows is the mode table's (:mod:`mini_claude.permissions.mode_table`).

One :class:`Permissions` object lives for a session and is shared by its
sub-agents, so a mode switch (Shift+Tab, an approved plan) reaches every agent
at once and a sub-agent in plan mode cannot write either.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mini_claude.permissions.mode_table import (
    DEFAULT_MODE,
    MODES,
    ModeRow,
    PermissionMode,
    mode_row,
)
from mini_claude.permissions.rules import Behavior, PermissionRules, Rule, Verdict

if TYPE_CHECKING:
    from mini_claude.permissions.sandbox.state import SandboxState

SESSION_SOURCE = "this session"


@dataclass
class Permissions:
    """The rules in force, the mode, and what the user allowed for this session."""

    rules: PermissionRules = field(default_factory=PermissionRules)
    mode: PermissionMode = DEFAULT_MODE
    additional_directories: tuple[Path, ...] = ()
    bypass_available: bool = False  # Shift+Tab reaches bypassPermissions only if started so
    bypass_disabled: bool = False  # a settings file set disableBypassPermissionsMode
    session_allow: list[Rule] = field(default_factory=list)
    turn_allow: tuple[Rule, ...] = ()  # a custom command's allowed-tools, for its turn only
    removed: set[int] = field(default_factory=set)  # ids of rules /permissions took away
    approved_plan: str | None = None  # the plan the user approved, kept across compactions
    proposed_plan: str | None = None  # print mode: the plan handed back unapproved
    on_change: list[Callable[[], None]] = field(default_factory=list)
    mode_told: str | None = None  # the mode the model was last told about
    sandbox: SandboxState | None = None  # the OS sandbox commands run in (None: none)

    def __post_init__(self) -> None:
        if self.row.reached_only_if_started and not self.bypass_disabled:
            self.bypass_available = True

    # ---- rules ---------------------------------------------------------------------------

    def check(self, tool: str, args: Mapping[str, Any]) -> Verdict | None:
        return self.in_force().check(tool, args)

    def in_force(self) -> PermissionRules:
        def kept(rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
            return tuple(r for r in rules if id(r) not in self.removed)

        return PermissionRules(
            allow=kept((*self.rules.allow, *self.session_allow, *self.turn_allow)),
            deny=kept(self.rules.deny),
            ask=kept(self.rules.ask),
        )

    def listing(self) -> list[tuple[Behavior, Rule]]:
        """Every rule in force, deny first, as ``/permissions`` shows them."""
        return self.in_force().all_rules()

    def allow_for_session(self, rule: Rule) -> None:
        if all(r.text != rule.text for r in self.session_allow):
            self.session_allow.append(rule)

    def remove(self, rule: Rule) -> None:
        """Take a rule away for the rest of the session (its file is left as it is)."""
        if rule in self.session_allow:
            self.session_allow.remove(rule)
        else:
            self.removed.add(id(rule))

    # ---- modes ---------------------------------------------------------------------------

    @property
    def row(self) -> ModeRow:
        """What the mode in force allows."""
        return mode_row(self.mode)

    def set_mode(self, mode: PermissionMode) -> None:
        if MODES[mode].asks_nothing:
            if self.bypass_disabled:
                mode = DEFAULT_MODE
            else:
                self.bypass_available = True
        self.mode = mode
        for listener in list(self.on_change):
            listener()

    def next_mode(self) -> PermissionMode:
        """Shift+Tab: the table's cycle, with the modes reached only if started so when
        this session was."""
        rows = sorted(MODES.values(), key=lambda row: row.cycle)
        cycle = [row.name for row in rows
                 if not row.reached_only_if_started or self.bypass_available]
        index = cycle.index(self.mode) if self.mode in cycle else -1
        return cycle[(index + 1) % len(cycle)]

    def approve_plan(self, plan: str, mode: PermissionMode) -> None:
        self.approved_plan = plan
        self.set_mode(mode)

    def inside_workspace(self, path: Path, root: Path) -> bool:
        """Inside the project or one of its additional directories (links followed)."""
        folders = (root.expanduser().resolve(), *self.additional_directories)
        return any(path.is_relative_to(folder) for folder in folders)
