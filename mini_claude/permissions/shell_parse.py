"""What a shell command line would run: every command word, wherever it sits.

A deny rule for ``rm`` must catch ``rm`` inside ``if``/loops, pipelines, ``$(…)``,
backticks, subshells and function bodies, behind a path (``/bin/rm``), a
backslash or quotes (``\\rm``, ``r''m``, ``"rm"``), behind the commands that
run another command (``sudo``, ``env``, ``timeout``, ``flock``, ``su -c``,
``xargs``, ``eval``, ``sh -c``, ``find -exec``…; see
:mod:`mini_claude.permissions.shell_wrappers`), and in the lines other commands run later
or through a setting (``trap '…' EXIT``, ``git -c alias.x='!…'``,
``GIT_EXTERNAL_DIFF=…``). The line is parsed with tree-sitter's bash grammar (a
maintained, MIT-licensed parser) and the tree is walked for every command.
Whatever cannot be known without running the line (a parse error, a command word
built from ``$X``, ``$(…)`` or a glob, ``eval "$X"``, a shell reading its commands
from stdin, a sourced stream, aliases, a wrapper option not known here) makes the
analysis *uncertain*, and callers treat an uncertain line as matching a deny rule.
"""

from __future__ import annotations

import codecs
import os
import shlex
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import tree_sitter_bash
from tree_sitter import Language, Node, Parser

from mini_claude.permissions.shell_wrappers import WRAPPERS, unwrap

MAX_DEPTH = 8  # sh -c "sh -c '…'" nesting we follow before calling it uncertain
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "ash", "mksh", "fish"})
SHELL_OPTIONS_WITH_ARGUMENT = frozenset({"-o", "+o", "-O", "+O", "--rcfile", "--init-file"})
# Bash keywords: as a command word they mean the parser read the line differently from bash.
RESERVED_WORDS = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "case", "esac",
                            "while", "until", "for", "in", "function", "select", "{", "}", "!",
                            "[[", "]]", "coproc"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
# A variable a program runs as a command line (an editor, a pager, an external diff, ssh):
# its value is read as one more line.
COMMAND_VARIABLE_PARTS = ("EDITOR", "PAGER", "DIFF", "COMMAND", "SHELL", "ASKPASS", "SSH",
                          "PROGRAM")
# Variables that load code from somewhere the line does not show.
HIDDEN_CODE_VARIABLES = frozenset({"BASH_ENV", "ENV", "LD_PRELOAD", "LD_AUDIT",
                                   "LD_LIBRARY_PATH", "GIT_EXEC_PATH", "PROMPT_COMMAND", "PS4"})
HIDDEN_CODE_PREFIXES = ("GIT_CONFIG", "BASH_FUNC_")
# git -c keys whose value names files of more configuration or hooks.
GIT_HIDDEN_KEYS = ("include.", "includeif.", "core.hookspath")
# Script paths that are the line's own input, not a file on disk.
STREAM_PATHS = ("/dev/", "/proc/")
_STRING_ESCAPES = {'\\"': '"', "\\\\": "\\", "\\$": "$", "\\`": "`", "\\\n": ""}
Words = tuple[str | None, ...]


@dataclass
class ShellAnalysis:
    """Every command the line would run (as words), and whether that list can be trusted.

    A word is None where it is only known when the line runs (``$X``, ``$(…)``, a glob).
    """

    invocations: list[Words] = field(default_factory=list)
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
    for node in walk(root):
        if node.type == "command":
            _command(node, result, depth)
        elif node.type == "variable_assignment":
            _assignment_node(node, result, depth)


