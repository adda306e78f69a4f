"""``-w/--worktree [NAME]``: the session starts in a new git worktree of the project, as Claude
Code's does, so parallel sessions on one repository never edit the same files.

The worktree is ``.claude/worktrees/NAME`` at the repository's top, on a new branch
``worktree-NAME``, made from ``origin/HEAD`` when the repository has one, else from ``HEAD``.
Files git ignores that ``.worktreeinclude`` names (``.env`` and the like) are copied in. At the
end a worktree nothing was done in is removed; one with changes is kept, and the user is told
how to merge or remove it.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pathspec

WORKTREES = Path(".claude") / "worktrees"
INCLUDE_FILE = ".worktreeinclude"
BRANCH_PREFIX = "worktree-"
_WORDS = (
    ("bright", "quiet", "swift", "amber", "gentle", "brave", "lucky", "calm"),
    ("running", "singing", "drifting", "climbing", "dancing", "humming"),
    ("fox", "otter", "heron", "maple", "comet", "harbor", "lynx", "cedar"),
)


class WorktreeError(Exception):
    """One line for the user: why no worktree could be made."""


@dataclass(frozen=True, slots=True)
class Worktree:
    path: Path
    branch: str
    base: str  # the commit it was made from
    repository: Path

    def leave(self) -> str:
        """Remove the worktree if nothing was done in it; say what became of it."""
        changed = _git(self.path, "status", "--porcelain").strip()
        head = _git(self.path, "rev-parse", "HEAD").strip()
        if not changed and head == self.base:
            _git(self.repository, "worktree", "remove", str(self.path))
            _git(self.repository, "branch", "-D", self.branch)
            return f"worktree {self.path} had no changes and was removed"
        return (f"worktree kept at {self.path} (branch {self.branch}): commit there, then "
                f"`git merge {self.branch}` here; or drop it with "
                f"`git worktree remove --force {self.path} && git branch -D {self.branch}`")


def enter_worktree(cwd: Path, name: str | None) -> Worktree:
    """Make the worktree for this session and return it (the caller moves into it)."""
    try:
        top = Path(_git(cwd, "rev-parse", "--show-toplevel").strip())
    except WorktreeError:
        raise WorktreeError("--worktree needs a git repository; this folder is in none") from None
    name = (name or "").strip() or generated_name()
    if "/" in name or name.startswith(".") or not name.replace("-", "").replace("_", "").isalnum():
        raise WorktreeError(f"{name!r} is no worktree name (letters, digits, - and _)")
    path = top / WORKTREES / name
    if path.exists():
        raise WorktreeError(f"{path} exists already; give another name")
    base = _base(top)
    _git(top, "worktree", "add", "-q", "-b", f"{BRANCH_PREFIX}{name}", str(path), base)
    _copy_included(top, path)
    inside = path / cwd.relative_to(top) if cwd != top else path
    return Worktree(inside if inside.is_dir() else path, f"{BRANCH_PREFIX}{name}",
                    _git(path, "rev-parse", "HEAD").strip(), top)


def generated_name() -> str:
    return "-".join(random.choice(words) for words in _WORDS)


def _base(top: Path) -> str:
    try:
        return _git(top, "rev-parse", "--verify", "-q", "origin/HEAD").strip()
    except WorktreeError:
        return "HEAD"


def _copy_included(top: Path, path: Path) -> None:
    """Ignored files the project asks to carry into every worktree (``.worktreeinclude``)."""
    include = top / INCLUDE_FILE
    if not include.is_file():
        return
    spec = pathspec.GitIgnoreSpec.from_lines(include.read_text(encoding="utf-8").splitlines())
    ignored = _git(top, "ls-files", "--others", "--ignored", "--exclude-standard", "-z")
    for relative in filter(None, ignored.split("\0")):
        if spec.match_file(relative) and not relative.startswith(str(WORKTREES)):
            target = path / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(top / relative, target)


def _git(cwd: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True,
                              timeout=60, check=False, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WorktreeError(f"git could not run: {exc}") from None
    if done.returncode != 0:
        why = next(iter(done.stderr.strip().splitlines()), "") or f"exit {done.returncode}"
        raise WorktreeError(f"git {args[0]} failed: {why}")
    return done.stdout
