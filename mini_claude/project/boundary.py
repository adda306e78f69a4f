"""What a project may bring in: the one rule for links and outside paths.

A repository decides what its files are, links included: ``CLAUDE.md`` may be a
link to ``~/.ssh/id_rsa``, ``.claude/rules`` a link to a folder elsewhere. So a
file a project brings (instructions, rules, commands, skills, agents, imports)
counts as the file it really reaches. It stays out unless the user approved it
when that is outside the project, in the home folder's private parts (our home,
``~/.claude``), or anywhere in the home folder when the project is the home
folder itself (or holds it). :meth:`ProjectBoundary.read` is the only way such a
file is read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from mini_claude.safe_read import DEFAULT_LIMIT, UnsafeFile, read_limited


class OutsideProject(UnsafeFile):
    """A project's file that reaches outside the project; it was not read."""


def claude_user_dir() -> Path:
    """Claude Code's user folder: ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR", "").strip()
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


@dataclass(frozen=True)
class ProjectBoundary:
    """The project's top folder and the folders no project file may reach without asking."""

    root: Path
    private: tuple[Path, ...]
    user_home: Path

    @classmethod
    def of(cls, cwd: Path, home: Path, user_home: Path | None = None) -> ProjectBoundary:
        """The boundary of the project ``cwd`` is in; ``home`` is our own home folder."""
        user_home = user_home or Path.home()
        return cls(project_root(cwd), (home, user_home / ".claude"), user_home)

    def needs_approval(self, target: Path) -> bool:
        """Whether ``target``, links followed, is somewhere a project may not reach unasked."""
        real = real_path(target)
        if any(inside(real, real_path(p)) for p in self.private):
            return True
        root, user_home = real_path(self.root), real_path(self.user_home)
        if inside(user_home, root) and inside(real, user_home):
            return True
        return not inside(real, root)

    def brings_in(self, path: Path) -> bool:
        """Whether ``path``, a file that lies in the project, reaches past it: it (or a folder
        on its way) is a link to somewhere :meth:`needs_approval`. A file that is no link is
        the project's own; one above the project's top folder (a parent folder's
        ``CLAUDE.md``) is the user's, not the project's: neither brings anything in."""
        lexical, root = _lexical(path), _lexical(self.root)
        if not inside(lexical, root):
            return False
        where = real_path(self.root) / lexical.relative_to(root)
        return real_path(path) != where and self.needs_approval(path)

    def read(self, path: Path, limit: int = DEFAULT_LIMIT, *, approved: bool = False) -> bytes:
        """The bytes of a file the project brings, if it stays inside the project or the user
        ``approved`` it (an import the user said yes to).

        Raises OutsideProject when it reaches past it, and what ``read_limited`` raises
        otherwise (never blocks on a pipe, never reads past the limit).
        """
        if not approved and self.brings_in(path):
            raise OutsideProject(f"{path} links outside the project (to {real_path(path)}); "
                                 "a project's files may not bring in files from elsewhere "
                                 "without asking")
        return read_limited(path, limit)

    def read_text(self, path: Path, limit: int = DEFAULT_LIMIT) -> str:
        """:meth:`read`, decoded (undecodable bytes become U+FFFD)."""
        return self.read(path, limit).decode("utf-8", errors="replace")


def project_root(cwd: Path) -> Path:
    """The repository's top folder (the nearest ``.git`` above), else the working folder."""
    for folder in [cwd, *cwd.parents]:
        if (folder / ".git").exists():
            return folder
    return cwd


def real_path(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a loop of links
        return path.absolute()


def inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _lexical(path: Path) -> Path:
    """Where ``path`` is written, absolute, links not followed."""
    return Path(os.path.normpath(path.absolute()))