def walk(node: Node) -> Iterator[Node]:
    """Every node under ``node`` (itself included), in source order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def command_words(node: Node) -> list[str | None]:
    """The words of a ``command`` node: its name, then its arguments."""
    name = node.child_by_field_name("name")
    if name is None:
        return []
    return [word_value(name), *(word_value(a) for a in node.children_by_field_name("argument"))]


def _command(node: Node, result: ShellAnalysis, depth: int) -> None:
    words = command_words(node)
    if not words:
        return  # a bare assignment (X=1)
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
    result.invocations.append(tuple(words))
    program = command_name(first)
    rest = list(words[1:])
    handler = _HANDLERS.get(program)
    if handler is not None:
        handler(rest, result, depth)
    elif program in SHELLS:
        _shell(rest, result, depth, reads_stdin)
    elif program in WRAPPERS:
        _wrapper(program, rest, result, depth)


def _wrapper(program: str, rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    unwrapped = unwrap(program, rest)
    if unwrapped.unknown is not None:
        result.note(unwrapped.unknown)
        return
    for assignment in unwrapped.assignments:
        name, _, value = assignment.partition("=")
        _assignment(name, value, result, depth)
    for script in unwrapped.scripts:
        if program == "env":
            _split_string(script, unwrapped.inner, result, depth)
            return
        _line(script, result, depth, f"{program}'s command")
    if unwrapped.runs_nothing or unwrapped.scripts:
        return
    inner = unwrapped.inner
    if program == "xargs" and not inner:
        inner = ["echo"]
    if program == "nice" and inner and inner[0] is not None and inner[0].lstrip("-").isdigit():
        inner = inner[1:]
    if unwrapped.through_shell or (program == "watch" and not
                                   {"-x", "--exec"} & set(unwrapped.options)):
        _nested_line(inner, result, depth, program)
        return
    _invocation(inner, result, depth)


def _split_string(script: str | None, rest: list[str | None], result: ShellAnalysis,
                  depth: int) -> None:
    """``env -S 'rm -f x'``: env splits the string into words and reads them as its own."""
    if script is None or any(w is None for w in rest) or set(script) & set("$\\"):
        result.note("env -S with text only known when the line runs")
        return
    try:
        words: list[str | None] = list(shlex.split(script))
    except ValueError:
        result.note("env -S with a string that does not split")
        return
    if depth >= MAX_DEPTH:
        result.note("nested too deeply")
        return
    _invocation(["env", *words, *rest], result, depth + 1)


def _shell(rest: list[str | None], result: ShellAnalysis, depth: int, reads_stdin: bool) -> None:
    """``sh -c 'line'`` runs the line; a shell with no script reads commands from stdin."""
    runs_line = False
    index = 0
    while index < len(rest):
        word = rest[index]
        if word is None:
            result.note("a shell is given an argument only known when the line runs")
            return
        if word == "--":
            index += 1
            break
        if not word.startswith(("-", "+")) or word in ("-", "+"):
            break
        if word in SHELL_OPTIONS_WITH_ARGUMENT:
            index += 2
            continue
        if not word.startswith("--") and "s" in word[1:]:
            result.note("a shell reading its commands from stdin")
            return
        runs_line = runs_line or (not word.startswith("--") and "c" in word[1:])
        index += 1
    script = rest[index] if index < len(rest) else None
    if runs_line:
        _line(script, result, depth, "sh -c")
    elif script is None:
        result.note("a shell reading its commands from stdin")
    elif script.startswith(STREAM_PATHS):
        result.note(f"a shell reading its commands from {script}")
    # otherwise a script file: its commands are not on this line


def _line(script: str | None, result: ShellAnalysis, depth: int, what: str) -> None:
    if script is None:
        result.note(f"{what} is only known when the line runs")
        return
    _analyse_into(script, result, depth + 1)


def _nested_line(rest: Sequence[str | None], result: ShellAnalysis, depth: int,
                 why: str) -> None:
    if any(word is None for word in rest):
        result.note(f"{why} of text only known when the line runs")
        return
    _analyse_into(" ".join(w for w in rest if w is not None), result, depth + 1)


def _eval(rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    _nested_line(rest, result, depth, "eval")


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


def _trap(rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    """``trap 'line' EXIT`` runs the line later, when the signal comes."""
    words = list(rest)
    while words and words[0] is not None and words[0].startswith("-") and words[0] != "-":
        if words[0] in ("-p", "-l", "-P"):
            return  # lists traps
        words.pop(0)
        if not words or words[-1] == "--":
            break
    if not words or words[0] in ("-", ""):
        return
    if len(words) == 1 and words[0] is not None and words[0].isdigit():
        return  # trap 2: resets a signal
    _line(words[0], result, depth, "trap's command")


def _source(rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    """``. file`` runs the file's commands; from a stream they are not on any line."""
    if not rest:
        return
    if rest[0] is None:
        result.note("source of a file only known when the line runs")
    elif rest[0].startswith(STREAM_PATHS):
        result.note(f"source of {rest[0]}, the line's own input")


