"""A deny rule for a command holds wherever the command sits on the line.

Every form the probe found, then generated compositions: any nesting of
compound statements, wrappers, substitutions and quoting around a denied
command is still denied, and an allow rule never lets such a line through.
"""

from __future__ import annotations

import shlex

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mini_claude.permissions.rules import PermissionRules, parse_rule
from mini_claude.permissions.shell_parse import analyse

DENY_RM = PermissionRules(deny=(parse_rule("run_shell(rm:*)", "test"),))
DENY_RM_CLAUDE = PermissionRules(deny=(parse_rule("Bash(rm:*)", "test"),))
ALLOW_EVERYDAY = PermissionRules(allow=tuple(
    parse_rule(r, "test") for r in ("run_shell(echo:*)", "Bash(git status:*)", "Bash(ls *)",
                                    "run_shell(sh:*)", "run_shell(true:*)")))

PROBE_FORMS = [
    "if true; then rm f; fi",
    "/bin/rm f",
    "\\rm f",
    "echo f | xargs rm",
    "timeout 5 rm f",
    "eval rm f",
    "sh -c 'rm f'",
    "bash -c \"rm -rf f\"",
    "env X=1 rm f",
    "nice rm f",
    "nice -n 10 rm f",
    "time rm f",
    "$(rm f)",
    "echo $(rm f)",
    "`rm f`",
    "(rm f)",
    "{ rm f; }",
    "f() { rm f; }; f",
    "command rm f",
    "r''m f",
    '"rm" f',
    "'rm' f",
    "r\\m f",
    "$'rm' f",
    "$'\\x72m' f",
    "sudo -u root rm f",
    "X=1 rm f",
    "true && rm f",
    "false || rm f",
    "ls; rm f",
    "ls\nrm f",
    "cat <(rm f)",
    "for i in 1 2; do rm $i; done",
    "while true; do rm f; break; done",
    "find . -name '*.tmp' -exec rm {} \\;",
    "find . -delete",
    "exec rm f",
    "nohup rm f &",
    "xargs -n 1 rm < list",
    "stdbuf -o0 rm f",
    "case x in x) rm f;; esac",
    "echo \"$(rm f)\"",
]
UNCERTAIN_FORMS = [
    "$X f",
    "${CMD} f",
    'eval "$(cat commands.txt)"',
    'sh -c "$CMD"',
    "$(echo rm) f",
    "bash <<EOF\nrm f\nEOF",
    "echo 'unterminated",
    "rm f (",
]
NOT_RM = ["echo rm", "grep -r rm src", "rmdir empty", "firm f", "ls -la", "git rm --cached x",
          "command -v rm", "echo 'rm -rf /'"]


@pytest.mark.parametrize("command", PROBE_FORMS)
def test_every_probe_form_is_denied(command: str) -> None:
    for rules in (DENY_RM, DENY_RM_CLAUDE):
        verdict = rules.check("run_shell", {"command": command})
        assert verdict is not None and verdict.behavior == "deny", command
    assert not analyse(command).uncertain or command.startswith(("$(", "`")), command


@pytest.mark.parametrize("command", UNCERTAIN_FORMS)
def test_a_line_the_parser_cannot_see_through_is_denied(command: str) -> None:
    assert analyse(command).uncertain
    verdict = DENY_RM.check("run_shell", {"command": command})
    assert verdict is not None and verdict.behavior == "deny"


@pytest.mark.parametrize("command", NOT_RM)
def test_commands_that_only_mention_rm_are_not_denied(command: str) -> None:
    assert DENY_RM.check("run_shell", {"command": command}) is None


def test_git_rm_is_denied_by_a_git_rm_rule_and_not_by_a_git_status_one() -> None:
    rules = PermissionRules(deny=(parse_rule("Bash(git rm:*)", "test"),))
    assert rules.check("run_shell", {"command": "cd x && git rm -r src"}) is not None
    assert rules.check("run_shell", {"command": "git status"}) is None


# ---- generated compositions ----------------------------------------------------------------

DENIED_CORES = st.sampled_from([
    "rm f", "rm -rf build", "/bin/rm f", "/usr/bin/rm -f f", "\\rm f", "r''m f", '"rm" f',
    "'rm' f", "r\\m f", "$'rm' f", "echo f | xargs rm", "xargs rm < list",
    "find . -exec rm {} +",
])


def _quote(command: str) -> str:
    return shlex.quote(command)


WRAPPERS = [
    lambda c: f"if true; then {c}; fi",
    lambda c: f"if false; then :; else {c}; fi",
    lambda c: f"sudo {c}",
    lambda c: f"timeout 5 {c}",
    lambda c: f"timeout -s KILL 5 {c}",
    lambda c: f"nice -n 5 {c}",
    lambda c: f"env X=1 Y=2 {c}",
    lambda c: f"X=1 {c}",
    lambda c: f"time {c}",
    lambda c: f"command {c}",
    lambda c: f"nohup {c}",
    lambda c: f"exec {c}",
    lambda c: f"( {c} )",
    lambda c: f"{{ {c}; }}",
    lambda c: f"echo $({c})",
    lambda c: f'echo "$({c})"',
    lambda c: f"sh -c {_quote(c)}",
    lambda c: f"bash -c {_quote(c)}",
    lambda c: f"eval {_quote(c)}",
    lambda c: f"true && {c}",
    lambda c: f"false || {c}",
    lambda c: f"ls; {c}",
    lambda c: f"{c}; ls",
    lambda c: f"echo x | {c}",
    lambda c: f"{c} | cat",
    lambda c: f"f() {{ {c}; }}; f",
    lambda c: f"for i in 1 2; do {c}; done",
    lambda c: f"while true; do {c}; break; done",
    lambda c: f"case y in y) {c};; esac",
    lambda c: f"cat <({c})",
    lambda c: f"{c} &",
    lambda c: f"! {c}",
]


@st.composite
def compositions(draw: st.DrawFn) -> str:
    command = draw(DENIED_CORES)
    for index in draw(st.lists(st.integers(0, len(WRAPPERS) - 1), max_size=4)):
        command = WRAPPERS[index](command)
    return command


@settings(max_examples=400, deadline=None)
@given(compositions())
def test_a_denied_command_is_denied_inside_any_composition(command: str) -> None:
    verdict = DENY_RM.check("run_shell", {"command": command})
    assert verdict is not None and verdict.behavior == "deny", command


@settings(max_examples=300, deadline=None)
@given(compositions())
def test_allow_rules_never_let_a_composition_with_a_denied_command_run(command: str) -> None:
    """Allow rules for harmless prefixes (even ``sh:*``) never allow a line that runs rm,
    unless the line is a single plain command the rule names."""
    verdict = ALLOW_EVERYDAY.check("run_shell", {"command": command})
    if verdict is not None:
        words = command.split()
        assert words[0] in ("sh", "echo", "true", "ls"), command
        assert not any(op in command for op in (";", "&", "|", "`", "$(", ">", "<", "\n"))
    merged = PermissionRules(allow=ALLOW_EVERYDAY.allow, deny=DENY_RM.deny)
    final = merged.check("run_shell", {"command": command})
    assert final is not None and final.behavior == "deny", command
