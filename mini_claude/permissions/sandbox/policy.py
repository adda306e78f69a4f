"""What a sandboxed command may touch, worked out for one mode, project and home.

- **Writable**: the project and its additional directories (``sandbox.filesystem.allowWrite``
  too, except in acceptEdits, which is about the project alone); nothing in plan mode.
- **Read-only inside them**: the protected paths (``protected_paths``: settings, hooks,
  commands, instruction files; of ``.git`` the parts git runs, its hooks and config) and
  ``filesystem.denyWrite``. A protected folder that does not exist yet is held by an empty
  read-only folder, so a command cannot create it (an empty folder is invisible to git).
- **Not readable at all**: the credentials in the home, mini-claude's home (transcripts,
  trust records, keys in its ``.env``), Claude Code's folder and ``filesystem.denyRead``;
  ``filesystem.allowRead`` opens a path inside them again.
- **Everything else**: readable, not writable. ``/tmp`` is the session's own folder (a fresh
  one per command in plan mode), ``/run`` (where sockets of system services live) is empty.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from pathlib import Path

from mini_claude.permissions.mode_table import PermissionMode, mode_row
from mini_claude.permissions.protected_paths import GIT_FOLDER, protected_paths
from mini_claude.permissions.sandbox.config import SandboxConfig

# The parts of .git that git runs or obeys: the rest (objects, index, refs) stays writable,
# so commits work in the sandbox.
GIT_RUN_PARTS = ("hooks", "config")
# How deep below the project nested repositories (vendored, submodules) are looked for, as
# Claude Code looks for the files it protects to a depth; deeper ones are not protected.
NESTED_GIT_DEPTH = 4
NESTED_GIT_LIMIT = 10_000  # folders looked at, at most: a huge tree is not walked to the end
# Secrets in the home that no command needs to read (the user can open one again with
# sandbox.filesystem.allowRead).
HOME_SECRETS = (".ssh", ".aws", ".config/gcloud", ".gnupg", ".netrc", ".env", ".docker",
                ".kube", ".azure", ".git-credentials", ".config/gh", ".pypirc", ".npmrc")


@dataclass(frozen=True)
class Policy:
    workspace: tuple[Path, ...]  # the project and its additional directories: readable
    writable: tuple[Path, ...]
    read_only: tuple[Path, ...]  # existing paths inside the writable ones
    held: tuple[Path, ...]  # protected folders not there yet: held by an empty folder
    hidden: tuple[Path, ...]  # existing paths whose content is not readable
    reopened: tuple[Path, ...]  # allowRead inside a hidden path
    fresh_tmp: bool  # a new /tmp for this command (plan mode), else the session's
    network: str  # "off", or "proxy": through the domain proxy outside
    hide_run: bool = True  # /run (system services' sockets) empty, unless allowAllUnixSockets
    sockets: tuple[Path, ...] = ()  # network.allowUnixSockets: reachable again

    def describe_writable(self) -> str:
        return ", ".join(str(p) for p in self.writable) or "nothing"


def real(path: Path) -> Path:
    try:
        return path.expanduser().resolve()
    except (OSError, RuntimeError):
        return Path(os.path.abspath(path.expanduser()))


def _inside(path: Path, folders: tuple[Path, ...]) -> bool:
    return any(path == folder or path.is_relative_to(folder) for folder in folders)


def make_policy(mode: PermissionMode, project: Path, additional: tuple[Path, ...],
                home: Path, private_homes: tuple[Path, ...], config: SandboxConfig,
                network: str = "off") -> Policy:
    """The policy for a command; ``private_homes``: mini-claude's and Claude Code's folders."""
    project, home = real(project), real(home)
    workspace = tuple(dict.fromkeys(p for p in (project, *(real(p) for p in additional))
                                    if p.is_dir()))
    writable: tuple[Path, ...] = ()
    row = mode_row(mode)
    if not row.read_only:
        extra = () if row.edits_unasked else config.allow_write
        writable = tuple(dict.fromkeys((*workspace, *(p for p in map(real, extra)
                                                      if p.is_dir()))))
    read_only, held = _protected(project, home, writable, config)
    hidden = tuple(dict.fromkeys(
        found for path in (*(home / name for name in HOME_SECRETS), *private_homes,
                           *config.deny_read)
        if os.path.lexists(path) and (found := real(path)) != Path("/")
        and not project.is_relative_to(found)))  # hiding the project would stop all work
    reopened = tuple(real(p) for p in config.allow_read
                     if p.exists() and _inside(real(p), hidden))
    return Policy(workspace, writable, read_only, held, hidden, reopened, fresh_tmp=row.read_only,
                  network=network, hide_run=not config.allow_all_unix_sockets,
                  sockets=tuple(p for p in config.allow_unix_sockets if os.path.lexists(p)))


def nested_git_parts(project: Path) -> list[Path]:
    """The hooks and config of every repository below the project's own: nested ``.git``
    folders (vendored repositories) and submodules' repositories in ``.git/modules``."""
    found: list[Path] = []
    for seen, (folder, names, _files) in enumerate(os.walk(project), start=1):
        here = Path(folder)
        depth = len(here.relative_to(project).parts)
        if GIT_FOLDER in names:
            names.remove(GIT_FOLDER)  # a repository's insides are not walked as a project
            if here != project:
                found += _run_parts(here / GIT_FOLDER)
        if depth >= NESTED_GIT_DEPTH or seen >= NESTED_GIT_LIMIT:
            names.clear()
    modules = project / GIT_FOLDER / "modules"
    if modules.is_dir():
        for config in itertools.islice(modules.rglob("config"), NESTED_GIT_LIMIT):
            if (config.parent / "HEAD").is_file():
                found += _run_parts(config.parent)
    return found


def _run_parts(git_dir: Path) -> list[Path]:
    return [git_dir / part for part in GIT_RUN_PARTS if os.path.lexists(git_dir / part)]


def _protected(project: Path, home: Path, writable: tuple[Path, ...],
               config: SandboxConfig) -> tuple[tuple[Path, ...], tuple[Path, ...]]:
    if not writable:
        return (), ()
    read_only: dict[Path, None] = {}
    held: dict[Path, None] = {}
    for entry in protected_paths(project, home):
        paths = [entry.path]
        if entry.path == project / GIT_FOLDER:
            if entry.path.is_dir():
                paths = [entry.path / part for part in GIT_RUN_PARTS]
            elif entry.path.exists():
                paths = []  # a worktree's .git file: the repository is elsewhere, read-only
        for path in paths:
            if not _inside(path, writable):
                continue
            if os.path.lexists(path):
                read_only.setdefault(real(path), None)
            elif entry.folder and path.parent.is_dir():
                held.setdefault(path, None)
    for path in nested_git_parts(project):
        if _inside(path, writable):
            read_only.setdefault(real(path), None)
    for path in config.deny_write:
        if os.path.lexists(path) and _inside(real(path), writable):
            read_only.setdefault(real(path), None)
    return tuple(read_only), tuple(held)
