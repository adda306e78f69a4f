"""Files that other sessions or programs run or trust: a write to one always asks.

Settings, hooks, commands, agents and instruction files (the user's and the project's
``.claude/`` and ``.mini-claude/``, CLAUDE.md and its kin), git's internals (hooks,
config) and shell start-up files. Planting one is how a single session would act in
the next one, so no mode but bypassPermissions lets a write to them through unasked.
This is the one list: the file tools' gate asks :func:`is_protected_path`, and a
sandbox can take :func:`protected_paths` for a project and home.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mini_claude.project.instructions import INSTRUCTION_FILES, LOCAL_FILE, USER_INSTRUCTION_FILE

CONFIG_FOLDERS = (".claude", ".mini-claude")
GIT_FOLDER = ".git"
# Read by every new shell (or by git and ssh), in the user's home.
SHELL_START_UP_FILES = (
    ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".bash_aliases",
    ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc",
    ".login", ".logout",
)
HOME_CONFIG = (".config/fish", ".gitconfig", ".config/git", ".ssh")
INSTRUCTION_NAMES = frozenset(
    Path(name).name for name in (*INSTRUCTION_FILES, LOCAL_FILE, USER_INSTRUCTION_FILE)
)

CONFIG_REASON = "configuration that other sessions run (settings, hooks, commands, agents)"
INSTRUCTION_REASON = "an instruction file that other sessions put into their prompt"
GIT_REASON = "git's own configuration and hooks, which git runs"
SHELL_REASON = "a shell start-up file that every new shell runs"
HOME_CONFIG_REASON = "configuration that git, ssh or the shell run or trust"


@dataclass(frozen=True, slots=True)
class ProtectedPath:
    path: Path
    reason: str
    folder: bool  # everything under it is protected too


def protected_paths(project: Path, home: Path) -> list[ProtectedPath]:
    """The protected files and folders of one project and one user home (absolute, as
    given). :func:`is_protected_path` also protects instruction files and ``.git`` folders
    at any depth, which no fixed list can name."""
    found: list[ProtectedPath] = []
    for base in dict.fromkeys((project, home)):
        found += [ProtectedPath(base / name, CONFIG_REASON, True) for name in CONFIG_FOLDERS]
        found += [ProtectedPath(base / name, INSTRUCTION_REASON, False)
                  for name in sorted(INSTRUCTION_NAMES)]
    found.append(ProtectedPath(project / GIT_FOLDER, GIT_REASON, True))
    found += [ProtectedPath(home / name, SHELL_REASON, False) for name in SHELL_START_UP_FILES]
    found += [ProtectedPath(home / name, HOME_CONFIG_REASON, True) for name in HOME_CONFIG]
    return found


def is_protected_path(path: Path, project: Path, home: Path) -> str | None:
    """Why writing ``path`` must be asked about (None: an ordinary file). The path is judged
    as written and with links followed, so a link cannot hide what it reaches."""
    project, home = _real(project), _real(home)
    for form in dict.fromkeys((_lexical(path, project), _real(project / path))):
        reason = _reason(form, project, home)
        if reason is not None:
            return reason
    return None


def _reason(path: Path, project: Path, home: Path) -> str | None:
    for entry in protected_paths(project, home):
        if path == entry.path or (entry.folder and path.is_relative_to(entry.path)):
            return entry.reason
    if GIT_FOLDER in path.parts:
        return GIT_REASON
    if path.name in INSTRUCTION_NAMES and path.is_relative_to(project):
        return INSTRUCTION_REASON
    return None


def _lexical(path: Path, project: Path) -> Path:
    return Path(os.path.normpath(project / path.expanduser()))


def _real(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path.expanduser()))
