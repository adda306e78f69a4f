"""Permission rules in Claude Code's syntax, mapped onto our tools.

A rule names a tool, and may narrow it with a specifier in parentheses:

- ``Bash(npm run test:*)`` / ``run_shell(git diff:*)``: a command, exact or by word
  prefix (``:*`` or a trailing `` *``), or with ``*`` wildcards (``Bash(git * main)``);
- ``Read(./.env)``, ``Read(src/**)``, ``Edit(//etc/hosts)``, ``Edit(~/notes/**)``: a path
  in gitignore syntax (``//`` absolute, ``~/`` the user's home, anything else from the
  project folder); ``Read`` covers every tool that reads files (read, search and listing
  kinds: read_file, grep_search, list_files), ``Edit`` and ``Write`` every tool that edits
  (edit_file, write_file), as the tools declare themselves (:mod:`mini_claude.tool_kinds`);
- ``WebFetch(domain:example.com)``: the host of a ``web_fetch`` URL (``*.example.com``
  for its subdomains);
- ``mcp__server`` (every tool of that MCP server), ``mcp__server__tool``;
- ``Task(explore)``: a sub-agent type.

Rules are checked deny first, then ask, then allow; the first that matches decides.
Allowing a command by prefix is only safe for one plain command, so a prefix or
wildcard allow rule never matches a line with a list, pipe, substitution or
redirection in it. A deny rule is checked against every command the line would run
(see :mod:`mini_claude.permissions.shell_parse`); a word known only at run time may be any
word, and a line whose commands cannot all be known matches every command deny rule.
"""

from __future__ import annotations

import itertools
import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import pathspec

from mini_claude.permissions.shell_parse import Words, analyse, command_name, single_command_words
from mini_claude.tool_kinds import READING_KINDS, SpecifierKind, ToolKind, known_tools

RuleKind = Literal["any", "command", "path", "domain", "name"]
Behavior = Literal["allow", "ask", "deny"]

PREFIX_SUFFIX = ":*"
# Anything that chains, pipes, substitutes or redirects. A prefix rule never allows these.
CONTROL_OPERATORS = (";", "&", "|", "`", "$(", ">", "<", "\n", "\r")
MCP_PREFIX = "mcp__"
# Claude Code's rule names that stand for a kind of tool, not one tool: a rule on reading
# covers every tool that reads files (search and listing too), one on editing every edit.
KIND_RULE_NAMES: dict[str, tuple[ToolKind, ...]] = {
    "Read": READING_KINDS,
    "Edit": ("edit",),
    "Write": ("edit",),
    "MultiEdit": ("edit",),
    "NotebookEdit": ("edit",),
}


def rule_tools(name: str) -> tuple[str, ...]:
    """Our tools that a rule naming ``name`` (Claude Code's name, or ours) speaks about."""
    tools = known_tools()
    kinds = KIND_RULE_NAMES.get(name)
    if kinds is not None:
        return tools.of_kind(*kinds)
    return tools.called(name, ignore_case=False) or (name,)


class _ClaudeToolNames(Mapping[str, tuple[str, ...]]):
    """Claude Code's tool names -> ours, asked of the tools' declarations each time."""

    def __getitem__(self, name: str) -> tuple[str, ...]:
        if name not in KIND_RULE_NAMES and not known_tools().called(name, ignore_case=False):
            raise KeyError(name)
        return rule_tools(name)

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys((*KIND_RULE_NAMES, *known_tools().claude_names())))

    def __len__(self) -> int:
        return sum(1 for _ in self)


CLAUDE_TOOL_NAMES: Mapping[str, tuple[str, ...]] = _ClaudeToolNames()
# Claude Code tools we do not have: a rule naming one is reported and left out.
CLAUDE_TOOLS_WE_LACK = frozenset(
    {"WebSearch", "NotebookRead", "SlashCommand",
     "Skill", "ListMcpResources", "ReadMcpResource"}
)
_RULE = re.compile(r"^([A-Za-z0-9_.\-]+\*?)(?:\((.*)\))?$", re.DOTALL)


class RuleError(ValueError):
    """A rule that cannot be read; the message names it."""


