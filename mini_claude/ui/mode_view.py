"""The permission mode on screen: the status line's marker.

Claude Code's words, from the mode table: nothing in the default mode, and in the
others their label, each with the key that changes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the status line is drawn before the tools are imported
    from mini_claude.permissions.modes import Permissions

CYCLE_HINT = "(shift+tab to cycle)"


SANDBOX_MARKER = "▣ sandboxed"


def mode_marker(permissions: Permissions | None) -> str:
    """The status line's mode text, and that commands run in the sandbox; empty in the
    default mode without it."""
    if permissions is None:
        return ""
    label = permissions.row.label
    parts = [f"{label} {CYCLE_HINT}"] if label else []
    if permissions.sandbox is not None and permissions.sandbox.active:
        parts.append(SANDBOX_MARKER)
    return " · ".join(parts)
