"""Judgements about a shell command: is it read-only, is it a plain file operation inside
the project, and what prefix rule fits it.

Plan mode runs only commands that change nothing: every command the line would
run is a known reader (``ls``, ``cat``, ``grep``, ``git status``…), nothing is
redirected into a file, and nothing is left for run time to decide.

"Don't ask again" proposes a rule for the command's family rather than the one
line, as Claude Code does: ``cat:*`` for ``cat docs/changelog.md``, ``npm run
test:*`` for ``npm run test -- --watch``, ``git diff:*`` for ``git diff HEAD~1``.
Lines with more than one command, interpreters and wrappers (``python x.py``,
``sudo …``, ``xargs``) get the exact line instead: a prefix there would allow
anything.
"""

from __future__ import annotations

from collections.abc import Callable

from mini_claude.tools.shell_parse import (
    SHELLS,
    WRAPPERS,
    analyse,
    command_name,
    parse,
    single_command_words,
)

READ_ONLY_PROGRAMS = frozenset({
    "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "rg", "ag", "pwd", "echo",
    "printf", "which", "whereis", "type", "file", "stat", "du", "df", "tree", "sort", "uniq",
    "diff", "cmp", "comm", "cut", "tr", "nl", "less", "more", "date", "whoami", "id", "uname",
    "hostname", "basename", "dirname", "realpath", "readlink", "true", "false", "test", "[",
    "jq", "column", "fold", "od", "hexdump", "xxd", "md5sum", "sha1sum", "sha256sum",
    "cksum", "find", "fd", "locate", "ps", "env", "printenv", "seq", "expr", "tac", "rev",
})
READ_ONLY_GIT = frozenset({
    "status", "diff", "log", "show", "blame", "grep", "ls-files", "ls-tree", "rev-parse",
    "describe", "shortlog", "cat-file", "rev-list", "merge-base", "name-rev", "whatchanged",
})
WRITING_OPTIONS = {
    "find": ("-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf",
             "-fls"),
    "sort": ("-o", "--output"),
}
FILE_COMMANDS = frozenset({"mkdir", "touch", "mv", "cp"})
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
    operations within the project, nothing dynamic, nothing redirected.
    """
    analysis = analyse(command)
    if analysis.uncertain or not analysis.invocations or _writes_a_file(command):
        return False
    for words in analysis.invocations:
        if command_name(words[0]) not in FILE_COMMANDS or "/" in words[0]:
            return False
        paths = [w for w in words[1:] if not w.startswith("-")]
        if any(set(p) & EXPANDING for p in paths):
            return False  # $X, globs, ~ and braces expand at run time
        if not paths or not all(inside(p) for p in paths):
            return False
    return True


def is_read_only_command(command: str) -> bool:
    """True only when every command on the line is a known reader and nothing is written."""
    analysis = analyse(command)
    if analysis.uncertain or not analysis.invocations:
        return False
    if _writes_a_file(command):
        return False
    return all(_reads_only(words) for words in analysis.invocations)


def _reads_only(words: tuple[str, ...]) -> bool:
    program = command_name(words[0])
    if program == "git":
        sub = next((w for w in words[1:] if not w.startswith("-")), "")
        return sub in READ_ONLY_GIT and "--output" not in " ".join(words)
    if program not in READ_ONLY_PROGRAMS:
        return False
    if program == "env" and len(words) > 1:
        return False  # env runs the command after it; that one is judged on its own
    writing = WRITING_OPTIONS.get(program, ())
    return not any(w.startswith(writing) for w in words[1:]) if writing else True


def _writes_a_file(command: str) -> bool:
    stack = [parse(command)]
    while stack:
        node = stack.pop()
        if node.type == "file_redirect":
            operator = next((c for c in node.children if c.type in (">", ">>", ">|", "&>",
                                                                    "&>>", "<>")), None)
            target = node.child_by_field_name("destination")
            text = (target.text or b"").decode() if target is not None else ""
            if operator is not None and text not in ("/dev/null", "&1", "&2"):
                return True
        stack.extend(node.children)
    return False


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
