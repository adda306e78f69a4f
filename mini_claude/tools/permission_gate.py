"""The one permission decision before a tool runs: rules, mode, remembered answers, the user.

In order, as Claude Code decides:

1. a **deny** rule refuses the call, in every mode;
2. **plan** mode refuses anything that is not read-only (a command in the sandbox, where
   nothing is writable in plan mode, counts as read-only);
3. an **ask** rule asks, in every mode (print mode, which cannot ask, refuses);
   then a command that runs in the sandbox runs (``autoAllowBashIfSandboxed``);
4. **bypassPermissions** (``--yes``) runs it, except a read of mini-claude's own home
   (other sessions, the home ``.env``), which only an allow rule or a person lets through;
5. an **allow** rule (from a file, a flag, or "don't ask again") runs it;
6. a tool that needs no approval (a read inside the project) runs;
7. **acceptEdits** runs edits and new files inside the project and its additional
   directories, and ``mkdir``/``touch``/``mv``/``cp`` there;
8. otherwise the user is asked. "Don't ask again" keeps the proposed rule (a
   command prefix such as ``cat:*``; the REPL also writes it to the project's
   ``.claude/settings.local.json``), or the exact subject for the session.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from mini_claude.permissions.asking import PermissionDecision, PermissionRequest
from mini_claude.permissions.command_kinds import (
    is_read_only_command,
    is_workspace_file_command,
    suggest_rule,
)
from mini_claude.permissions.mode_table import DEFAULT_MODE
from mini_claude.permissions.modes import SESSION_SOURCE, Permissions
from mini_claude.permissions.protected_paths import is_protected_path
from mini_claude.permissions.rules import (
    PermissionDenied,
    RuleError,
    Verdict,
    parse_rule,
    url_host,
)
from mini_claude.permissions.sandbox.gate import boxing, leave_reason
from mini_claude.permissions.shell_parse import analyse
from mini_claude.permissions.shell_reach import read_only_problem
from mini_claude.protocol import ToolOutput
from mini_claude.text import shorten
from mini_claude.tool_kinds import known_tools
from mini_claude.tools.base import Prepared, Tool, ToolContext
from mini_claude.tools.common import error_output
from mini_claude.tools.paths import write_caution

EXIT_PLAN_TOOL = "exit_plan_mode"
PLAN_MODE_REFUSAL = (
    "Permission denied: plan mode is on: only read-only tools run, so {name} was not run and "
    "nothing changed. "
    "Keep exploring with read-only tools; when your plan is ready, call exit_plan_mode "
    "with it for the user's approval."
)
BEYOND_BYPASS = (
    "reading mini-claude's home (other sessions, the home .env) is not covered by --yes "
    "or bypassPermissions; only an explicit allow rule or the user in the REPL allows it"
)


def permissions_of(ctx: ToolContext) -> Permissions:
    """The session's permission state (a bare context gets an empty one, kept on it)."""
    if ctx.rules is None:
        ctx.rules = Permissions()
    return ctx.rules


async def check_permission(
    tool: Tool, args: dict[str, Any], ctx: ToolContext
) -> Prepared | ToolOutput:
    """What the tool prepared, for ``run`` to carry out; an error result the model reads
    when the call may not run."""
    permissions = permissions_of(ctx)
    name = tool.spec.name
    verdict = permissions.check(name, args)
    if verdict is not None and verdict.behavior == "deny":
        return _refuse(ctx, name, args, f"Permission denied by {_why(verdict, name, args)}")
    boxed = boxing(args, permissions) if tool.traits.kind == "shell" else None
    if boxed is not None and boxed.how == "refused":
        return _refuse(ctx, name, args, boxed.message)
    sandboxed = boxed is not None and boxed.how == "sandboxed"
    if permissions.row.read_only and not (sandboxed or runs_in_plan_mode(tool, args)):
        return _refuse(ctx, name, args, _plan_refusal(name, args))
    prepared = _with_leave_reason(tool.permission(args, ctx), args)
    caution = _write_caution(tool, args, ctx)
    if caution is not None and not permissions.row.asks_nothing:
        return await _ask_with_caution(ctx, tool, args, prepared, verdict, caution)
    request = prepared.request
    if verdict is not None and verdict.behavior == "ask":
        return await _ask(ctx, prepared, request or _plain_request(name, args), args, verdict)
    if sandboxed and permissions.sandbox is not None and permissions.sandbox.auto_allow:
        return prepared  # confined: what it can touch no longer rests on reading it right
    if permissions.row.asks_nothing and not (request and request.beyond_yes):
        return prepared
    if verdict is not None or request is None:
        return prepared  # an allow rule answered for the user, or nothing needs approval
    if permissions.row.edits_unasked and _edit_in_workspace(name, args, ctx, permissions):
        return prepared
    if request.subject in ctx.allowed_subjects:
        return prepared
    return await _ask(ctx, prepared, request, args, None)