@dataclass(frozen=True, slots=True)
class Rule:
    tools: frozenset[str]  # the tool names it speaks about (empty: see tool_prefix)
    kind: RuleKind
    pattern: str | None  # None: every call of the tool
    prefix: bool  # a command rule that ended in ":*" (or " *")
    text: str  # as written, for messages
    source: str  # "--allowed-tools", "this session", or the settings file it came from
    base: Path | None = None  # path rules: the folder a relative pattern starts from
    tool_prefix: str = ""  # "mcp__server__": every tool of an MCP server
    project: Path | None = None  # path rules: the folder tool paths are relative to

    def applies_to(self, tool: str) -> bool:
        return tool in self.tools or bool(self.tool_prefix and tool.startswith(self.tool_prefix))

    def allows(self, tool: str, args: Mapping[str, Any]) -> bool:
        return self.applies_to(tool) and self._matches(tool, args, deny=False)

    def denies(self, tool: str, args: Mapping[str, Any]) -> bool:
        return self.applies_to(tool) and self._matches(tool, args, deny=True)

    def _matches(self, tool: str, args: Mapping[str, Any], *, deny: bool) -> bool:
        if self.pattern is None or self.kind == "any":
            return True
        argument = _argument(args, known_tools().traits(tool).rule_argument)
        if self.kind == "command":
            return self._denies_command(argument) if deny else self._allows_command(argument)
        if self.kind == "path":
            return self._matches_path(argument or ".")
        if self.kind == "domain":
            return _host_matches(argument, self.pattern, wide=deny)
        return argument.lower() == self.pattern.lower()

    # ---- commands ----------------------------------------------------------------------

    def _allows_command(self, command: str) -> bool:
        assert self.pattern is not None
        normal = normal_command(command)
        if not self.prefix and "*" not in self.pattern:
            return normal == self.pattern
        if any(op in command for op in CONTROL_OPERATORS):
            return False
        if single_command_words(command) is None:
            return False
        return self._command_pattern_matches(normal)

    def _denies_command(self, command: str) -> bool:
        assert self.pattern is not None
        if normal_command(command) == self.pattern:
            return True
        analysis = analyse(command)
        if analysis.uncertain:
            return True  # cannot tell what runs: the deny rule holds
        for words in analysis.invocations:
            named = (command_name(words[0] or ""), *words[1:])
            if any(self._could_match(w) for w in (words, named)):
                return True
        return False

    def _could_match(self, words: Words) -> bool:
        """The rule matches the words, or may once a word known only at run time is known
        (``git $SUB``, ``git pu?h``: any word, or none, could stand there)."""
        assert self.pattern is not None
        known = list(itertools.takewhile(lambda word: word is not None, words))
        text = " ".join(str(word) for word in known)
        if len(known) == len(words):
            return self._command_pattern_matches(text)
        head = self.pattern.split("*")[0] if "*" in self.pattern and not self.prefix else None
        if head is not None:
            return (text + " ").startswith(head) or head.startswith(text + " ")
        return starts_with_words(text, self.pattern) or (self.pattern + " ").startswith(
            text + " ")

    def _command_pattern_matches(self, command: str) -> bool:
        assert self.pattern is not None
        if self.prefix:
            return starts_with_words(command, self.pattern)
        if "*" in self.pattern:
            return wildcard(self.pattern).fullmatch(command) is not None
        return command == self.pattern

    # ---- paths -------------------------------------------------------------------------

    def _matches_path(self, raw: str) -> bool:
        assert self.pattern is not None and self.base is not None
        spec = _spec(self.pattern)
        for candidate in _path_forms(raw, self.base, self.project or self.base):
            if spec.match_file(candidate) or spec.match_file(candidate + "/"):
                return True
        return False

    def with_source(self, source: str) -> Rule:
        return replace(self, source=source)


@dataclass(frozen=True, slots=True)
class Verdict:
    behavior: Behavior
    rule: Rule

    @property
    def allowed(self) -> bool:
        return self.behavior == "allow"

    @property
    def reason(self) -> str:
        return f"the rule {self.rule.text!r} from {self.rule.source}"


