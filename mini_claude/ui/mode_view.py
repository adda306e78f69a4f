"""The permission mode on screen: the status line's marker.

Claude Code's words: nothing in the default mode, ``⏵⏵ accept edits on``,
``⏸ plan mode on`` and, always visible, ``⚠ bypass permissions on``; each
with the key that changes it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the status line is drawn before the tools are imported
    from mini_claude.tools.permission_modes import Permissions

MODE_LABELS: dict[str, str] = {
    "default": "",
    "acceptEdits": "⏵⏵ accept edits on",
    "plan": "⏸ plan mode on",
    "bypassPermissions": "⚠ bypass permissions on",
}
CYCLE_HINT = "(shift+tab to cycle)"


def mode_marker(permissions: Permissions | None) -> str:
    """The status line's mode text; empty in the default mode."""
    if permissions is None:
        return ""
    label = MODE_LABELS.get(permissions.mode, permissions.mode)
    return f"{label} {CYCLE_HINT}" if label else ""
