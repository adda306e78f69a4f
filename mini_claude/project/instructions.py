"""The system prompt and the project instructions folded into it once per session.

The prompt is built once and never edited afterwards: it heads the prompt-cache
prefix, and a single changed byte would make every later request pay in full.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass, field
from pathlib import Path

from mini_claude.project.boundary import ProjectBoundary, project_root
from mini_claude.project.imports import HeldImport, ImportExpander, ImportGate, InstructionFile
from mini_claude.project.rules import RULES_DIR, Rule, find_rules
from mini_claude.project.trust import ProjectTrust

INSTRUCTION_FILES = ("MINI-CLAUDE.md", "CLAUDE.md", "AGENTS.md", ".claude/CLAUDE.md")
LOCAL_FILE = "CLAUDE.local.md"
USER_INSTRUCTION_FILE = "MINI-CLAUDE.md"

BASE_PROMPT = """\
You are mini-claude, a coding agent working in the user's project folder through tools.

How to work:
- Look before you change: list files, search, and read the relevant code first.
- Keep answers short and concrete; show file paths and line numbers when you refer to code.
- Use edit_file for small changes (the old text must be unique) and write_file for new files.
- Run commands with run_shell (tests, builds, git); the user may be asked to approve them.
- Old tool results may be replaced by placeholders such as [cleared: …] or [snipped: …] to save
  context. Each says where the full text was saved: read that file with read_file (offset/limit
  for long ones) if you need it again, or re-read the file or re-run the command it came from.
- A summary may replace earlier messages; trust it and continue the work from where it says.
- Call the compact tool yourself when you have finished a large sub-task and the details of the
  earlier work are no longer needed.
- For work of three or more steps, keep a plan with todo_write; it survives every summary.
"""


@dataclass(frozen=True)
class ProjectInstructions:
    """What the instruction files put into the system prompt, and what they held back."""

    paths: tuple[Path, ...]  # the top-level files (imports are listed in ``files``)
    text: str
    files: tuple[InstructionFile, ...] = ()
    warnings: tuple[str, ...] = ()
    held: tuple[HeldImport, ...] = ()  # imports waiting for the user's approval
    path_rules: tuple[Rule, ...] = ()  # rules loaded when a matching file is touched
    root: Path = field(default_factory=Path)


def find_instructions(cwd: Path, home: Path, user_home: Path | None = None) -> ProjectInstructions:
    """The user's files first, then the project's from the root folder down to ``cwd``
    (each with what it imports), then the rules that always apply.

    ``home`` is our own home folder; ``user_home`` the user's (for ``~/.claude``).
    """
    user_home = user_home or Path.home()
    boundary = ProjectBoundary.of(cwd, home, user_home)
    root = boundary.root
    trust = ProjectTrust(home)
    gate = ImportGate(boundary,
                      lambda source, target: import_approved(trust, root, source, target))
    expander = ImportExpander(gate, user_home)
    for path in (home / USER_INSTRUCTION_FILE, user_home / ".claude" / "CLAUDE.md"):
        if path.is_file():
            expander.add(path, "user", trusted=True)
    rules = find_rules([(user_home / ".claude" / "rules", "user"), (cwd / RULES_DIR, "project")],
                       boundary)
    for rule in (r for r in rules.always if r.scope == "user"):
        expander.add(rule.path, "rule", trusted=True, text=rule.body)
    top: list[Path] = [f.path for f in expander.result.files]
    for folder in reversed([cwd, *cwd.parents]):
        for path in _folder_files(folder):
            expander.add(path, "local" if path.name == LOCAL_FILE else "project", trusted=False)
            top.append(path)
    for rule in (r for r in rules.always if r.scope == "project"):
        expander.add(rule.path, "rule", trusted=False, text=rule.body)
        top.append(rule.path)
    result = expander.result
    return ProjectInstructions(
        paths=tuple(p for p in top if any(f.path == p for f in result.files)),
        text="\n\n".join(_section(f) for f in result.files),
        files=tuple(result.files),
        warnings=tuple([*rules.warnings, *result.warnings]),
        held=tuple(result.held),
        path_rules=tuple(rules.by_path),
        root=cwd,
    )


def _folder_files(folder: Path) -> list[Path]:
    """One instruction file per folder (the most specific name wins), and ``CLAUDE.local.md``."""
    found: list[Path] = []
    for name in INSTRUCTION_FILES:
        if (folder / name).is_file():
            found.append(folder / name)
            break
    if (folder / LOCAL_FILE).is_file():
        found.append(folder / LOCAL_FILE)
    return found


def _section(file: InstructionFile) -> str:
    if file.kind == "import":
        return f"Instructions from {file.path} (imported by {file.imported_by}):\n{file.text}"
    if file.kind == "rule":
        return f"Rule from {file.path}:\n{file.text}"
    return f"Instructions from {file.path}:\n{file.text}"


def import_approved(trust: ProjectTrust, root: Path, source: Path, target: Path) -> bool:
    return trust.status(root, target, _import_marker(root, source)) == "approved"


def approve_imports(home: Path, cwd: Path, held: tuple[HeldImport, ...], approved: bool) -> None:
    """Remember the user's answer for each held import (which file imports which path)."""
    trust = ProjectTrust(home)
    root = project_root(cwd)
    for item in held:
        record = trust.approve if approved else trust.deny
        record(root, item.target, _import_marker(root, item.source))


def _import_marker(root: Path, source: Path) -> bytes:
    """What an approval is bound to: the importing file (the target is the record's key)."""
    try:
        shown = source.resolve().relative_to(root.resolve()).as_posix()
    except (ValueError, OSError):
        shown = str(source)
    return f"import from {shown}".encode()


def build_system_prompt(
    cwd: Path,
    instructions: ProjectInstructions,
    *,
    base: str = BASE_PROMPT,
    append: str = "",
    skills: str = "",
) -> str:
    """``base`` replaces the built-in instructions (--system-prompt-file); ``append``
    (--append-system-prompt) goes last, after the project instructions."""
    environment = (
        f"\nEnvironment:\n- Working folder: {cwd}\n- Platform: {platform.system()} "
        f"{platform.release()}\n"
    )
    project = (
        f"\nProject instructions (follow them):\n{instructions.text}\n" if instructions.text else ""
    )
    extra = f"\nAdditional instructions (follow them):\n{append}\n" if append else ""
    listed = f"\n{skills}\n" if skills else ""  # names and descriptions only
    return base + environment + project + listed + extra