def withheld_by_rules(tool: str, ctx: ToolContext) -> Callable[[str], bool]:
    """Whether a file a search or listing meets in passing is one a deny or ask rule keeps
    from this tool (``Read(.env)``): it is left out, since nobody is asked per file."""
    permissions = permissions_of(ctx)
    argument = known_tools().traits(tool).rule_argument or "path"
    judged: dict[str, bool] = {}

    def withheld(path: str) -> bool:
        if path not in judged:
            verdict = permissions.check(tool, {argument: path})
            judged[path] = verdict is not None and not verdict.allowed
        return judged[path]

    return withheld


def users_own(ctx: ToolContext) -> ToolContext:
    """The context for a command the user typed (``!cmd``): it is the user's own command, so
    it runs without a question, in any mode, as Claude Code's bash mode does. Permission
    rules (deny included) and modes govern what the model may do; the user at the prompt
    could run the same line in any other terminal."""
    lifted = Permissions(mode=DEFAULT_MODE, additional_directories=permissions_of(ctx)
                         .additional_directories)
    return replace(ctx, rules=lifted, approve=_typed_by_the_user)


async def _typed_by_the_user(request: PermissionRequest) -> PermissionDecision:
    """The answer to a question about the user's own command: typing it was the yes."""
    return PermissionDecision(True)


def runs_in_plan_mode(tool: Tool, args: dict[str, Any]) -> bool:
    """Tools that declare they change nothing (reads, the tool that ends planning, web_fetch,
    which asks first), and read-only commands."""
    traits = tool.traits
    if traits.kind == "shell":
        return is_read_only_command(str(args.get(traits.rule_argument, "")))
    return traits.plan_mode


def _with_leave_reason(prepared: Prepared, args: dict[str, Any]) -> Prepared:
    """A command that asks to run outside the sandbox says so, and why, in its question."""
    reason = leave_reason(args)
    if reason is None or prepared.request is None:
        return prepared
    request = prepared.request
    summary = f"{request.summary}  (outside the sandbox: {reason})"
    return replace(prepared, request=replace(request, summary=summary,
                                             subject=f"{request.subject} (unsandboxed)"))


def _write_caution(tool: Tool, args: dict[str, Any], ctx: ToolContext) -> str | None:
    """Why a write by an edit-kind tool must be asked about whatever the mode (a protected
    file, a file with other hard links); None for an ordinary write."""
    traits = tool.traits
    if traits.kind != "edit":
        return None
    return write_caution(str(args.get(traits.rule_argument, "")), ctx)


async def _ask_with_caution(
    ctx: ToolContext,
    tool: Tool,
    args: dict[str, Any],
    prepared: Prepared,
    verdict: Verdict | None,
    caution: str,
) -> Prepared | ToolOutput:
    """A write that no mode, broad rule or earlier "yes" covers: only an allow rule naming
    this very path, or the user asked now (or who said yes to this path before)."""
    name = tool.spec.name
    if verdict is not None and verdict.allowed and _names_one_path(verdict):
        return prepared
    base = prepared.request or _plain_request(name, args)
    subject = f"{name}:{args.get(tool.traits.rule_argument, '')}"
    if subject in ctx.allowed_subjects:
        return prepared
    request = replace(base, summary=f"{base.summary} ({caution})", subject=subject, rule=None)
    asking = verdict if verdict is not None and verdict.behavior == "ask" else None
    return await _ask(ctx, prepared, request, args, asking, caution)


def _names_one_path(verdict: Verdict) -> bool:
    """An allow rule that names one path, no wildcard: the user meant this file."""
    rule = verdict.rule
    return rule.kind == "path" and rule.pattern is not None and not any(
        char in rule.pattern for char in "*?[")


