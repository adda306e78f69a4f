"""What a shell command line would run: every command word, wherever it sits.

A deny rule for ``rm`` must catch ``rm`` inside ``if``/loops, pipelines, ``$(…)``,
backticks, subshells and function bodies, behind a path (``/bin/rm``), a
backslash or quotes (``\\rm``, ``r''m``, ``"rm"``), and behind the commands that
run another command (``sudo``, ``env``, ``timeout``, ``nice``, ``xargs``,
``eval``, ``sh -c``, ``find -exec``…). The line is parsed with tree-sitter's bash
grammar (a maintained, MIT-licensed parser) and the tree is walked for every
command. Whatever cannot be known without running the line (a parse error, a
command word built from ``$X`` or ``$(…)``, ``eval "$X"``, a shell reading its
commands from stdin) makes the analysis *uncertain*, and callers treat an
uncertain line as matching a deny rule.
"""

from __future__ import annotations

import codecs
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

MAX_DEPTH = 8  # sh -c "sh -c '…'" nesting we follow before calling it uncertain
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish", "busybox"})
# Wrappers that run the command after their own options. Value: options taking an argument.
WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U"}),
    "doas": frozenset({"-u", "-C"}),
    "env": frozenset({"-u", "-C", "-S", "--unset", "--chdir"}),
    "nice": frozenset({"-n", "--adjustment"}),
    "ionice": frozenset({"-c", "-n", "-p", "-P", "-u"}),
    "nohup": frozenset(),
    "time": frozenset({"-f", "-o", "--format", "--output"}),
    "command": frozenset(),
    "builtin": frozenset(),
    "exec": frozenset({"-a"}),
    "setsid": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "chrt": frozenset(),
    "taskset": frozenset(),
    "unbuffer": frozenset(),
    "caffeinate": frozenset(),
    "watch": frozenset({"-n", "-d", "--interval"}),
    "strace": frozenset({"-e", "-o", "-p", "-s", "-u"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "ltrace": frozenset({"-e", "-o", "-p", "-s", "-u"}),
}
# Wrappers whose first plain word is their own argument (a duration, a priority, a CPU list).
WRAPPERS_WITH_ONE_ARGUMENT = frozenset({"timeout", "chrt", "taskset"})
XARGS_OPTIONS_WITH_ARGUMENT = frozenset(
    {"-I", "-i", "-n", "-P", "-L", "-l", "-d", "-E", "-e", "-s", "-a", "--max-args",
     "--max-procs", "--delimiter", "--arg-file", "--replace", "--max-lines", "--eof"}
)
# Bash keywords: as a command word they mean the parser read the line differently from bash.
RESERVED_WORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "case", "esac",
                            "while", "until", "for", "in", "function", "select", "{", "}", "!",
                            "[[", "]]", "coproc"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_STRING_ESCAPES = {'\\"': '"', "\\\\": "\\", "\\$": "$", "\\`": "`", "\\\n": ""}


@dataclass
class ShellAnalysis:
    """Every command the line would run (as words), and whether that list can be trusted."""

    invocations: list[tuple[str, ...]] = field(default_factory=list)
    uncertain: bool = False
    reasons: list[str] = field(default_factory=list)

    def note(self, reason: str) -> None:
        self.uncertain = True
        self.reasons.append(reason)


@lru_cache(maxsize=1)
def _parser() -> Parser:
    return Parser(Language(tree_sitter_bash.language()))


def parse(command: str) -> Node:
    return _parser().parse(command.encode("utf-8", "surrogatepass")).root_node


@lru_cache(maxsize=512)
def analyse(command: str) -> ShellAnalysis:
    """The invocations of a command line; cached because a call is checked against many rules."""
    result = ShellAnalysis()
    _analyse_into(command, result, depth=0)
    return result


def _analyse_into(command: str, result: ShellAnalysis, depth: int) -> None:
    if depth > MAX_DEPTH:
        result.note("nested too deeply")
        return
    root = parse(command)
    if root.has_error:
        result.note("the line does not parse")
    for node in _walk(root):
        if node.type == "command":
            _command(node, result, depth)


def _walk(node: Node) -> Iterator[Node]:
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _command(node: Node, result: ShellAnalysis, depth: int) -> None:
    name = node.child_by_field_name("name")
    if name is None:
        return  # a bare assignment (X=1)
    words: list[str | None] = [word_value(name)]
    words += [word_value(arg) for arg in node.children_by_field_name("argument")]
    reads_stdin = any(c.type in ("heredoc_redirect", "herestring_redirect") for c in node.children)
    _invocation(words, result, depth, reads_stdin=reads_stdin)


def _invocation(
    words: Sequence[str | None], result: ShellAnalysis, depth: int, *, reads_stdin: bool = False
) -> None:
    """Record one command and look through it when it runs another."""
    if not words:
        return
    first = words[0]
    if first is None:
        result.note("the command word is only known when the line runs")
        return
    if not first:
        return
    if first in RESERVED_WORDS:
        result.note(f"{first!r} where a command should be (bash would not run this line as read)")
    static = tuple(w if w is not None else "$?" for w in words)
    result.invocations.append(static)
    program = command_name(first)
    rest = list(words[1:])
    if program == "eval":
        _nested_line(rest, result, depth, "eval")
    elif program in SHELLS:
        _shell(rest, result, depth, reads_stdin)
    elif program == "xargs":
        inner = _after_options(rest, XARGS_OPTIONS_WITH_ARGUMENT)
        _invocation(inner or ["echo"], result, depth)
    elif program == "find":
        _find_exec(rest, result, depth)
    elif program in WRAPPERS or program in WRAPPERS_WITH_ONE_ARGUMENT:
        _wrapper(program, rest, result, depth)


def _wrapper(program: str, rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    if program == "command" and rest and rest[0] in ("-v", "-V"):
        return  # asks where a command is; runs nothing
    inner = _after_options(rest, WRAPPERS.get(program, frozenset()))
    if program in WRAPPERS_WITH_ONE_ARGUMENT and inner:
        inner = inner[1:]  # timeout 5 cmd, taskset 0x3 cmd
    if program == "nice" and inner and inner[0] is not None and inner[0].lstrip("-").isdigit():
        inner = inner[1:]
    while inner and inner[0] is not None and _is_assignment(inner[0]):
        inner = inner[1:]  # env X=1 cmd, sudo X=1 cmd
    _invocation(inner, result, depth)


def _shell(rest: list[str | None], result: ShellAnalysis, depth: int, reads_stdin: bool) -> None:
    """``sh -c 'line'`` runs the line; a shell with no script reads commands from stdin."""
    for index, word in enumerate(rest):
        if word is None:
            result.note("a shell is given an argument only known when the line runs")
            return
        if word.startswith("-") and "c" in word.lstrip("-") and not word.startswith("--"):
            script = rest[index + 1] if index + 1 < len(rest) else None
            if script is None:
                result.note("sh -c without a static command")
                return
            _analyse_into(script, result, depth + 1)
            return
        if not word.startswith("-") and not word.startswith("+"):
            return  # a script file: its commands are not on this line
    result.note("a shell reading its commands from stdin")


def _nested_line(rest: list[str | None], result: ShellAnalysis, depth: int, why: str) -> None:
    if any(word is None for word in rest):
        result.note(f"{why} of text only known when the line runs")
        return
    _analyse_into(" ".join(w for w in rest if w is not None), result, depth + 1)


def _find_exec(rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    index = 0
    while index < len(rest):
        if rest[index] in FIND_EXEC:
            end = index + 1
            while end < len(rest) and rest[end] not in (";", "+", "\\;"):
                end += 1
            _invocation(rest[index + 1 : end], result, depth)
            index = end
        elif rest[index] == "-delete":
            result.invocations.append(("rm",))  # find -delete removes files as rm would
        index += 1


def _after_options(words: list[str | None], with_argument: frozenset[str]) -> list[str | None]:
    """The words after a wrapper's own options (``-n 5``, ``--signal=KILL``, ``--``)."""
    index = 0
    while index < len(words):
        word = words[index]
        if word is None or not word.startswith("-") or word == "-":
            break
        index += 1
        if word == "--":
            break
        if word in with_argument:
            index += 1
    return list(words[index:])


def _is_assignment(word: str) -> bool:
    name, equals, _value = word.partition("=")
    return bool(equals) and name.replace("_", "a").isalnum() and not name[0].isdigit()


def command_name(word: str) -> str:
    """``/usr/bin/rm`` and ``rm`` name the same program."""
    return os.path.basename(word) if "/" in word else word


# ---- words ---------------------------------------------------------------------------------


def word_value(node: Node) -> str | None:
    """The text a word stands for after quote removal, or None when it expands at run time."""
    kind = node.type
    text = _text(node)
    if kind == "command_name":
        return word_value(node.children[0]) if node.children else ""
    if kind in ("word", "number"):
        return _unescape_word(text)
    if kind == "raw_string":
        return text[1:-1]
    if kind == "ansi_c_string":
        return _ansi_c(text[2:-1])
    if kind == "string":
        return _double_quoted(node)
    if kind == "concatenation":
        parts = [word_value(child) for child in node.children]
        return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
    return None  # $X, ${X}, $(…), `…`, globs and arithmetic: known only at run time


def _double_quoted(node: Node) -> str | None:
    parts: list[str] = []
    for child in node.children:
        if child.type == '"':
            continue
        if child.type != "string_content":
            return None
        content = _text(child)
        for escape, plain in _STRING_ESCAPES.items():
            content = content.replace(escape, plain)
        parts.append(content)
    return "".join(parts)


def _unescape_word(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def _ansi_c(body: str) -> str | None:
    try:
        return codecs.decode(body.encode("latin-1", "backslashreplace"), "unicode_escape")
    except (UnicodeDecodeError, ValueError):
        return None


def _text(node: Node) -> str:
    return (node.text or b"").decode("utf-8", "surrogatepass")


# ---- simple commands (for allow rules) ---------------------------------------------------------


def single_command_words(command: str) -> tuple[str, ...] | None:
    """The words of a line that is one plain command, or None for anything more.

    An allow rule by prefix only ever allows such a line: no lists, pipes,
    substitutions, redirections, subshells or dynamic command word.
    """
    root = parse(command)
    if root.has_error:
        return None
    statements = [c for c in root.children if c.type != "comment"]
    if len(statements) != 1 or statements[0].type != "command":
        return None
    node = statements[0]
    for inner in _walk(node):
        if inner is not node and inner.type in (
            "command_substitution", "process_substitution", "file_redirect",
            "heredoc_redirect", "herestring_redirect", "command", "subshell",
        ):
            return None
    name = node.child_by_field_name("name")
    if name is None:
        return None
    first = word_value(name)
    if not first:
        return None
    rest = [word_value(arg) for arg in node.children_by_field_name("argument")]
    return (first, *(w if w is not None else _text(a) for w, a in
                     zip(rest, node.children_by_field_name("argument"), strict=True)))
