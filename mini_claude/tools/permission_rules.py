"""Permission rules: tool calls that run without asking, and tool calls that never run.

A rule names a tool (``write_file``) or, for ``run_shell``, a command:
``run_shell(git status)`` is that exact command, ``run_shell(git diff:*)`` is
``git diff`` followed by anything. Rules come from ``--allowed-tools`` /
``--disallowed-tools`` and from ``settings.json`` files; a deny rule always
wins over an allow rule.

Allowing by prefix is only safe for a single simple command: ``git diff:*``
must not let ``git diff; rm -rf /`` through. So a prefix allow rule never
matches a command with a shell control operator in it, and a deny rule is
checked against every piece of a compound command.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mini_claude.safe_read import read_limited
from mini_claude.tools.web_guard import host_of

# Tools whose rules may name a pattern, and the argument the pattern is matched against.
# web_fetch's pattern is matched against the host of its URL: ``web_fetch(docs.python.org)``.
PATTERN_ARGUMENTS = {"run_shell": "command", "web_fetch": "url"}
PREFIX_SUFFIX = ":*"
# Anything that chains, pipes, substitutes or redirects. A prefix rule never allows these.
CONTROL_OPERATORS = (";", "&", "|", "`", "$(", ">", "<", "\n", "\r")
_SEGMENT_SPLIT = re.compile(r"&&|\|\||[;&|\n\r`()<>{}'\"]|\$\(")
# Words that run the command after them; a deny rule looks past them.
_WRAPPERS = frozenset({"sudo", "env", "command", "exec", "nohup", "time", "nice", "builtin"})
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_RULE = re.compile(r"^([A-Za-z0-9_.\-]+)(?:\((.*)\))?$", re.DOTALL)

PROJECT_SETTINGS = Path(".mini-claude") / "settings.json"
USER_SETTINGS_NAME = "settings.json"


class RuleError(ValueError):
    """A rule that cannot be read; the message names it."""


@dataclass(frozen=True, slots=True)
class Rule:
    tool: str
    pattern: str | None  # None: every call of the tool
    prefix: bool  # the pattern ended in ":*"
    text: str  # as written, for messages
    source: str  # "--allowed-tools", or the settings file it came from

    def allows(self, tool: str, args: Mapping[str, Any]) -> bool:
        if tool != self.tool:
            return False
        if self.pattern is None:
            return True
        command = _subject(tool, args).strip()
        if not self.prefix:
            return _normal(command) == self.pattern
        if any(op in command for op in CONTROL_OPERATORS):
            return False
        return _starts_with_words(_normal(command), self.pattern)

    def denies(self, tool: str, args: Mapping[str, Any]) -> bool:
        if tool != self.tool:
            return False
        if self.pattern is None:
            return True
        command = _subject(tool, args)
        pieces = [command.strip(), *(_segments(command))]
        if self.prefix:
            return any(_starts_with_words(piece, self.pattern) for piece in pieces)
        return any(piece == self.pattern for piece in pieces)


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    rule: Rule

    @property
    def reason(self) -> str:
        return f"the rule {self.rule.text!r} from {self.rule.source}"


@dataclass(frozen=True, slots=True)
class PermissionRules:
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()

    def check(self, tool: str, args: Mapping[str, Any]) -> Verdict | None:
        """Deny first, then allow; None when no rule speaks about this call."""
        for rule in self.deny:
            if rule.denies(tool, args):
                return Verdict(False, rule)
        for rule in self.allow:
            if rule.allows(tool, args):
                return Verdict(True, rule)
        return None

    def __bool__(self) -> bool:
        return bool(self.allow or self.deny)


@dataclass(frozen=True, slots=True)
class PermissionDenied:
    """One refused call, for the ``permission_denials`` of a print-mode result."""

    tool_name: str
    tool_input: dict[str, Any]
    reason: str


@dataclass
class LoadedRules:
    rules: PermissionRules
    warnings: list[str] = field(default_factory=list)


def parse_rule(text: str, source: str) -> Rule:
    """``read_file``, ``run_shell(pytest)`` or ``run_shell(git diff:*)``."""
    written = text.strip()
    match = _RULE.match(written)
    if not match:
        raise RuleError(f"cannot read the permission rule {text!r} (from {source})")
    tool, pattern = match.group(1), match.group(2)
    if pattern is None:
        return Rule(tool, None, False, written, source)
    if tool not in PATTERN_ARGUMENTS:
        raise RuleError(
            f"the permission rule {written!r} (from {source}) gives a pattern, but only "
            f"{' and '.join(PATTERN_ARGUMENTS)} rules take one; name the tool alone"
        )
    prefix = pattern.endswith(PREFIX_SUFFIX)
    body = _normal(pattern[: -len(PREFIX_SUFFIX)] if prefix else pattern)
    if not body:
        raise RuleError(f"the permission rule {written!r} (from {source}) has an empty command")
    return Rule(tool, body, prefix, written, source)


def split_rule_list(values: Iterable[str]) -> list[str]:
    """Flag values, each holding one or more rules separated by commas or spaces.

    Separators inside parentheses belong to the command: ``run_shell(git diff:*)``.
    """
    rules: list[str] = []
    for value in values:
        depth, current = 0, ""
        for char in value:
            if char == "(":
                depth += 1
            elif char == ")":
                depth = max(0, depth - 1)
            if depth == 0 and (char == "," or char.isspace()):
                if current.strip():
                    rules.append(current.strip())
                current = ""
            else:
                current += char
        if current.strip():
            rules.append(current.strip())
    return rules


def load_rules(
    *,
    allowed: Iterable[str],
    disallowed: Iterable[str],
    cwd: Path,
    home: Path,
    known_tools: Iterable[str],
    project_file_approved: Callable[[Path, bytes], bool] | None = None,
) -> LoadedRules:
    """Rules from the flags (a bad one raises RuleError) and the two settings files.

    The user file (``<home>/settings.json``) may allow and deny. The project file
    (``.mini-claude/settings.json`` in the working folder) may only deny: it comes
    with the repository, and a repository must not grant itself the shell. Its allow
    rules count only when ``project_file_approved(path, content)`` says the user
    approved this very content (the project-trust record).
    """
    allow = [parse_rule(text, "--allowed-tools") for text in split_rule_list(allowed)]
    deny = [parse_rule(text, "--disallowed-tools") for text in split_rule_list(disallowed)]
    warnings: list[str] = []
    user_file = home / USER_SETTINGS_NAME
    project_file = cwd / PROJECT_SETTINGS
    file_allow, file_deny = _read_settings(user_file, warnings)
    allow += file_allow
    deny += file_deny
    if not _same_file(project_file, user_file):
        project_allow, project_deny = _read_settings(project_file, warnings)
        deny += project_deny
        if project_allow and _approved(project_file, project_file_approved):
            allow += project_allow
        elif project_allow:
            warnings.append(
                f"ignoring {len(project_allow)} allow rule(s) in {project_file}: a project's "
                "settings may only deny; allow them with --allowed-tools or in "
                f"{user_file}"
            )
    known = set(known_tools)
    unknown = sorted({rule.text for rule in allow + deny if rule.tool not in known})
    if unknown:
        warnings.append(
            f"permission rule(s) naming no known tool: {', '.join(unknown)} "
            f"(tools: {', '.join(sorted(known))})"
        )
    return LoadedRules(PermissionRules(tuple(allow), tuple(deny)), warnings)


def _approved(path: Path, approved: Callable[[Path, bytes], bool] | None) -> bool:
    if approved is None:
        return False
    try:
        return approved(path, read_limited(path))
    except OSError:
        return False


def _read_settings(path: Path, warnings: list[str]) -> tuple[list[Rule], list[Rule]]:
    """The permissions of one settings file; problems become warnings, never a failed start."""
    try:
        text = read_limited(path).decode("utf-8")
    except FileNotFoundError:
        return [], []
    except (OSError, UnicodeDecodeError) as exc:
        warnings.append(f"cannot read {path}: {exc}; its permission rules are not used")
        return [], []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        warnings.append(f"{path} is not valid JSON ({exc}); its permission rules are not used")
        return [], []
    permissions = data.get("permissions", {}) if isinstance(data, dict) else None
    if not isinstance(permissions, dict):
        warnings.append(f'{path}: "permissions" must be an object; its rules are not used')
        return [], []
    return _rules_of(permissions, "allow", path, warnings), _rules_of(
        permissions, "deny", path, warnings
    )


def _rules_of(permissions: dict[str, Any], key: str, path: Path, warnings: list[str]) -> list[Rule]:
    entries = permissions.get(key, [])
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        warnings.append(f'{path}: "permissions.{key}" must be a list of strings; it is not used')
        return []
    rules: list[Rule] = []
    for entry in entries:
        try:
            rules.append(parse_rule(entry, str(path)))
        except RuleError as exc:
            warnings.append(f"{exc}; skipped")
    return rules


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve()
    except OSError:
        return False


def _subject(tool: str, args: Mapping[str, Any]) -> str:
    value = args.get(PATTERN_ARGUMENTS.get(tool, ""), "")
    text = value if isinstance(value, str) else str(value)
    return host_of(text) if tool == "web_fetch" else text


def _normal(command: str) -> str:
    """Runs of spaces and tabs as one space (no newlines: those are operators)."""
    return re.sub(r"[ \t]+", " ", command.strip())


def _starts_with_words(command: str, prefix: str) -> bool:
    """``git diff`` matches ``git diff`` and ``git diff --stat``, never ``git diff-tree``."""
    command = _normal(command)
    return command == prefix or command.startswith(prefix + " ")


def _segments(command: str) -> list[str]:
    """The simple commands inside a compound one, with leading ``VAR=value`` dropped."""
    segments: list[str] = []
    for piece in _SEGMENT_SPLIT.split(command):
        words = _normal(piece).split(" ")
        while len(words) > 1 and (words[0] in _WRAPPERS or _ASSIGNMENT.match(words[0])):
            words = words[1:]
        if any(words):
            segments.append(" ".join(words))
    return segments
