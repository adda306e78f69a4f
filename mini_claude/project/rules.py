"""``.claude/rules/*.md``: instruction files that apply always, or only to some paths.

A rule without ``paths:`` in its front matter is loaded with the other
instructions. A rule with ``paths:`` (globs relative to the project, such as
``src/**/*.ts`` or ``"*.{ts,tsx}"``) is loaded the first time the model reads or
edits a matching file: as a ``<system-reminder>`` appended to that tool result,
the newest message, so the cached prefix of the request stays as it was. Each
rule is attached once per conversation, and re-attached after a summary.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from mini_claude.project.boundary import ProjectBoundary
from mini_claude.project.front_matter import read, string_list

RULES_DIR = Path(".claude") / "rules"
BRACES = re.compile(r"\{([^{}]*)\}")


@dataclass(frozen=True, slots=True)
class Rule:
    path: Path
    body: str
    globs: tuple[str, ...] = ()
    scope: str = "project"  # or "user"

    def matches(self, relative: str) -> bool:
        patterns = [p for g in self.globs for p in expand_braces(g)]
        return bool(pathspec.PathSpec.from_lines("gitignore", patterns).match_file(relative))


@dataclass
class RuleSet:
    always: list[Rule] = field(default_factory=list)
    by_path: list[Rule] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def expand_braces(glob: str) -> list[str]:
    """``src/*.{ts,tsx}`` is two globs (gitwildmatch has no braces)."""
    match = BRACES.search(glob)
    if match is None:
        return [glob]
    head, tail = glob[: match.start()], glob[match.end() :]
    return [g for option in match.group(1).split(",") for g in expand_braces(head + option + tail)]


def find_rules(folders: Sequence[tuple[Path, str]],
               boundary: ProjectBoundary | None = None) -> RuleSet:
    """Every ``*.md`` under each rules folder (subfolders too), in name order; a project's
    rules through ``boundary`` (one that links out of the project is skipped)."""
    rules = RuleSet()
    for folder, scope in folders:
        try:
            files = sorted(p for p in folder.rglob("*.md") if p.is_file())
        except OSError:
            continue
        for path in files:
            rule = _read_rule(path, scope, rules.warnings,
                              boundary if scope == "project" else None)
            if rule is not None:
                (rules.by_path if rule.globs else rules.always).append(rule)
    return rules


def _read_rule(path: Path, scope: str, warnings: list[str],
               boundary: ProjectBoundary | None) -> Rule | None:
    parsed = read(path, "rule", warnings, boundary=boundary)
    if parsed is None:
        return None
    fields, body = parsed
    if not body.strip():
        return None
    return Rule(path, body.strip(), tuple(string_list(fields.get("paths"))), scope)


class PathRules:
    """The path-scoped rules of a session, and which of them the model has seen."""

    def __init__(self, rules: Sequence[Rule], root: Path) -> None:
        self.rules = list(rules)
        self.root = root
        self.loaded: list[Rule] = []

    def reminder_for(self, path: object) -> str | None:
        """The rules a read or edit of this path brings in for the first time, or None."""
        if not isinstance(path, str) or not self.rules:
            return None
        relative = self._relative(path)
        if relative is None:
            return None
        new = [r for r in self.rules if r not in self.loaded and r.matches(relative)]
        if not new:
            return None
        self.loaded.extend(new)
        return "\n\n".join(reminder_text(rule, relative) for rule in new)

    def _relative(self, raw: str) -> str | None:
        if not raw:
            return None
        path = Path(raw)
        path = path if path.is_absolute() else self.root / path
        try:
            return path.resolve().relative_to(self.root.resolve()).as_posix()
        except (ValueError, OSError):
            return None


def reminder_text(rule: Rule, relative: str) -> str:
    return (
        f"<system-reminder>\nProject rule from {rule.path} (applies to {', '.join(rule.globs)}; "
        f"loaded because you touched {relative}). Follow it:\n{rule.body}\n</system-reminder>"
    )