@dataclass(frozen=True, slots=True)
class PermissionRules:
    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()
    ask: tuple[Rule, ...] = ()

    def check(self, tool: str, args: Mapping[str, Any]) -> Verdict | None:
        """Deny, then ask, then allow; None when no rule speaks about this call."""
        for rule in self.deny:
            if rule.denies(tool, args):
                return Verdict("deny", rule)
        for rule in self.ask:
            if rule.denies(tool, args):  # asking is matched as widely as denying
                return Verdict("ask", rule)
        for rule in self.allow:
            if rule.allows(tool, args):
                return Verdict("allow", rule)
        return None

    def all_rules(self) -> list[tuple[Behavior, Rule]]:
        return [
            *(("deny", r) for r in self.deny),
            *(("ask", r) for r in self.ask),
            *(("allow", r) for r in self.allow),
        ]

    def __bool__(self) -> bool:
        return bool(self.allow or self.deny or self.ask)


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


# ---- parsing ---------------------------------------------------------------------------------


def parse_rule(text: str, source: str, project_root: Path | None = None) -> Rule:
    """One rule, in Claude Code's syntax or with our tool names; RuleError when unreadable.

    Path patterns and tool paths start from ``project_root`` (the working folder).
    """
    written = text.strip()
    match = _RULE.match(written)
    if not match:
        raise RuleError(f"cannot read the permission rule {text!r} (from {source})")
    name, specifier = match.group(1), match.group(2)
    if name in CLAUDE_TOOLS_WE_LACK:
        raise RuleError(f"the permission rule {written!r} (from {source}) names {name}, "
                        "a Claude Code tool mini-claude does not have")
    if name.startswith(MCP_PREFIX):
        return _mcp_rule(name, specifier, written, source)
    tools = frozenset(rule_tools(name))
    if specifier is None or specifier.strip() in ("", "*"):
        return Rule(tools, "any", None, False, written, source)
    kind = _kind_of(tools)
    if kind is None:
        raise RuleError(
            f"the permission rule {written!r} (from {source}) gives a specifier, but "
            f"{name} rules take none; name the tool alone"
        )
    if kind == "command":
        return _command_rule(tools, specifier, written, source)
    if kind == "path":
        project = (project_root or Path.cwd()).absolute()
        pattern, base = path_pattern(specifier, project)
        return Rule(tools, "path", pattern, False, written, source, base, project=project)
    if kind == "domain":
        if not specifier.startswith("domain:") or not specifier[7:].strip():
            raise RuleError(f"the permission rule {written!r} (from {source}) needs "
                            "domain:<host>, e.g. WebFetch(domain:example.com)")
        return Rule(tools, "domain", specifier[7:].strip().lower(), False, written, source)
    return Rule(tools, "name", specifier.strip(), False, written, source)


def _kind_of(tools: frozenset[str]) -> SpecifierKind | None:
    """What a specifier means for these tools, as they declare it; None when some take none
    or they disagree."""
    kinds = {known_tools().traits(tool).rule_kind for tool in tools}
    kind = kinds.pop() if len(kinds) == 1 else None
    return kind


def _command_rule(tools: frozenset[str], specifier: str, written: str, source: str) -> Rule:
    pattern = specifier.strip()
    prefix = False
    if pattern.endswith(PREFIX_SUFFIX):
        pattern, prefix = pattern[: -len(PREFIX_SUFFIX)], True
    elif pattern.endswith(" *") and pattern.count("*") == 1:
        pattern, prefix = pattern[:-2], True  # "npm run *": a word prefix, as ":*"
    body = normal_command(pattern)
    if not body:
        raise RuleError(f"the permission rule {written!r} (from {source}) has an empty command")
    return Rule(tools, "command", body, prefix, written, source)


def _mcp_rule(name: str, specifier: str | None, written: str, source: str) -> Rule:
    if specifier is not None:
        raise RuleError(f"the permission rule {written!r} (from {source}): MCP rules take no "
                        "specifier; name mcp__server or mcp__server__tool")
    server, sep, tool = name[len(MCP_PREFIX):].partition("__")
    if not server:
        raise RuleError(f"the permission rule {written!r} (from {source}) names no MCP server")
    if not sep or tool in ("", "*"):
        return Rule(frozenset(), "any", None, False, written, source,
                    tool_prefix=f"{MCP_PREFIX}{server}__")
    return Rule(frozenset({name}), "any", None, False, written, source)


