"""``/permissions``: the rules in force, where each came from, adding one, taking one away.

``/permissions`` lists them numbered, deny first (the order they are checked in),
with the permission mode and the additional directories; ``/permissions add allow
'Bash(npm test:*)' [--scope local|project|user]`` writes a rule to that scope's
settings file (Claude Code's files; ``local`` by default) and it counts at once;
``/permissions remove N`` drops rule N for the rest of the session (its settings
file is left as it is: edit the file to drop it for good).
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import TYPE_CHECKING, get_args

from rich.table import Table
from rich.text import Text

from mini_claude.ui.render import note

if TYPE_CHECKING:
    from mini_claude.session.wiring import Session
    from mini_claude.ui.host import ReplHost

USAGE = ("usage: /permissions [add allow|ask|deny RULE [--scope local|project|user]] "
         "[remove N]")
BEHAVIOR_STYLES = {"deny": "red", "ask": "yellow", "allow": "green"}


async def permissions_command(repl: ReplHost, argument: str) -> None:
    words = argument.split()
    if not words:
        show_permissions(repl)
    elif words[0] in ("remove", "rm", "delete") and len(words) == 2:
        remove_rule(repl, words[1])
    elif words[0] == "add":
        add_rule_command(repl, argument.strip()[3:])
    else:
        repl.console.print(note(USAGE, "warning"))


def show_permissions(repl: ReplHost) -> None:
    setup = repl.session.permission_setup
    permissions = setup.permissions
    rules = permissions.listing()
    repl.console.print(Text.assemble(("permission mode: ", "dim"), (permissions.mode, "bold"),
                                     (f"  ({setup.default_mode_source()}; shift+tab cycles)",
                                      "dim")))
    for folder in permissions.additional_directories:
        repl.console.print(Text.assemble(("additional directory: ", "dim"), str(folder)))
    if not rules:
        repl.console.print(note("no permission rules; add them under \"permissions\" in "
                                ".claude/settings.json or ~/.mini-claude/settings.json"))
    else:
        table = Table(box=None, show_header=True, padding=(0, 2, 0, 0), header_style="dim")
        for column in ("#", "rule", "", "from"):
            table.add_column(column)
        for number, (behavior, rule) in enumerate(rules, 1):
            table.add_row(str(number), rule.text, Text(behavior, style=BEHAVIOR_STYLES[behavior]),
                          Text(rule.source, style="dim"))
        repl.console.print(table)
    if setup.trust_status() in ("unknown", "denied"):
        repl.console.print(note("this project's settings count only for their deny rules until "
                                "approved (/hooks approve)", "warning"))


def remove_rule(repl: ReplHost, which: str) -> None:
    permissions = repl.session.permission_setup.permissions
    rules = permissions.listing()
    if not which.isdigit() or not 1 <= int(which) <= len(rules):
        repl.console.print(note(f"no rule {which!r}; /permissions lists them numbered", "warning"))
        return
    behavior, rule = rules[int(which) - 1]
    permissions.remove(rule)
    repl.console.print(note(f"removed {behavior} rule {rule.text} ({rule.source}) for this "
                            "session"))


def add_rule_command(repl: ReplHost, argument: str) -> None:
    """``add allow|ask|deny RULE [--scope S]``: the rule is written and counts at once."""
    from mini_claude.permissions.rules import Behavior
    from mini_claude.session.settings_files import RULE_SCOPES

    try:
        words = shlex.split(argument)
    except ValueError as exc:
        repl.console.print(note(f"{exc}; {USAGE}", "warning"))
        return
    scope = "local"
    for flag in ("--scope", "-s"):
        if flag in words:
            at = words.index(flag)
            scope = words[at + 1] if at + 1 < len(words) else ""
            del words[at:at + 2]
    behaviors = get_args(Behavior)
    if len(words) < 2 or words[0] not in behaviors or scope not in RULE_SCOPES:
        repl.console.print(note(USAGE, "warning"))
        return
    line = save_rule_line(repl.session, words[0], " ".join(words[1:]), scope)
    repl.console.print(note(line))


def save_rule_line(session: Session, behavior: str, rule: str, scope: str, *,
                   answered: bool = False) -> str:
    """Write the rule to its scope's settings file; one line saying where, or why not.

    ``answered``: from "don't ask again", which keeps the rule for the session anyway."""
    from mini_claude.permissions.rules import RuleError
    from mini_claude.session.settings_files import SettingsWriteError

    try:
        saved = session.permission_setup.save_rule(behavior, rule, scope)  # type: ignore[arg-type]
    except (RuleError, SettingsWriteError) as exc:
        return f"{exc}; kept for this session only" if answered else str(exc)
    where = _shown_path(saved.path, session.cwd)
    said = f"{behavior} {saved.text}: saved to {where}" if saved.added else (
        f"{behavior} {saved.text}: already in {where}")
    if not saved.counted:
        said += " (counts once the project's settings are approved: /hooks approve"
        said += "; allowed for this session meanwhile)" if behavior == "allow" else ")"
    return said


def _shown_path(path: Path, cwd: Path) -> str:
    try:
        return str(path.relative_to(cwd))
    except ValueError:
        home = Path.home()
        return f"~/{path.relative_to(home)}" if path.is_relative_to(home) else str(path)


def keep_rules_in_settings(session: Session) -> None:
    """"Don't ask again" writes its rule to ``.claude/settings.local.json``, as Claude Code."""
    from mini_claude.ui.permissions import TerminalApprover

    approver = session.approver
    if isinstance(approver, TerminalApprover):
        approver.rule_saver = lambda rule: save_rule_line(session, "allow", rule, "local",
                                                          answered=True)
        approver.project_label = str(session.cwd)
