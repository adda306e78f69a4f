"""Asking the user: the question a call puts, the answer, and who answers it
(the terminal, an editor, print mode's fixed answer, a sub-agent's parent)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PermissionRequest:
    tool_name: str
    summary: str  # one line: the command, or the path being written
    subject: str  # what "allow for the session" remembers: the command, or the tool name
    detail: str | None = None  # e.g. the diff of an edit
    rule: str | None = None  # what "don't ask again" would allow instead: ``run_shell(cat:*)``
    # Where "don't ask again" keeps an answer that is a setting, not a rule (a domain goes to
    # ``sandbox.network.allowedDomains``); the question's label names it.
    kept_in: str | None = None
    # Asked even under bypassPermissions (reads of mini-claude's home: other sessions, the
    # home .env); only the user at a prompt or an explicit allow rule lets it through.
    beyond_yes: bool = False


@dataclass(frozen=True, slots=True)
class PermissionDecision:
    allowed: bool
    remember: bool = False  # allow this subject for the rest of the session
    reason: str | None = None  # given to the model on a denial
    asked: bool = True  # False: a rule said no, nobody was asked
    mode: str | None = None  # exit_plan_mode: the permission mode the user chose


Approver = Callable[[PermissionRequest], Awaitable[PermissionDecision]]


async def deny_all(request: PermissionRequest) -> PermissionDecision:
    return PermissionDecision(
        False,
        reason="print mode does not ask; run mini-claude with --yes to allow "
        "run_shell, write_file, edit_file and web_fetch",
        asked=False,
    )


async def allow_all(request: PermissionRequest) -> PermissionDecision:
    return PermissionDecision(True)