def _alias(rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    if any(word is None or "=" in word for word in rest):
        result.note("an alias changes what a command word runs")


def _shopt(rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    if any(word is None or word == "expand_aliases" for word in rest):
        result.note("aliases expanded: a command word may run something else")


def _hash(rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    if any(word is None or (word.startswith("-") and "p" in word) for word in rest):
        result.note("hash -p makes a command word run another program")


def _enable(rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    if any(word is None or (word.startswith("-") and "f" in word) for word in rest):
        result.note("enable -f loads a builtin from a file")


def _git(rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    """git runs commands its configuration names: ``-c alias.x='!rm'``, ``core.fsmonitor``."""
    index = 0
    while index < len(rest):
        word = rest[index]
        if word is None:
            result.note("an argument of git is only known when the line runs")
            return
        if word == "-c" or (word.startswith("-c") and "=" in word and len(word) > 2):
            setting = word[2:] if word != "-c" else (
                rest[index + 1] if index + 1 < len(rest) else "")
            _git_setting(setting, result, depth)
            index += 1 if word != "-c" else 2
            continue
        if word.startswith(("--config-env", "--exec-path=")):
            result.note(f"git {word.split('=')[0]}: what it runs comes from elsewhere")
            return
        if word in ("-C", "--git-dir", "--work-tree", "--namespace", "--super-prefix",
                    "--attr-source", "--list-cmds"):
            index += 2
            continue
        if not word.startswith("-"):
            break
        index += 1
    if index < len(rest) and rest[index] == "config":
        for value in rest[index + 1:]:
            if value is not None and not value.startswith("-"):
                _git_setting(f"config={value}", result, depth)


def _git_setting(setting: str | None, result: ShellAnalysis, depth: int) -> None:
    if setting is None:
        result.note("git -c with a setting only known when the line runs")
        return
    key, _, value = setting.partition("=")
    if key.lower().startswith(GIT_HIDDEN_KEYS):
        result.note(f"git -c {key}: it names more settings or hooks")
        return
    _line(value.lstrip("!"), result, depth, "a git setting")


_HANDLERS: dict[str, Callable[[list[str | None], ShellAnalysis, int], None]] = {
    "eval": _eval, "find": _find_exec, "trap": _trap, "source": _source, ".": _source,
    "alias": _alias, "shopt": _shopt, "hash": _hash, "enable": _enable, "git": _git,
    "su": lambda rest, result, depth: _su("su", rest, result, depth),
    "runuser": lambda rest, result, depth: _su("runuser", rest, result, depth),
}


def _su(program: str, rest: list[str | None], result: ShellAnalysis, depth: int) -> None:
    """``su [user] -c 'line'``; ``runuser -u user -- cmd``. Without either, a shell reads stdin."""
    scripts: list[str | None] = []
    for index, word in enumerate(rest):
        if word is None:
            result.note(f"an argument of {program} is only known when the line runs")
            return
        following = rest[index + 1] if index + 1 < len(rest) else None
        if word in ("-c", "--command", "--session-command"):
            scripts.append(following)
        elif word.startswith(("--command=", "--session-command=")):
            scripts.append(word.partition("=")[2])
        elif word.startswith("-c") and not word.startswith("--"):
            scripts.append(word[2:])
        elif word == "--" and program == "runuser" and "-u" in rest[:index]:
            _invocation(rest[index + 1:], result, depth)
            return
    if not scripts:
        result.note(f"{program} runs a shell that reads its commands from stdin")
    for script in scripts:
        _line(script, result, depth, f"{program} -c")


def _assignment_node(node: Node, result: ShellAnalysis, depth: int) -> None:
    name = node.child_by_field_name("name")
    value = node.child_by_field_name("value")
    _assignment(_text(name) if name is not None else "",
                word_value(value) if value is not None else "", result, depth)


def _assignment(name: str, value: str | None, result: ShellAnalysis, depth: int) -> None:
    """``GIT_EXTERNAL_DIFF='rm f' git diff``: a variable some program runs as a command."""
    upper = name.upper()
    if upper in HIDDEN_CODE_VARIABLES or upper.startswith(HIDDEN_CODE_PREFIXES):
        result.note(f"{name} makes a program load code the line does not show")
    elif any(part in upper for part in COMMAND_VARIABLE_PARTS):
        _line(value, result, depth, f"the command in {name}")


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
    if kind == "number":
        return text
    if kind == "word":
        return None if _is_pattern(text) else _unescape_word(text)
    if kind == "raw_string":
        return text[1:-1]
    if kind == "ansi_c_string":
        return _ansi_c(text[2:-1])
    if kind == "string":
        return _double_quoted(node)
    if kind == "concatenation":
        skeleton = "".join(_text(c) if c.type == "word" else "q" for c in node.children)
        if _is_pattern(skeleton):
            return None
        parts = [word_value(child) for child in node.children]
        return None if any(p is None for p in parts) else "".join(p or "" for p in parts)
    return None  # $X, ${X}, $(…), `…`, globs and arithmetic: known only at run time


def _is_pattern(text: str) -> bool:
    """Unquoted text the shell expands: a glob (``*``, ``?``, ``[…]``) or braces (``{a,b}``)."""
    plain = _unescaped(text)
    if "*" in plain or "?" in plain:
        return True
    opening = plain.find("[")
    if opening != -1 and "]" in plain[opening + 1:]:
        return True
    brace = plain.find("{")
    closing = plain.rfind("}")
    inside = plain[brace + 1:closing] if brace != -1 and closing > brace else ""
    return "," in inside or ".." in inside


def _unescaped(text: str) -> str:
    """The text with every backslash-escaped character blanked out."""
    out: list[str] = []
    index = 0
    while index < len(text):
        if text[index] == "\\":
            out.append("_")
            index += 2
            continue
        out.append(text[index])
        index += 1
    return "".join(out)


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
    for inner in walk(node):
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
