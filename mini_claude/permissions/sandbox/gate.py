"""How the sandbox changes the permission decision for a command, and its command line.

The gate and run_shell ask the same function, so a command is never judged as sandboxed
and then run without it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mini_claude.permissions.sandbox.network import Asker

if TYPE_CHECKING:
    from mini_claude.permissions.asking import Approver
    from mini_claude.permissions.modes import Permissions

LEAVE_ARGUMENT = "dangerouslyDisableSandbox"
REASON_ARGUMENT = "reason"


@dataclass(frozen=True)
class Boxing:
    """``sandboxed``: runs inside; ``outside``: runs without it (asked as before);
    ``refused``: may not run at all (``message`` says why)."""

    how: Literal["sandboxed", "outside", "refused"]
    message: str = ""


def boxing(args: dict[str, Any], permissions: Permissions | None) -> Boxing | None:
    """What the sandbox makes of one command; None when no sandbox is wanted."""
    state = permissions.sandbox if permissions is not None else None
    if state is None or not state.wanted:
        return None
    if state.missing is not None:
        if state.required:
            return Boxing("refused", f"Permission denied: the sandbox is required "
                                     f"(sandbox.failIfUnavailable) and cannot run here: "
                                     f"{state.missing}. Nothing was run.")
        return Boxing("outside")
    if args.get(LEAVE_ARGUMENT) is True:
        if not state.allow_unsandboxed:
            return Boxing("refused", "Permission denied: commands cannot leave the sandbox "
                                     "(sandbox.allowUnsandboxedCommands is false); run it "
                                     f"without {LEAVE_ARGUMENT}. Nothing was run.")
        return Boxing("outside")
    if state.excluded(str(args.get("command", ""))):
        return Boxing("outside")
    return Boxing("sandboxed")


def leave_reason(args: dict[str, Any]) -> str | None:
    """The model's reason for running a command outside the sandbox, for the question."""
    if args.get(LEAVE_ARGUMENT) is not True:
        return None
    reason = str(args.get(REASON_ARGUMENT) or "").strip()
    return reason or "no reason given"


def sandbox_prefix(args: dict[str, Any], permissions: Permissions | None, root: Path, cwd: Path,
                   approve: Approver) -> list[str]:
    """The bubblewrap command line before ``bash -c`` (empty: not sandboxed)."""
    decided = boxing(args, permissions)
    if permissions is None or permissions.sandbox is None or decided is None \
            or decided.how != "sandboxed":
        return []
    return permissions.sandbox.prefix(permissions.mode, root, permissions.additional_directories,
                                      cwd, _asker(approve))


def _asker(approve: Approver) -> Asker | None:
    """The session's question on the loop this command runs on (a new domain is asked about
    while the command waits for it)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return Asker(approve, loop)


def failure_note(permissions: Permissions | None, root: Path) -> str:
    if permissions is None or permissions.sandbox is None:
        return ""
    return permissions.sandbox.failure_note(permissions.mode, root,
                                            permissions.additional_directories)
