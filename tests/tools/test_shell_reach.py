"""What a command reaches, judged through the permission gate: options that name a target
count in acceptEdits, plan mode runs only commands that certainly only read, and a deny rule
holds wherever the parser cannot see what runs.

Each table holds the forms a review found, then the next ones an attacker would try.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from mini_claude.permissions.asking import PermissionDecision
from mini_claude.permissions.command_kinds import is_read_only_command
from mini_claude.permissions.mode_table import PermissionMode
from mini_claude.permissions.modes import Permissions
from mini_claude.permissions.rules import PermissionRules, parse_rule
from mini_claude.permissions.shell_parse import analyse
from mini_claude.protocol import ToolOutput
from mini_claude.tools.base import ToolContext
from mini_claude.tools.registry import default_registry
from tests.support.tools import ScriptedApprover, run, tool_context

REGISTRY = default_registry()


def gate(root: Path, mode: PermissionMode, *, allow: tuple[str, ...] = ()
         ) -> tuple[ToolContext, ScriptedApprover]:
    approver = ScriptedApprover(PermissionDecision(False, reason="not now"))
    ctx = tool_context(root, approve=approver)
    ctx.rules = Permissions(PermissionRules(allow=tuple(parse_rule(r, "settings", root)
                                                        for r in allow)), mode=mode)
    return ctx, approver


def shell(command: str, ctx: ToolContext) -> ToolOutput:
    return run(REGISTRY.execute("run_shell", {"command": command}, ctx))


def tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b"<dir>"
            for p in sorted(folder.rglob("*"))}


# ---- 10: options that name a target (acceptEdits) ------------------------------------------

TARGET_OPTIONS = [
    "cp --target-directory={out} a.txt",
    "mv --target-directory={out} a.txt",
    "cp --target-directory {out} a.txt",
    "cp -t {out} a.txt",
    "mv -t {out} a.txt",
    "cp -vt {out} a.txt",
    "cp -t{out} a.txt",
    "cp -rt {out} sub",
    "cp --target={out} a.txt",  # an abbreviation GNU accepts
    "mv -S /../../x a.txt sub/a.txt",  # a backup suffix is a path too
    "cp --frobnicate a.txt {out}/b",
    "install -t {out} a.txt",
    "install -D a.txt {out}/a.txt",
    "ln -t {out} a.txt",
    "ln a.txt {out}/a.txt",
    "rsync a.txt {out}/",
    "tar -C {out} -cf {out}/a.tar a.txt",
    "tar --directory={out} -cf a2.tar a.txt",
    "cp a.txt b.txt >& {out}/log",
    "cp a.txt b.txt 2>{out}/err",
    "touch --reference={out}/x a.txt",
    "mkdir -m 700 {out}/d",
    "sort -o {out}/sorted a.txt",
    "curl -o {out}/page file:///etc/hostname",
    "gcc -o {out}/prog a.c",
    "cp a.txt {out}/$NAME",
    "cp a.txt ~/copied",
    "nice cp a.txt {out}/",
]
INSIDE = [
    "cp -t sub a.txt",
    "mv --target-directory=sub b.txt",
    "cp -r sub copy",
    "mkdir -p x/y",
    "touch -c a.txt",
    "cp --target-directory sub -v a.txt",
]


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, Path]:
    project, outside = tmp_path / "project", tmp_path / "outside"
    (project / "sub").mkdir(parents=True)
    outside.mkdir()
    (project / "a.txt").write_text("alpha\n")
    (project / "b.txt").write_text("beta\n")
    (outside / "x").write_text("x\n")
    return project, outside


@pytest.mark.parametrize("template", TARGET_OPTIONS)
def test_accept_edits_asks_before_a_command_that_reaches_outside(
    template: str, workspace: tuple[Path, Path]
) -> None:
    project, outside = workspace
    command = template.format(out=outside)
    before = tree(outside)
    ctx, approver = gate(project, "acceptEdits")
    output = shell(command, ctx)
    assert output.is_error and "Permission denied by the user: not now" in output.content
    assert [r.summary for r in approver.requests] == [command]
    assert tree(outside) == before


@pytest.mark.parametrize("command", INSIDE)
def test_accept_edits_still_runs_file_commands_inside_the_project(
    command: str, workspace: tuple[Path, Path]
) -> None:
    project, _ = workspace
    ctx, approver = gate(project, "acceptEdits")
    output = shell(command, ctx)
    assert not output.is_error, output.content
    assert approver.requests == []


# ---- 11: plan mode runs only what certainly reads -----------------------------------------

NOT_READ_ONLY = [
    "git --config-env=core.fsmonitor=EVIL status",
    "git grep --open-files-in-pager=./evil.sh alpha",
    "git grep -O./evil.sh alpha",
    "GIT_EXTERNAL_DIFF=./evil.sh git diff",
    "sort --compress-program=./evil.sh a.txt",
    "sort --compress=./evil.sh a.txt",  # an abbreviation of the same option
    "sort -uo out a.txt",
    "sort --output=out a.txt",
    "uniq a.txt out",
    "xxd a.txt out",
    "file -C -m a.txt",
    "ls >& out",
    "ls &> out",
    "ls >| out",
    "ls 1>>out",
    "cat a.txt > out",
    "git -c core.fsmonitor=./evil.sh status",
    "git -c alias.st='!./evil.sh' st",
    "git -C sub status",
    "git --exec-path=. status",
    "git -p log",
    "git log --output=out",
    "git diff --ext-diff",
    "git show --textconv HEAD",
    "git cat-file --textconv HEAD:a.txt",
    "git branch new-branch",
    "git tag v9",
    "GIT_PAGER=./evil.sh git -p log",
    "PAGER=./evil.sh git log",
    "env GIT_EXTERNAL_DIFF=./evil.sh git diff",
    "env -S './evil.sh' ls",
    "export GIT_EXTERNAL_DIFF=./evil.sh; git diff",
    "rg --pre ./evil.sh alpha",
    "rg --pre=./evil.sh alpha",
    "rg -z alpha",
    "tree -o out",
    "find . -fprint out",
    "find . -fls out",
    "find . -exec ./evil.sh {} +",
    "find . -delete",
    "find . -name *.txt",  # a glob could spell an action
    "less -o out a.txt",
    "date 010101012000",
    "hostname evil",
    "time -o out ls",
    "nohup ls",
    "xargs sort < a.txt",
    "ls $(./evil.sh)",
    "cat <(./evil.sh)",
    "cat a.txt | tee out",
    "./evil.sh",
    "ls() { ./evil.sh; }; ls",
    "sed -n p a.txt",
    "awk '{print}' a.txt",
    "sort $OPTS a.txt",
    "uniq -- a.txt out",
    "printf -v PATH . ; ls",
    "for PATH in .; do ls; done",
    "((PATH=1)); ls",
    "echo $((PATH=1)); ls",
    "echo ${GIT_EXTERNAL_DIFF:=./evil.sh}; git diff",
]
READ_ONLY = [
    "ls -la", "cat a.txt b.txt | grep alpha | wc -l", "head -5 a.txt 2>/dev/null",
    "grep -rn alpha .", "rg -n --hidden -g '!.git' alpha", "cat *.txt", "ls sub/*",
    "git status", "git status --porcelain -uno", "git log --oneline -5",
    "git log -3 --stat -- a.txt",
    "git diff HEAD --stat", "git diff --cached", "git show HEAD:a.txt", "git branch -a",
    "git log --format='%h %s' -n 10", "git grep -n alpha -- '*.txt'", "git blame -L 1,2 a.txt",
    "git rev-parse --show-toplevel", "find . -name '*.txt' -type f",
    "find . -name '*.txt' | xargs grep -l alpha", "sort -k1 -n a.txt | uniq -c",
    "xxd -l 16 a.txt", "file -b a.txt", "date +%Y", "timeout 5 cat a.txt", "echo hi",
    "for f in *.txt; do wc -l \"$f\"; done", "ls 2>&1 | head", "tree -L 2",
    "printf '%s\\n' a b", "echo $((1 + 2))", "[[ -f a.txt ]] && cat a.txt",
]


HOST_CHANGING_PROGRAMS = ("date", "hostname")


@pytest.mark.parametrize("command", NOT_READ_ONLY)
def test_plan_mode_refuses_what_is_not_certainly_read_only(command: str, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    evil = tmp_path / "evil.sh"
    evil.write_text("#!/bin/sh\ntouch pwned\n")
    evil.chmod(0o755)
    # Programs that change the machine itself are stand-ins here: a judge that let one
    # through leaves a file in the folder, never a changed clock or host name.
    stubs = tmp_path / "bin"
    stubs.mkdir()
    for name in HOST_CHANGING_PROGRAMS:
        (stubs / name).write_text(f"#!/bin/sh\ntouch {tmp_path}/pwned-{name}\n")
        (stubs / name).chmod(0o755)
    before = tree(tmp_path)
    ctx, approver = gate(tmp_path, "plan", allow=("Bash",))
    ctx.env = {**os.environ, "PATH": f"{stubs}:{os.environ.get('PATH', '')}"}
    output = shell(command, ctx)
    assert output.is_error and "plan mode is on" in output.content, output.content
    assert "not certainly read-only: " in output.content
    assert tree(tmp_path) == before
    assert approver.requests == []
    assert not is_read_only_command(command)


@pytest.mark.parametrize("command", READ_ONLY)
def test_plan_mode_keeps_ordinary_reads(command: str) -> None:
    assert is_read_only_command(command), command


def test_a_read_only_command_runs_in_plan_mode_and_a_redirect_into_a_file_does_not(
    tmp_path: Path,
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    ctx, _ = gate(tmp_path, "plan", allow=("Bash",))
    listed = shell("ls 2>&1 | grep a", ctx)
    assert not listed.is_error and "a.txt" in listed.content
    refused = shell("ls >& listing", ctx)
    assert "redirected into a file (>& listing)" in refused.content
    assert not (tmp_path / "listing").exists()


# ---- 13: deny rules the parser cannot see past ---------------------------------------------

DENY = PermissionRules(deny=(parse_rule("Bash(rm:*)", "settings"),
                             parse_rule("Bash(curl:*)", "settings")))
BYPASSES = [
    "/bin/r? f", "/usr/bin/r[m] f", "/bin/{rm,true} f", "/usr/bin/cur? x",
    "env -S 'rm f'", "env -S'rm f'", "env --split-string='curl x'", "env -iS 'rm f'",
    "env -S '-i rm f'",
    "flock /tmp/l rm f", "flock -n /tmp/l curl x", "flock /tmp/l -c 'rm f'",
    "flock -c 'rm f' /tmp/l",
    "script -c 'rm f' /dev/null", "script -qc 'curl x'", "script --command='rm f'",
    "script /dev/null",
    "setpriv --reuid=1000 rm f", "setpriv --nnp curl x",
    "unshare -r rm f", "unshare --fork --pid curl x", "unshare -U",
    "prlimit --nofile=100 rm f", "prlimit -n100 rm f", "prlimit --cpu=10 curl x",
    "su -c 'rm f'", "su root -c 'rm f'", "su -c'curl x'", "su --command='rm f' root",
    "su - root -c 'rm f'", "su",
    "trap 'rm f' EXIT", "trap -- 'curl x' EXIT", "trap \"rm f\" ERR",
    ". <(echo rm f)", "source <(echo curl x)", ". /dev/stdin <<< 'rm f'",
    "bash /dev/stdin <<< 'rm f'", "source /proc/self/fd/0",
    "shopt -s expand_aliases; alias x=rm; x f", "alias ls='rm'",
    "git -c alias.x='!rm f' x", "git -c core.fsmonitor='rm f' status",
    "git --config-env=core.fsmonitor=EVIL status", "git -c core.pager='curl x' log",
    "git -c include.path=/tmp/cfg status", "git config core.fsmonitor 'rm f' && git status",
    "GIT_EXTERNAL_DIFF='rm f' git diff", "GIT_SSH_COMMAND='curl x' git fetch",
    "export GIT_PAGER='rm f'; git log", "BASH_ENV=/tmp/x bash -c true",
    "env EDITOR='rm f' git commit",
    "watch 'rm f'", "watch -n1 curl x", "busybox rm f", "bash -o errexit -c 'rm f'",
    "bash -c -- 'rm f'", "bash -lc 'curl x'", "chroot / rm f", "nsenter -t 1 -m rm f",
    "runuser -u me -- rm f", "pkexec rm f", "hash -p /bin/rm ls; ls f", "sudo -s 'rm f'",
    "sudo -i", "timeout --frobnicate 5 rm f", "strace -o /dev/null rm f", "xargs -a list rm",
    "nice --adjustment=5 rm f", "git $SUB f", "timeout 5 $CMD f",
]
HARMLESS = [
    "git -c color.ui=always log", "timeout --preserve-status 5 pytest", "env -u HOME ls",
    "flock /tmp/l make", "trap - EXIT", "trap -p", "alias", "shopt -s globstar", "git status",
    "nice -n 5 make", "ls *.py", "GIT_AUTHOR_NAME=x git commit -m y", "unshare -r ls",
    "cat *.txt | grep x", "sudo -l", "command -v rm", "echo rm", "git log --grep=curl",
]


@pytest.mark.parametrize("command", BYPASSES)
def test_a_deny_rule_holds_where_the_parser_cannot_see_past(command: str) -> None:
    verdict = DENY.check("run_shell", {"command": command})
    assert verdict is not None and verdict.behavior == "deny", command


@pytest.mark.parametrize("command", HARMLESS)
def test_harmless_lines_are_not_denied(command: str) -> None:
    assert DENY.check("run_shell", {"command": command}) is None, analyse(command).reasons


def test_a_word_known_only_at_run_time_may_complete_a_rule() -> None:
    """``git $X`` may be ``git push``; ``git log $X`` cannot be."""
    rules = PermissionRules(deny=(parse_rule("Bash(git push:*)", "settings"),
                                  parse_rule("Bash(npm * --force)", "settings")))

    def denied(command: str) -> bool:
        return rules.check("run_shell", {"command": command}) is not None

    assert denied("git pu?h origin") and denied("cd x && git p* origin")
    assert denied("npm i $PKG")
    assert not denied("git log *.py") and not denied("git status")


def test_the_model_reads_why_a_line_was_denied(tmp_path: Path) -> None:
    ctx = tool_context(tmp_path)
    ctx.rules = Permissions(DENY, mode="bypassPermissions")
    output = shell("/bin/r? f", ctx)
    assert output.is_error
    assert "the rule 'Bash(rm:*)'" in output.content
    assert "the command word is only known when the line runs" in output.content



@pytest.mark.parametrize("command", [
    "cp a.txt .git/hooks/post-checkout",
    "mv b.txt .git/hooks/pre-commit",
    "cp a.txt .claude/settings.json",
    "cp -t .claude/commands a.txt",
    "touch CLAUDE.md",
])
def test_accept_edits_asks_before_a_command_that_writes_protected_configuration(
    command: str, workspace: tuple[Path, Path]
) -> None:
    project, _ = workspace
    (project / ".git" / "hooks").mkdir(parents=True)
    (project / ".claude" / "commands").mkdir(parents=True)
    before = tree(project)
    ctx, approver = gate(project, "acceptEdits")
    output = shell(command, ctx)
    assert output.is_error and len(approver.requests) == 1, output.content
    assert tree(project) == before
