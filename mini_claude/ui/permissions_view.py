"""``/permissions``: the rules in force, where each came from, and taking one away.

``/permissions`` lists them numbered, deny first (the order they are checked in),
with the permission mode and the additional directories; ``/permissions remove N``
drops rule N for the rest of the session (its settings file is left as it is:
edit the file to drop it for good).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text

from mini_claude.ui.render import note

if TYPE_CHECKING:
    from mini_claude.ui.host import ReplHost

USAGE = "usage: /permissions [remove N]"
BEHAVIOR_STYLES = {"deny": "red", "ask": "yellow", "allow": "green"}


async def permissions_command(repl: ReplHost, argument: str) -> None:
    words = argument.split()
    if not words:
        show_permissions(repl)
    elif words[0] in ("remove", "rm", "delete") and len(words) == 2:
        remove_rule(repl, words[1])
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
