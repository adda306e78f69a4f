"""Memory files the user writes to from the REPL: ``# note`` and ``/memory``, and ``/init``.

Claude Code calls instruction files "memory": the project's ``CLAUDE.md``
(shared with the team), ``CLAUDE.local.md`` beside it (personal, usually not
committed) and the user's own file for every project.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mini_claude.private_dirs import make_private_dirs

INIT_PROMPT = """\
Study this project and write a CLAUDE.md file at its root for future agent sessions.

Look before you write: list the files, read the README, the build and packaging files \
(Makefile, pyproject.toml, package.json, …), the CI configuration and a few central source \
files. Then write a concise CLAUDE.md (aim for under 100 lines) with:
1. The commands to build, lint and test, including how to run a single test.
2. The architecture at a glance: the main folders and modules, and how a request flows \
through them, as far as it takes several files to see.
3. Conventions a newcomer would get wrong: code style, naming, error handling, where tests go.

Leave out what anyone can see from one file listing, generic advice, and anything you are not \
sure of. If a CLAUDE.md (or AGENTS.md, MINI-CLAUDE.md) already exists, improve it instead of \
replacing it, and keep what its authors wrote. Fold in the important parts of any other \
agent instruction files (.cursorrules, .github/copilot-instructions.md) you find.
"""


@dataclass(frozen=True, slots=True)
class MemoryTarget:
    label: str
    path: Path


def memory_targets(cwd: Path, home: Path, user_home: Path | None = None) -> list[MemoryTarget]:
    """Project, local, user: where a ``#`` note can go, in that order."""
    user_home = user_home or Path.home()
    project = next((cwd / n for n in ("MINI-CLAUDE.md", "CLAUDE.md", "AGENTS.md")
                    if (cwd / n).is_file()), cwd / "CLAUDE.md")
    claude_user = user_home / ".claude" / "CLAUDE.md"
    user = claude_user if claude_user.is_file() else home / "MINI-CLAUDE.md"
    return [
        MemoryTarget(f"Project memory ({project.name}, shared with the team)", project),
        MemoryTarget("Local project memory (CLAUDE.local.md, just you)", cwd / "CLAUDE.local.md"),
        MemoryTarget(f"User memory ({user}, every project)", user),
    ]


def append_memory(path: Path, note: str) -> None:
    """Add ``note`` as a bullet at the end of ``path`` (created when missing)."""
    if not path.parent.exists():
        make_private_dirs(path.parent)
    existing = path.read_text(encoding="utf-8") if path.is_file() else ""
    separator = "" if not existing or existing.endswith("\n") else "\n"
    with path.open("a", encoding="utf-8") as handle:
        handle.write(f"{separator}- {note.strip()}\n")


def memory_note(text: str) -> str | None:
    """The note of a ``# note`` prompt, or None when the text is not one."""
    if not text.startswith("#") or text.startswith("##"):
        return None
    note = text[1:].strip()
    return note or None
