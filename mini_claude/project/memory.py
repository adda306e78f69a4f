"""Memory files the user writes to from the REPL: ``# note`` and ``/memory``, and ``/init``.

Claude Code calls instruction files "memory": the project's ``CLAUDE.md``
(shared with the team), ``CLAUDE.local.md`` beside it (personal, usually not
committed) and the user's own file for every project.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from mini_claude.private_dirs import make_private_dirs
from mini_claude.project.boundary import ProjectBoundary
from mini_claude.safe_read import read_text_limited

TEMPLATE_PACKAGE = "mini_claude.templates"
INIT_TEMPLATE = "init.md"


@dataclass(frozen=True, slots=True)
class MemoryTarget:
    label: str
    path: Path
    boundary: ProjectBoundary | None = None  # a project's file: written only inside it


def memory_targets(cwd: Path, home: Path, user_home: Path | None = None) -> list[MemoryTarget]:
    """Project, local, user: where a ``#`` note can go, in that order."""
    user_home = user_home or Path.home()
    boundary = ProjectBoundary.of(cwd, home, user_home)
    project = next((cwd / n for n in ("MINI-CLAUDE.md", "CLAUDE.md", "AGENTS.md")
                    if (cwd / n).is_file()), cwd / "CLAUDE.md")
    claude_user = user_home / ".claude" / "CLAUDE.md"
    user = claude_user if claude_user.is_file() else home / "MINI-CLAUDE.md"
    return [
        MemoryTarget(f"Project memory ({project.name}, shared with the team)", project, boundary),
        MemoryTarget("Local project memory (CLAUDE.local.md, just you)", cwd / "CLAUDE.local.md",
                     boundary),
        MemoryTarget(f"User memory ({user}, every project)", user),
    ]


def append_memory(path: Path, note: str, boundary: ProjectBoundary | None = None) -> None:
    """Add ``note`` as a bullet at the end of ``path`` (created when missing).

    A project's file is read through its ``boundary`` first, so a link out of the project
    (or a pipe) raises an OSError and nothing is written through it.
    """
    if not path.parent.exists():
        make_private_dirs(path.parent)
    existing = ""
    if path.exists() or path.is_symlink():
        existing = boundary.read_text(path) if boundary is not None else read_text_limited(path)
    separator = "" if not existing or existing.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{separator}- {note.strip()}\n")


def init_prompt() -> str:
    """``/init``'s request to the model, kept beside the other prompt templates."""
    return resources.files(TEMPLATE_PACKAGE).joinpath(INIT_TEMPLATE).read_text(encoding="utf-8")


def memory_note(text: str) -> str | None:
    """The note of a ``# note`` prompt, or None when the text is not one."""
    if not text.startswith("#") or text.startswith(("##", "#!")):
        return None  # a heading or a pasted script is not a note
    note = text[1:].strip()
    return note or None
