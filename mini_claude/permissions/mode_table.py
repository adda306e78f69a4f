"""The permission modes, one row each: everyone asks this table, no other file spells a mode.

The four modes are Claude Code's. A row says what its mode allows, its place in
Shift+Tab's cycle, its words on the status line and in an editor's picker, and what the
model is told when it comes into force. Kept free of imports so the status line, drawn
before the tools are imported, can read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

PermissionMode = Literal["default", "acceptEdits", "plan", "bypassPermissions"]


@dataclass(frozen=True, slots=True)
class ModeRow:
    """One permission mode: what it allows, and how the screen and the model are told."""

    name: PermissionMode  # as Claude Code spells it, in flags, settings files and editors
    title: str  # an editor's mode picker
    label: str  # the status line's marker ("": nothing shown)
    style: str  # the marker's colour on the status line
    cycle: int  # its place in Shift+Tab's cycle
    description: str  # what it does, in one line
    note: str  # what the model is told when the mode comes into force
    edits_unasked: bool = False  # edits inside the project run without asking
    read_only: bool = False  # only read-only tools run; the plan is approved to leave it
    asks_nothing: bool = False  # nothing asks (deny rules still hold)
    reached_only_if_started: bool = False  # Shift+Tab offers it only to a session started so
    noted_every_turn: bool = False  # the model is reminded on every message, not once


MODES: dict[str, ModeRow] = {row.name: row for row in (
    ModeRow("default", "Ask before changes", "", "class:status.mode", 0,
            "ask before anything that changes something",
            "The permission mode is now default: changes ask the user before they run."),
    ModeRow("acceptEdits", "Accept edits", "⏵⏵ accept edits on", "class:status.mode", 1,
            "edits and new files inside the project (and its additional directories) go "
            "through without asking; commands still ask",
            "The permission mode is now acceptEdits: file edits inside the project run "
            "without asking; commands still ask.", edits_unasked=True),
    ModeRow("plan", "Plan", "⏸ plan mode on", "class:status.mode.plan", 2,
            "only read-only tools run; the model ends its planning with exit_plan_mode and "
            "the user approves the plan (or keeps planning)",
            "Plan mode is active: the user wants a plan before any change. Do not edit or "
            "write files, and run only read-only commands (anything else is refused). Explore "
            "with read-only tools, then call exit_plan_mode with your plan for the user's "
            "approval. If the request is only a question, answer it without exit_plan_mode.",
            read_only=True, noted_every_turn=True),
    ModeRow("bypassPermissions", "Bypass permissions", "⚠ bypass permissions on",
            "class:status.mode.bypass", 3,
            "nothing asks (--yes); deny rules still hold",
            "The permission mode is now bypassPermissions: tools run without asking (deny "
            "rules still hold).", asks_nothing=True, reached_only_if_started=True),
)}
DEFAULT_MODE: PermissionMode = "default"
ACCEPT_EDITS_MODE: PermissionMode = "acceptEdits"
BYPASS_MODE: PermissionMode = next(row.name for row in MODES.values() if row.asks_nothing)


def mode_row(mode: str) -> ModeRow:
    """The row of a mode name (the default's for a name no table holds)."""
    return MODES.get(mode, MODES[DEFAULT_MODE])


def parse_mode(value: str) -> PermissionMode:
    """A mode name as Claude Code spells it (case-insensitive); ValueError otherwise."""
    for mode in MODES:
        if value.strip().lower() == mode.lower():
            return MODES[mode].name
    raise ValueError(f"unknown permission mode {value!r} (choose from {', '.join(MODES)})")


def mode_from_flags(args: object) -> PermissionMode | None:
    """``--permission-mode``, with ``--yes`` as ``bypassPermissions``; None when not given.

    ValueError when the two contradict each other.
    """
    mode: PermissionMode | None = getattr(args, "permission_mode", None)
    if getattr(args, "yes", False):
        if mode not in (None, BYPASS_MODE):
            raise ValueError(f"--yes means --permission-mode {BYPASS_MODE}; it cannot be "
                             f"combined with --permission-mode {mode}")
        return BYPASS_MODE
    return mode
