"""Skills: folders of instructions the model loads when a task calls for them.

A skill is a folder holding ``SKILL.md`` (front matter with ``name`` and
``description``, then the instructions) and any extra files beside it, the
layout of Anthropic's agent skills. Only the names and descriptions go into
the system prompt; the ``skill`` tool loads one body when the model decides it
applies. Skills are instructions to the model, not programs: like Claude Code,
mini-claude reads a project's skills without asking (the model still needs the
user's approval for anything a skill tells it to run).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mini_claude.project.boundary import ProjectBoundary
from mini_claude.project.front_matter import FrontMatterError, split
from mini_claude.safe_read import read_limited

SKILL_FILE = "SKILL.md"
PROJECT_SKILL_DIRS = (Path(".mini-claude") / "skills", Path(".claude") / "skills")
HOME_SKILL_DIR = "skills"
NAME_PATTERN = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
MAX_NAME_CHARS = 64
MAX_DESCRIPTION_CHARS = 1_024
MAX_BODY_CHARS = 100_000
MAX_EXTRA_FILES = 50


class SkillError(ValueError):
    """A SKILL.md that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str
    folder: Path
    scope: str  # "project" or "user"
    extra_files: tuple[Path, ...] = ()

    @property
    def path(self) -> Path:
        return self.folder / SKILL_FILE


@dataclass
class SkillCatalog:
    """Every usable skill by name, and one warning per skill that could not be read."""

    skills: dict[str, Skill] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    def get(self, name: str) -> Skill | None:
        return self.skills.get(name.strip())

    def names(self) -> list[str]:
        return sorted(self.skills)

    def prompt_section(self) -> str:
        """The lines for the system prompt: names and descriptions only."""
        if not self.skills:
            return ""
        lines = [f"- {s.name}: {s.description}" for s in sorted(self.skills.values(),
                                                                key=lambda s: s.name)]
        return (
            "Skills (instructions for particular tasks; when one applies, load it with the "
            "skill tool before you start, and follow it):\n" + "\n".join(lines)
        )


def skill_roots(cwd: Path, home: Path) -> list[tuple[Path, str]]:
    """Where skills are looked for, the ones that win a name first."""
    roots = [(cwd / d, "project") for d in PROJECT_SKILL_DIRS]
    roots.append((home / HOME_SKILL_DIR, "user"))
    return roots


def find_skills(cwd: Path, home: Path) -> SkillCatalog:
    """Read every ``*/SKILL.md`` under the skill folders; bad ones (and a project's that link
    out of the project) become warnings."""
    catalog = SkillCatalog()
    boundary = ProjectBoundary.of(cwd, home)
    for root, scope in skill_roots(cwd, home):
        for folder in _skill_folders(root):
            try:
                skill = read_skill(folder, scope, boundary if scope == "project" else None)
            except SkillError as exc:
                catalog.warnings.append(str(exc))
                continue
            other = catalog.skills.get(skill.name)
            if other is not None:
                catalog.warnings.append(
                    f"skill {skill.name!r} in {skill.path} is hidden by the one in {other.path}"
                )
                continue
            catalog.skills[skill.name] = skill
    return catalog


def _skill_folders(root: Path) -> list[Path]:
    try:
        return sorted(p for p in root.iterdir() if (p / SKILL_FILE).exists())  # pipes too: warned
    except OSError:
        return []


def read_skill(folder: Path, scope: str, boundary: ProjectBoundary | None = None) -> Skill:
    """A skill; a project's is read through its ``boundary`` (a link out is an error)."""
    path = folder / SKILL_FILE
    try:
        raw = boundary.read(path) if boundary is not None else read_limited(path)
        text = raw.decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SkillError(f"cannot read {path}: {exc}") from None
    try:
        fields, body = split(text, path, required=True)
    except FrontMatterError as exc:
        raise SkillError(str(exc)) from None
    name = str(fields.get("name") or "").strip()
    description = " ".join(str(fields.get("description") or "").split())
    if not name:
        raise SkillError(f"{path}: the front matter has no 'name'")
    if len(name) > MAX_NAME_CHARS or not NAME_PATTERN.match(name):
        raise SkillError(
            f"{path}: the name {name!r} must be lowercase letters, digits and hyphens "
            f"(at most {MAX_NAME_CHARS} characters)"
        )
    if not description:
        raise SkillError(f"{path}: the front matter has no 'description'")
    if len(description) > MAX_DESCRIPTION_CHARS:
        raise SkillError(f"{path}: the description is longer than {MAX_DESCRIPTION_CHARS} chars")
    if not body.strip():
        raise SkillError(f"{path}: the skill has no instructions after the front matter")
    if len(body) > MAX_BODY_CHARS:
        raise SkillError(f"{path}: the instructions are longer than {MAX_BODY_CHARS:,} chars")
    return Skill(name, description, body.strip(), folder, scope, _extra_files(folder))


def _extra_files(folder: Path) -> tuple[Path, ...]:
    found: list[Path] = []
    for path in sorted(folder.rglob("*")):
        if len(found) >= MAX_EXTRA_FILES:
            break
        if path.is_file() and path.name != SKILL_FILE and not path.name.startswith("."):
            found.append(path)
    return tuple(found)


def load_text(skill: Skill, root: Path) -> str:
    """What the ``skill`` tool returns: the instructions and where the extra files are."""
    parts = [f"Skill {skill.name!r} ({skill.path}):", "", skill.body]
    if skill.extra_files:
        parts += ["", "Files of this skill (read them with read_file when the instructions "
                  "refer to them):"]
        parts += [f"- {_shown(p, root)}" for p in skill.extra_files]
    return "\n".join(parts)


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


class LoadedSkills:
    """Which skills the model loaded in this conversation, newest last."""

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._names: list[str] = []
        for name in names:
            self.add(name)

    def add(self, name: str) -> None:
        if name in self._names:
            self._names.remove(name)
        self._names.append(name)

    def newest_first(self) -> list[str]:
        return list(reversed(self._names))

    def __len__(self) -> int:
        return len(self._names)


def within_budget(
    skills: Sequence[Skill], max_chars: int
) -> tuple[list[Skill], list[Skill]]:
    """Whole skills, newest first, while their bodies fit ``max_chars``; and the rest."""
    kept: list[Skill] = []
    left_out: list[Skill] = []
    used = 0
    for skill in skills:
        if used + len(skill.body) <= max_chars:
            kept.append(skill)
            used += len(skill.body)
        else:
            left_out.append(skill)
    return kept, left_out
