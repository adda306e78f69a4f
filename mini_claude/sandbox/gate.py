"""How the sandbox changes the permission decision for a command, and its command line.

The gate and run_shell ask the same function, so a command is never judged as sandboxed
and then run without it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from mini_claude.sandbox.network import Asker

if TYPE_CHECKING:
    from mini_claude.permissions.modes import Permissions
    from mini_claude.sandbox.state import SandboxState
    from mini_claude.tools.base import ToolContext

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


def sandbox_prefix(args: dict[str, Any], ctx: ToolContext, cwd: Path) -> list[str]:
    """The bubblewrap command line before ``bash -c`` (empty: not sandboxed)."""
    state = _state(ctx)
    decided = boxing(args, ctx.rules)
    if state is None or ctx.rules is None or decided is None or decided.how != "sandboxed":
        return []
    rules = ctx.rules
    return state.prefix(rules.mode, ctx.root, rules.additional_directories, cwd, _asker(ctx))


def _asker(ctx: ToolContext) -> Asker | None:
    """The session's question on the loop this command runs on (a new domain is asked about
    while the command waits for it)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return Asker(ctx.approve, loop)


def failure_note(ctx: ToolContext) -> str:
    state = _state(ctx)
    if state is None or ctx.rules is None:
        return ""
    return state.failure_note(ctx.rules.mode, ctx.root, ctx.rules.additional_directories)


def _state(ctx: ToolContext) -> SandboxState | None:
    return ctx.rules.sandbox if ctx.rules is not None else None
