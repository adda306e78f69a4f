"""The system prompt and the project instructions folded into it once per session.

The prompt is built once and never edited afterwards: it heads the prompt-cache
prefix, and a single changed byte would make every later request pay in full.
"""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

from mini_claude.safe_read import read_text_limited

INSTRUCTION_FILES = ("MINI-CLAUDE.md", "CLAUDE.md", "AGENTS.md")
MAX_INSTRUCTION_CHARS = 40_000

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
    paths: tuple[Path, ...]
    text: str


def find_instructions(cwd: Path, home: Path) -> ProjectInstructions:
    """Instruction files from the user's home folder, then from the root down to ``cwd``."""
    found: list[Path] = []
    user_file = home / "MINI-CLAUDE.md"
    if user_file.is_file():
        found.append(user_file)
    for folder in reversed([cwd, *cwd.parents]):
        for name in INSTRUCTION_FILES:
            candidate = folder / name
            if candidate.is_file():
                found.append(candidate)
                break  # one file per folder: the most specific name wins
    parts: list[str] = []
    for path in found:
        try:
            body = read_text_limited(path)[:MAX_INSTRUCTION_CHARS]
        except OSError:
            continue
        parts.append(f"Instructions from {path}:\n{body.strip()}")
    return ProjectInstructions(tuple(found), "\n\n".join(parts))


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