def path_pattern(specifier: str, base: Path) -> tuple[str, Path]:
    """A gitignore pattern and the folder it is relative to.

    ``//x`` is the absolute ``/x``, ``~/x`` is in the home folder, ``/x`` and ``./x``
    start at ``base`` (the project), and a bare ``x`` matches at any depth under it,
    as in a ``.gitignore``.
    """
    spec = specifier.strip()
    if spec.startswith("//"):
        return "/" + spec[2:].lstrip("/"), Path("/")
    if spec == "~" or spec.startswith("~/"):
        return "/" + spec[2:] if len(spec) > 2 else "**", Path.home()
    if spec.startswith("./"):
        return "/" + spec[2:], base
    return spec, base


def _path_forms(raw: str, base: Path, project: Path) -> list[str]:
    """The target as written (made absolute) and with links followed, relative to ``base``."""
    lexical = Path(os.path.normpath(project / Path(raw).expanduser()))
    forms = [lexical]
    try:
        real = lexical.resolve()
    except (OSError, RuntimeError):
        real = lexical
    if real != lexical:
        forms.append(real)
    relative = [_relative(form, base) for form in forms]
    return [r for r in relative if r is not None]


def _relative(path: Path, base: Path) -> str | None:
    try:
        relative = path.relative_to(base)
    except ValueError:
        return None
    text = relative.as_posix()
    return "" if text == "." else text


# ---- commands ---------------------------------------------------------------------------------


def normal_command(command: str) -> str:
    """Runs of spaces and tabs as one space (no newlines: those are operators)."""
    return re.sub(r"[ \t]+", " ", command.strip())


def starts_with_words(command: str, prefix: str) -> bool:
    """``git diff`` matches ``git diff`` and ``git diff --stat``, never ``git diff-tree``."""
    command = normal_command(command)
    return command == prefix or command.startswith(prefix + " ")


def wildcard(pattern: str) -> re.Pattern[str]:
    """``git * main``: each ``*`` is any text; a trailing `` *`` may also match nothing."""
    optional_tail = pattern.endswith(" *")
    core = pattern[:-2] if optional_tail else pattern
    body = ".*".join(re.escape(part) for part in core.split("*"))
    return re.compile(body + ("(?: .*)?" if optional_tail else ""), re.DOTALL)


def url_host(url: str) -> str:
    """The host of a URL, lower case ("" when there is none)."""
    try:
        return (urlsplit(url.strip()).hostname or "").lower().rstrip(".")
    except ValueError:
        return ""


def _host_matches(url: str, domain: str, *, wide: bool) -> bool:
    """The URL's host is the domain (``*.d``: or a subdomain). A deny or ask rule (``wide``)
    also covers subdomains and URLs without a readable host: refusing too much is safe."""
    host = url_host(url)
    if not host:
        return wide
    if domain.startswith("*."):
        return host.endswith(domain[1:]) or host == domain[2:]
    return host == domain or (wide and host.endswith("." + domain))


def _argument(args: Mapping[str, Any], name: str) -> str:
    value = args.get(name, "")
    return value if isinstance(value, str) else str(value)


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


def parse_rule_list(values: Iterable[str], source: str, project_root: Path) -> list[Rule]:
    """Flag rules: a bad one raises RuleError (a usage error on the command line)."""
    return [parse_rule(text, source, project_root) for text in split_rule_list(values)]


def flag_rules(
    allowed: Iterable[str] | None, disallowed: Iterable[str] | None, project_root: Path
) -> tuple[list[Rule], list[Rule]]:
    """The allow and deny rules of --allowed-tools / --disallowed-tools (REPL and print mode);
    a bad one raises RuleError (a usage error on the command line)."""
    return (
        parse_rule_list(allowed or (), "--allowed-tools", project_root),
        parse_rule_list(disallowed or (), "--disallowed-tools", project_root),
    )


@lru_cache(maxsize=256)
def _spec(pattern: str) -> pathspec.PathSpec[Any]:
    return pathspec.PathSpec.from_lines("gitignore", [pattern])
