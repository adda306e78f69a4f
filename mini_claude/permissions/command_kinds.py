"""Judgements about a shell command: is it read-only, is it a plain file operation inside
the project, and what prefix rule fits it.

Plan mode runs only commands that certainly change nothing: every command on the
line is a known reader given only options known to read (``ls``, ``cat``, ``grep``,
``git status``…; see :mod:`mini_claude.permissions.shell_reach`), nothing is redirected
into a file, and nothing is left for run time to decide.

"Don't ask again" proposes a rule for the command's family rather than the one
line, as Claude Code does: ``cat:*`` for ``cat docs/changelog.md``, ``npm run
test:*`` for ``npm run test -- --watch``, ``git diff:*`` for ``git diff HEAD~1``.
Lines with more than one command, interpreters and wrappers (``python x.py``,
``sudo …``, ``xargs``) get the exact line instead: a prefix there would allow
anything.
"""

from __future__ import annotations

from collections.abc import Callable

from mini_claude.permissions.shell_parse import SHELLS, analyse, parse, single_command_words, walk
from mini_claude.permissions.shell_reach import (
    file_command_paths,
    read_only_problem,
    redirect_problem,
)
from mini_claude.permissions.shell_wrappers import WRAPPERS

EXPANDING = frozenset("$*?[{~`")
# First words whose second word is a subcommand worth keeping in a proposed rule.
SUBCOMMAND_PROGRAMS = frozenset({
    "git", "npm", "pnpm", "yarn", "bun", "cargo", "go", "docker", "kubectl", "pip", "pip3",
    "uv", "poetry", "gh", "make", "dotnet", "mvn", "gradle", "brew", "apt", "helm", "terraform",
    "rustup", "deno", "just", "tox", "nox", "conda", "hatch", "pdm", "rye", "mix", "bundle",
})
RUNNER_SUBCOMMANDS = frozenset({"run", "exec", "x"})  # npm run test: keep the script name
# Programs that run arbitrary code or other commands: never proposed by prefix.
NO_PREFIX = frozenset({
    *SHELLS, *WRAPPERS, "timeout", "xargs", "eval", "python", "python3", "node", "ruby", "perl",
    "php", "deno", "bun", "npx", "bunx", "pnpx", "source", ".", "ssh", "rm", "dd", "chmod",
    "chown", "curl", "wget", "mv", "cp", "awk", "sed",
})


def is_workspace_file_command(command: str, inside: Callable[[str], bool]) -> bool:
    """``mkdir``, ``touch``, ``mv`` or ``cp`` whose every path is inside the workspace.

    What acceptEdits lets run without asking, as Claude Code does: plain file
    operations within the project, nothing dynamic, nothing redirected. Paths in
    options count (``cp --target-directory=DIR``, ``mv -t DIR``); an option not
    known makes the command ask.
    """
    analysis = analyse(command)
    if analysis.uncertain or not analysis.invocations or _writes_a_file(command):
        return False
    for words in analysis.invocations:
        if words[0] is None or "/" in words[0]:
            return False
        paths = file_command_paths(words)
        if paths is None or any(set(p) & EXPANDING for p in paths):
            return False  # not a file command, an unknown option, or $X, globs, ~ and braces
        if not all(inside(p) for p in paths):
            return False
    return True


def is_read_only_command(command: str) -> bool:
    """True only when the line certainly changes nothing (see :mod:`shell_reach`)."""
    return read_only_problem(command) is None


def _writes_a_file(command: str) -> bool:
    return any(node.type == "file_redirect" and redirect_problem(node)
               for node in walk(parse(command)))


def suggest_rule(command: str) -> str:
    """The ``run_shell(...)`` rule "don't ask again" offers for this command."""
    words = single_command_words(command)
    exact = f"run_shell({' '.join(command.split())})"
    if words is None or not words[0] or "\n" in command:
        return exact
    program, rest = words[0], list(words[1:])
    if program in ("python", "python3") and rest[:1] == ["-m"] and len(rest) > 1:
        return f"run_shell({program} -m {rest[1]}:*)" if _plain(rest[1]) else exact
    if program in NO_PREFIX or "/" in program or "=" in program or not _plain(program):
        return exact
    prefix = [program]
    if program in SUBCOMMAND_PROGRAMS and rest and _plain(rest[0]):
        prefix.append(rest[0])
        if rest[0] in RUNNER_SUBCOMMANDS and len(rest) > 1 and _plain(rest[1]):
            prefix.append(rest[1])
    return f"run_shell({' '.join(prefix)}:*)"


def _plain(word: str) -> bool:
    """A word that reads the same in a rule: no option, quote, glob or expansion."""
    return bool(word) and not word.startswith("-") and all(
        c.isalnum() or c in "-_.:@" for c in word
    )
