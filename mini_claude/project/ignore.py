"""See a tree the way git does: .gitignore files (nested ones too), clutter, binary files.

Kept free of heavy imports: the grep worker process loads it on every search.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from pathspec import GitIgnoreSpec

from mini_claude.safe_read import is_regular_file

ALWAYS_SKIPPED_DIRS = frozenset({".git", "node_modules", ".venv", "__pycache__"})
BINARY_SNIFF_BYTES = 8 * 1024


def looks_binary(head: bytes) -> bool:
    """Same rule as git and ripgrep: a NUL byte near the start means binary."""
    return b"\x00" in head[:BINARY_SNIFF_BYTES]


class IgnoreRules:
    """The ignore files of one tree, loaded lazily folder by folder.

    A deeper .gitignore overrides a shallower one, as in git: the first
    folder (walking up from the path) whose rules say anything decides.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._specs: dict[Path, GitIgnoreSpec | None] = {}
        self._chains: dict[Path, list[tuple[str, GitIgnoreSpec]]] = {}

    def ignored_name(self, folder: Path, name: str, *, is_dir: bool) -> bool:
        """``ignored(folder / name)``, with the rules that apply in ``folder`` found once
        per folder rather than once per file (for listing a whole tree)."""
        suffix = name + ("/" if is_dir else "")
        for prefix, spec in self._chain(folder):
            verdict = spec.check_file(prefix + suffix).include
            if verdict is not None:
                return verdict
        return False

    def _chain(self, folder: Path) -> list[tuple[str, GitIgnoreSpec]]:
        """The ignore files deciding for paths in ``folder``, nearest first, each with the
        folder's path relative to it."""
        chain = self._chains.get(folder)
        if chain is None:
            chain = []
            current = folder
            while current.is_relative_to(self.root):
                spec = self._spec_for(current)
                if spec is not None:
                    below = folder.relative_to(current).as_posix()
                    chain.append(("" if below == "." else below + "/", spec))
                if current == self.root:
                    break
                current = current.parent
            self._chains[folder] = chain
        return chain

    def ignored(self, path: Path, *, is_dir: bool) -> bool:
        folder = path.parent
        while folder.is_relative_to(self.root):
            spec = self._spec_for(folder)
            if spec is not None:
                relative = path.relative_to(folder).as_posix() + ("/" if is_dir else "")
                verdict = spec.check_file(relative).include
                if verdict is not None:
                    return verdict
            if folder == self.root:
                break
            folder = folder.parent
        return False

    def ignored_anywhere(self, path: Path) -> bool:
        """True when the path or any folder between it and the root is ignored or skipped."""
        current = path
        while current != self.root and current.is_relative_to(self.root):
            is_dir = current != path or current.is_dir()
            if (is_dir and current.name in ALWAYS_SKIPPED_DIRS) or self.ignored(
                current, is_dir=is_dir
            ):
                return True
            current = current.parent
        return False

    def _spec_for(self, folder: Path) -> GitIgnoreSpec | None:
        if folder not in self._specs:
            self._specs[folder] = self._load(folder)
        return self._specs[folder]

    def _load(self, folder: Path) -> GitIgnoreSpec | None:
        sources = [folder / ".gitignore"]
        if folder == self.root:
            sources.insert(0, folder / ".git" / "info" / "exclude")
        lines: list[str] = []
        for source in sources:
            if not is_regular_file(source):
                continue  # absent, or a pipe that would block the listing
            try:
                lines.extend(source.read_text(encoding="utf-8", errors="replace").splitlines())
            except OSError:
                continue
        return GitIgnoreSpec.from_lines(lines) if lines else None


def rules_for(base: Path, project: Path) -> IgnoreRules:
    """Rules anchored at the project, or at ``base`` when the user points past them.

    Naming an ignored folder (or one outside the project) on purpose means
    "look in there": its own .gitignore files still apply, the outer ones do not.
    """
    if base.is_relative_to(project):
        rules = IgnoreRules(project)
        if not rules.ignored_anywhere(base):
            return rules
    return IgnoreRules(base if base.is_dir() else base.parent)


def walk_files(
    base: Path, rules: IgnoreRules, should_stop: Callable[[], bool] = lambda: False,
    kept_out: Path | None = None,
) -> Iterator[Path]:
    """Files under ``base`` (or ``base`` itself) in path order, pruning ignored folders.

    Path order (entries sorted by name, folders entered where they sort) is
    the order ``rg --sort=path`` prints, so both grep backends agree.
    Symlinked folders are not entered; symlinked files are listed and the
    caller decides whether to open them. ``kept_out`` is a folder never entered.
    """
    if not base.is_dir():
        yield base
        return
    yield from _walk(base, rules, should_stop, kept_out)


def _walk(folder: Path, rules: IgnoreRules, should_stop: Callable[[], bool],
          kept_out: Path | None) -> Iterator[Path]:
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return  # unreadable folder: skip it as git would
    for entry in entries:
        if should_stop():
            return
        path = folder / entry.name
        if entry.is_dir(follow_symlinks=False):
            if path == kept_out:
                continue
            if entry.name not in ALWAYS_SKIPPED_DIRS and not rules.ignored(path, is_dir=True):
                yield from _walk(path, rules, should_stop, kept_out)
        elif entry.is_symlink() and entry.is_dir():
            continue
        elif not rules.ignored(path, is_dir=False):
            yield path