async def _ask(
    ctx: ToolContext,
    prepared: Prepared,
    request: PermissionRequest,
    args: dict[str, Any],
    verdict: Verdict | None,
    caution: str | None = None,
) -> Prepared | ToolOutput:
    """The user's answer: the prepared call when they said yes, a refusal otherwise."""
    name = request.tool_name
    if verdict is None:
        request = replace(request, rule=request.rule or proposed_rule(name, args))
    else:
        request = replace(request, summary=f"{request.summary}  (asked by {verdict.reason})")
    decision = await ctx.approve(request)
    if not decision.allowed and not decision.asked and verdict is not None:
        decision = replace(decision, reason=f"{verdict.reason} asks first, and nobody can be "
                                            "asked here")
    elif not decision.allowed and not decision.asked and request.beyond_yes:
        decision = replace(decision, reason=BEYOND_BYPASS)
    elif not decision.allowed and not decision.asked and caution is not None:
        decision = replace(decision, reason=f"{caution}; writing it needs the user's "
                                            "approval in every mode but bypassPermissions, "
                                            "and nobody can be asked here")
    if not decision.allowed:
        reason = f": {decision.reason}" if decision.reason else ""
        who = " by the user" if decision.asked else ""
        ctx.denials.append(PermissionDenied(name, dict(args), decision.reason or ""))
        return error_output(f"Permission denied{who}{reason}")
    if decision.remember and verdict is None:
        _remember(ctx, request, args)
    return prepared


def proposed_rule(name: str, args: dict[str, Any]) -> str | None:
    """What "don't ask again" offers: a command's family, or a fetched URL's domain."""
    traits = known_tools().traits(name)
    if traits.rule_kind == "command":
        return suggest_rule(str(args.get(traits.rule_argument, "")))
    if traits.rule_kind == "domain":
        host = url_host(str(args.get(traits.rule_argument, "")))
        return f"{name}(domain:{host})" if host else None
    return None


def _remember(ctx: ToolContext, request: PermissionRequest, args: dict[str, Any]) -> None:
    """"Don't ask again": the proposed rule for the session, or the exact subject (nothing
    when the answer already put an allow rule in force, saved to a settings file)."""
    verdict = permissions_of(ctx).check(request.tool_name, args)
    if verdict is not None and verdict.allowed:
        return
    if request.rule:
        try:
            rule = parse_rule(request.rule, SESSION_SOURCE, ctx.root)
        except RuleError:
            rule = None
        if rule is not None:
            permissions_of(ctx).allow_for_session(rule)
            return
    ctx.allowed_subjects.add(request.subject)


def _edit_in_workspace(
    name: str, args: dict[str, Any], ctx: ToolContext, permissions: Permissions
) -> bool:
    """An edit, a new file, or ``mkdir``/``touch``/``mv``/``cp`` inside the workspace, and
    none of it configuration that other programs run (``cp hook .git/hooks/x`` asks)."""

    def inside(raw: str) -> bool:
        if not raw or "\x00" in raw:
            return False
        target = (ctx.root.expanduser().resolve() / Path(raw).expanduser()).resolve()
        if is_protected_path(Path(raw).expanduser(), ctx.root, Path.home()) is not None:
            return False
        return permissions.inside_workspace(target, ctx.root)

    traits = known_tools().traits(name)
    if traits.kind == "shell":
        return is_workspace_file_command(str(args.get(traits.rule_argument, "")), inside)
    return traits.kind == "edit" and inside(str(args.get(traits.rule_argument, "")))


def _plan_refusal(name: str, args: dict[str, Any]) -> str:
    """The plan-mode refusal; for a command, also why it is not certainly read-only."""
    message = PLAN_MODE_REFUSAL.format(name=name)
    traits = known_tools().traits(name)
    command = args.get(traits.rule_argument) if traits.rule_kind == "command" else None
    why = read_only_problem(str(command)) if command is not None else None
    return f"{message} (The command is not certainly read-only: {why}.)" if why else message


def _refuse(ctx: ToolContext, name: str, args: dict[str, Any], message: str) -> ToolOutput:
    ctx.denials.append(PermissionDenied(name, dict(args), message))
    return error_output(message)


def _why(verdict: Verdict, name: str, args: dict[str, Any]) -> str:
    """The rule, and for a line the parser could not see through, why it was not sure."""
    traits = known_tools().traits(name)
    if traits.rule_kind != "command" or verdict.rule.kind != "command":
        return verdict.reason
    analysis = analyse(str(args.get(traits.rule_argument, "")))
    if analysis.uncertain:
        return (f"{verdict.reason}: the command line cannot be checked for it "
                f"({analysis.reasons[0]})")
    return verdict.reason


def _plain_request(name: str, args: dict[str, Any]) -> PermissionRequest:
    """A question for a tool that would not ask by itself (an ask rule names it)."""
    shown = shorten(json.dumps(args, ensure_ascii=False), 200, marker="…")
    return PermissionRequest(tool_name=name, summary=f"{name} {shown}", subject=name)
